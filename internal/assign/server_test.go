package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

var serverAssignors = []ServerAssignor{Uniform{}, ServerRange{}}

func toMetadata(parts map[string]int32) map[string]TopicMetadata {
	md := map[string]TopicMetadata{}
	for name, n := range parts {
		md[name] = TopicMetadata{Partitions: n}
	}
	return md
}

func subscribersOf(members []Member) []Subscriber {
	subs := make([]Subscriber, len(members))
	for i, m := range members {
		subs[i] = Subscriber{ID: m.ID, InstanceID: m.InstanceID, Topics: m.Topics, Current: m.Owned}
	}
	return subs
}

// withCurrent returns subs with each Current replaced by its list in a.
func withCurrent(subs []Subscriber, a Assignment) []Subscriber {
	out := slices.Clone(subs)
	for i := range out {
		out[i].Current = a[out[i].ID]
	}
	return out
}

func asMemberList(subs []Subscriber) []Member { return asMembers(subs) }

func shuffledSubs(t *rapid.T, subs []Subscriber) []Subscriber {
	out := rapid.Permutation(subs).Draw(t, "member order")
	for i := range out {
		out[i].Topics = rapid.Permutation(out[i].Topics).Draw(t, "topic order")
		out[i].Current = rapid.Permutation(out[i].Current).Draw(t, "current order")
	}
	return out
}

// drawServerScenario draws subscribers whose Current is a previous target:
// a valid assignment (some of it held by members that have left).
func drawServerScenario(t *rapid.T, identical bool) ([]Subscriber, map[string]int32) {
	sc := drawScenario(t, identical, ownedPrevious)
	return subscribersOf(sc.members), sc.parts
}

// perTopicWithinOne checks range's balance: within one per topic among the
// topic's subscribers.
func perTopicWithinOne(t fataler, subs []Subscriber, parts map[string]int32, got Assignment) {
	for topic := range parts {
		per := map[string]int{}
		for _, s := range subs {
			if slices.Contains(s.Topics, topic) {
				per[s.ID] = 0
			}
		}
		for id, list := range got {
			for _, q := range list {
				if q.Topic == topic {
					per[id]++
				}
			}
		}
		checkWithinOne(t, "range topic "+topic, slices.Collect(maps.Values(per)))
	}
}

// TestPropertiesServerAssignors checks validity, completeness, determinism,
// balance and that an unchanged group keeps its target, for both server-side
// assignors, on any subscriptions and previous targets.
func TestPropertiesServerAssignors(t *testing.T) {
	t.Parallel()
	for _, a := range serverAssignors {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(t *rapid.T) {
				identical := rapid.Bool().Draw(t, "identical")
				subs, parts := drawServerScenario(t, identical)
				md := toMetadata(parts)
				got := a.Target(subs, md)
				checkValid(t, asMemberList(subs), parts, got, true)
				if again := a.Target(shuffledSubs(t, subs), md); !reflect.DeepEqual(got, again) {
					t.Fatalf("not deterministic:\n%v\n%v", got, again)
				}
				switch {
				case a.Name() == "range":
					if identical {
						perTopicWithinOne(t, subs, parts, got)
					}
				case identical:
					checkWithinOne(t, a.Name(), counts(got))
				default:
					checkLocallyBalanced(t, asMemberList(subs), parts, got)
					checkSameSubscriptionsWithinOne(t, subs, parts, got)
				}
				// Stickiness: running again on its own output changes nothing.
				if again := a.Target(withCurrent(subs, got), md); !reflect.DeepEqual(got, again) {
					t.Fatalf("unchanged group moved:\n%v\n%v", got, again)
				}
			})
		})
	}
}

// checkSameSubscriptionsWithinOne: in any group, members subscribed to the
// same (existing) topics hold counts within one of each other.
func checkSameSubscriptionsWithinOne(t fataler, subs []Subscriber, parts map[string]int32, got Assignment) {
	bySubs := map[string][]int{}
	for _, s := range subs {
		var key []string
		for _, topic := range s.Topics {
			if parts[topic] > 0 {
				key = append(key, topic)
			}
		}
		slices.Sort(key)
		k := fmt.Sprint(slices.Compact(key))
		bySubs[k] = append(bySubs[k], len(got[s.ID]))
	}
	for k, c := range bySubs {
		checkWithinOne(t, "uniform, members subscribed to "+k, c)
	}
}

// drawIdentical draws partition counts and at least least members, all
// subscribed to the same topics.
func drawIdentical(t *rapid.T, least int) (map[string]int32, []string, []Subscriber) {
	parts := drawParts(t)
	n := rapid.IntRange(least, 8).Draw(t, "members")
	topics := drawTopics(t, "topics")
	var subs []Subscriber
	for _, id := range memberPool[:n] {
		subs = append(subs, Subscriber{ID: id, Topics: topics})
	}
	return parts, topics, subs
}

// TestPropertiesServerLeave: a member leaves a settled group with identical
// subscriptions; uniform moves only what balance forces (its partitions, and
// nothing else).
func TestPropertiesServerLeave(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		parts, _, subs := drawIdentical(t, 2)
		n := len(subs)
		md := toMetadata(parts)
		settled := Uniform{}.Target(subs, md)
		gone := rapid.IntRange(0, n-1).Draw(t, "leaver")
		rest := slices.Delete(withCurrent(subs, settled), gone, gone+1)
		after := Uniform{}.Target(rest, md)
		if moved, bound := Moves(settled, after), lowerBound(settled, memberIDs(asMemberList(rest)), Owners(after)); moved != bound {
			t.Fatalf("uniform moved %d on a leave, minimum %d", moved, bound)
		}
	})
}

// TestPropertiesServerJoin: a member joins a settled group with identical
// subscriptions. Uniform moves exactly the fewest partitions any balanced
// assignment can (lowerBound); range moves no more than what exceeds the
// members' new per-topic quotas.
func TestPropertiesServerJoin(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		parts, topics, subs := drawIdentical(t, 1)
		joiner := Subscriber{ID: "zz-new", Topics: topics}
		if rapid.Bool().Draw(t, "joiner first") {
			joiner.ID = "a-new"
		}
		for _, a := range serverAssignors {
			md := toMetadata(parts)
			settled := a.Target(subs, md)
			after := a.Target(append(withCurrent(subs, settled), joiner), md)
			moved := Moves(settled, after)
			ids := append(memberIDs(asMemberList(subs)), joiner.ID)
			switch a.Name() {
			case "uniform":
				if bound := lowerBound(settled, ids, Owners(after)); moved != bound {
					t.Fatalf("uniform moved %d on a join, minimum %d", moved, bound)
				}
			case "range":
				if bound := rangeExcess(subs, parts, settled, len(subs)+1); moved > bound {
					t.Fatalf("range moved %d on a join, more than the excess %d", moved, bound)
				}
			}
		}
	})
}

// rangeExcess is Σ over topics and members of what a member holds beyond the
// per-topic quota ⌊n/m⌋ it has among m subscribers: at most what sticky
// range moves when every member subscribes to every topic (fewer when some
// keep an extra slot).
func rangeExcess(subs []Subscriber, parts map[string]int32, held Assignment, m int) int {
	excess := 0
	for _, s := range subs {
		per := map[string]int32{}
		for _, q := range held[s.ID] {
			per[q.Topic]++
		}
		for topic, c := range per {
			quota := parts[topic] / int32(m)
			excess += int(max(0, c-quota))
		}
	}
	return excess
}

// TestServerRangeCoPartitions: topics with equal partition counts and the
// same subscribers put partition p of each on the same member, also after a
// join.
func TestServerRangeCoPartitions(t *testing.T) {
	t.Parallel()
	md := map[string]TopicMetadata{"a": {Partitions: 7}, "b": {Partitions: 7}}
	subs := []Subscriber{{ID: "m1", Topics: []string{"a", "b"}}, {ID: "m2", Topics: []string{"b", "a"}}, {ID: "m0", InstanceID: "z", Topics: []string{"a", "b"}}}
	check := func(got Assignment) {
		for _, list := range got {
			var a, b []int32
			for _, q := range list {
				if q.Topic == "a" {
					a = append(a, q.Partition)
				} else {
					b = append(b, q.Partition)
				}
			}
			if !slices.Equal(a, b) {
				t.Fatalf("not co-partitioned: %v", got)
			}
		}
	}
	first := ServerRange{}.Target(subs, md)
	check(first)
	if got := first["m0"]; len(got) != 6 || got[0].Partition != 0 {
		t.Fatalf("static member m0 should come first with 0..2 of each topic: %v", first)
	}
	fresh := Range{}.Assign(asMemberList(subs), partitionCounts(md))
	if !reflect.DeepEqual(first, fresh) {
		t.Fatalf("a fresh group should match classic range:\n%v\n%v", first, fresh)
	}
	check(ServerRange{}.Target(append(withCurrent(subs, first), Subscriber{ID: "m3", Topics: []string{"a", "b"}}), md))
}

// TestServerJoinFigures prints the partitions moved when an 11th member joins
// 10 members on 120 partitions (one topic, and 4 topics × 30) under uniform,
// server range and classic range, and pins the uniform figure to the ideal.
func TestServerJoinFigures(t *testing.T) {
	t.Parallel()
	for _, parts := range []map[string]int32{{"t": 120}, {"a": 30, "b": 30, "c": 30, "d": 30}} {
		topics := slices.Sorted(maps.Keys(parts))
		var subs []Subscriber
		for i := range 10 {
			subs = append(subs, Subscriber{ID: fmt.Sprintf("m%02d", i), Topics: topics})
		}
		joiner := Subscriber{ID: "m10", Topics: topics}
		md := toMetadata(parts)
		line := fmt.Sprintf("%d topics, 10→11 members:", len(parts))
		for _, a := range serverAssignors {
			settled := a.Target(subs, md)
			moved := Moves(settled, a.Target(append(withCurrent(subs, settled), joiner), md))
			line += fmt.Sprintf(" %s %d", a.Name(), moved)
			if a.Name() == "uniform" && moved != 10 {
				t.Fatalf("uniform moved %d, ideal 10", moved)
			}
		}
		before := Range{}.Assign(asMemberList(subs), parts)
		after := Range{}.Assign(asMemberList(append(subs, joiner)), parts)
		line += fmt.Sprintf(", classic range %d", Moves(before, after))
		t.Log(line)
	}
}

func TestServerByName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"uniform", "range"} {
		if a, ok := ServerByName(name); !ok || a.Name() != name {
			t.Fatalf("ServerByName(%q) = %v, %v", name, a, ok)
		}
	}
	if _, ok := ServerByName("sticky"); ok {
		t.Fatal("sticky is not a server-side assignor")
	}
}
