package assign

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// fataler is what the checks need from *testing.T and *rapid.T alike.
type fataler interface {
	Fatalf(format string, args ...any)
}

var (
	topicPool  = []string{"a", "b", "c", "d", "gone"} // "gone" never has partitions
	memberPool = []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"}
	ghosts     = []string{"left0", "left1"} // members of before that are gone
)

type ownedMode int

const (
	ownedNone      ownedMode = iota
	ownedPrevious            // a valid previous assignment, some of it by ghosts
	ownedArbitrary           // anything: conflicts, stale generations, junk
)

// scenario is one input to an assignor, plus the previous assignment it was
// derived from when Owned is valid.
type scenario struct {
	members []Member
	parts   map[string]int32
	before  Assignment // ownedPrevious only: includes ghosts
}

func drawParts(t *rapid.T) map[string]int32 {
	parts := map[string]int32{}
	for _, name := range topicPool[:4] {
		if n := rapid.Int32Range(-1, 12).Draw(t, "partitions "+name); n >= 0 {
			parts[name] = n
		}
	}
	return parts
}

func drawTopics(t *rapid.T, label string) []string {
	return rapid.SliceOfDistinct(rapid.SampledFrom(topicPool), rapid.ID).Draw(t, label)
}

func drawScenario(t *rapid.T, identical bool, mode ownedMode) scenario {
	sc := scenario{parts: drawParts(t)}
	n := rapid.IntRange(1, 7).Draw(t, "members")
	ids := rapid.Permutation(memberPool).Draw(t, "ids")[:n]
	shared := drawTopics(t, "shared topics")
	for i, id := range ids {
		m := Member{ID: id, Topics: shared}
		if !identical {
			m.Topics = drawTopics(t, "topics "+id)
		}
		if rapid.IntRange(0, 3).Draw(t, "static "+id) == 0 {
			m.InstanceID = fmt.Sprintf("static-%d", n-i)
		}
		sc.members = append(sc.members, m)
	}
	switch mode {
	case ownedPrevious:
		sc.before = drawBefore(t, sc.parts, ids)
		for i := range sc.members {
			sc.members[i].Owned = sc.before[sc.members[i].ID]
			sc.members[i].Generation = 7
		}
	case ownedArbitrary:
		for i := range sc.members {
			sc.members[i].Owned = rapid.SliceOf(rapid.Custom(func(t *rapid.T) Partition {
				return Partition{rapid.SampledFrom(topicPool).Draw(t, "topic"), rapid.Int32Range(-1, 10).Draw(t, "partition")}
			})).Draw(t, "owned")
			sc.members[i].Generation = rapid.Int32Range(0, 2).Draw(t, "generation")
		}
	}
	return sc
}

// drawBefore gives every existing partition an owner among a few of ids and
// ghosts, or none: drawing from a few holders makes the lopsided previous
// assignments (everything on two members, a third joining) that test
// stickiness hardest.
func drawBefore(t *rapid.T, parts map[string]int32, ids []string) Assignment {
	pool := append(append(slices.Clone(ids), ghosts...), "") // "": no owner
	holders := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 1, 4, rapid.ID).Draw(t, "holders")
	before := Assignment{}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		for i := range parts[name] {
			if h := rapid.SampledFrom(holders).Draw(t, "owner"); h != "" {
				before[h] = append(before[h], Partition{name, i})
			}
		}
	}
	return before
}

// expected returns every partition an assignor must assign, with the members
// allowed to take it.
func expected(members []Member, parts map[string]int32) map[Partition][]string {
	want := map[Partition][]string{}
	for _, m := range members {
		for _, topic := range slices.Compact(slices.Sorted(slices.Values(m.Topics))) {
			for i := range max(parts[topic], 0) {
				want[Partition{topic, i}] = append(want[Partition{topic, i}], m.ID)
			}
		}
	}
	return want
}

// checkValid checks what every assignor promises: every member listed, lists
// sorted, each partition at most once and only to a subscriber; and, if
// complete, every subscribed partition assigned.
func checkValid(t fataler, members []Member, parts map[string]int32, a Assignment, complete bool) {
	if len(a) != len(members) {
		t.Fatalf("%d members, assignment has %d: %v", len(members), len(a), a)
	}
	want := expected(members, parts)
	seen := map[Partition]string{}
	for _, m := range members {
		list, ok := a[m.ID]
		if !ok || list == nil {
			t.Fatalf("member %s missing (or nil) in %v", m.ID, a)
		}
		if !slices.IsSortedFunc(list, comparePartitions) {
			t.Fatalf("%s's list is not sorted: %v", m.ID, list)
		}
		for _, q := range list {
			if other, dup := seen[q]; dup {
				t.Fatalf("%v assigned to %s and %s", q, other, m.ID)
			}
			seen[q] = m.ID
			if !slices.Contains(want[q], m.ID) {
				t.Fatalf("%v assigned to %s, which may not take it (subscribers %v)", q, m.ID, want[q])
			}
		}
	}
	if complete && len(seen) != len(want) {
		t.Fatalf("%d partitions assigned, want %d: %v", len(seen), len(want), a)
	}
}

func counts(a Assignment) []int {
	var c []int
	for _, list := range a {
		c = append(c, len(list))
	}
	return c
}

func checkWithinOne(t fataler, what string, c []int) {
	if len(c) > 0 && slices.Max(c)-slices.Min(c) > 1 {
		t.Fatalf("%s not balanced within one: counts %v", what, c)
	}
}

// checkLocallyBalanced checks sticky's promise for any subscriptions: no
// partition could go to a subscriber holding at least two fewer than its
// owner.
func checkLocallyBalanced(t fataler, members []Member, parts map[string]int32, a Assignment) {
	want := expected(members, parts)
	for owner, list := range a {
		for _, q := range list {
			for _, other := range want[q] {
				if len(a[other]) <= len(a[owner])-2 {
					t.Fatalf("%v could move from %s (%d) to %s (%d): %v", q, owner, len(a[owner]), other, len(a[other]), a)
				}
			}
		}
	}
}

// shuffled returns members in another order, with their Topics and Owned
// shuffled and partly duplicated: none of which may change a result.
func shuffled(t *rapid.T, members []Member) []Member {
	out := rapid.Permutation(members).Draw(t, "member order")
	for i := range out {
		m := &out[i]
		m.Topics = rapid.Permutation(m.Topics).Draw(t, "topic order")
		if len(m.Topics) > 0 {
			m.Topics = append(m.Topics, m.Topics[0])
		}
		m.Owned = rapid.Permutation(m.Owned).Draw(t, "owned order")
		if len(m.Owned) > 0 {
			m.Owned = append(m.Owned, m.Owned[len(m.Owned)-1])
		}
	}
	return out
}

// TestPropertiesAllAssignors checks the invariants every assignor shares, on
// any input: valid, complete (but cooperative), deterministic.
func TestPropertiesAllAssignors(t *testing.T) {
	t.Parallel()
	for _, a := range allAssignors {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			rapid.Check(t, func(t *rapid.T) {
				identical := rapid.Bool().Draw(t, "identical")
				mode := ownedMode(rapid.IntRange(0, 2).Draw(t, "mode"))
				sc := drawScenario(t, identical, mode)
				got := a.Assign(sc.members, sc.parts)
				checkValid(t, sc.members, sc.parts, got, a.Name() != "cooperative-sticky")
				if again := a.Assign(shuffled(t, sc.members), sc.parts); !reflect.DeepEqual(got, again) {
					t.Fatalf("not deterministic:\n%v\n%v", got, again)
				}
				if identical {
					checkBalancedIdentical(t, a, sc, got)
				}
			})
		})
	}
}

func checkBalancedIdentical(t *rapid.T, a Assignor, sc scenario, got Assignment) {
	switch a.(type) {
	case RoundRobin, Sticky:
		checkWithinOne(t, a.Name(), counts(got))
	case Range:
		// Within one per topic only: that is Kafka's range.
		perTopicWithinOne(t, subscribersOf(sc.members), sc.parts, got)
	}
}

// lowerBound is the fewest moves any balanced-within-one assignment of the
// partitions in assigned to the members ids can make from before, when every
// member may take every partition: the partitions of members that left, plus
// what each remaining member holds beyond its share when the larger shares go
// to those holding the most.
func lowerBound(before Assignment, ids []string, assigned map[Partition]string) int {
	if len(ids) == 0 {
		return 0
	}
	owners := Owners(before)
	present := map[string]int{}
	for _, id := range ids {
		present[id] = 0
	}
	forced := 0
	for q := range assigned {
		if was, ok := owners[q]; ok {
			if _, here := present[was]; here {
				present[was]++
			} else {
				forced++
			}
		}
	}
	held := slices.Sorted(maps.Values(present))
	slices.Reverse(held)
	floor, extra := len(assigned)/len(held), len(assigned)%len(held)
	excess := 0
	for i, c := range held {
		share := floor
		if i < extra {
			share++
		}
		excess += max(0, c-share)
	}
	return forced + excess
}

func memberIDs(members []Member) []string {
	var ids []string
	for _, m := range members {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestPropertiesStickyKeepsWhatItCan checks that sticky, with identical
// subscriptions, moves exactly the lower bound of partitions, never more than
// a balanced range, and that a member whose count is unchanged keeps its
// partitions.
func TestPropertiesStickyKeepsWhatItCan(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		sc := drawScenario(t, true, ownedPrevious)
		got := Sticky{}.Assign(sc.members, sc.parts)
		moves := Moves(sc.before, got)
		if lb := lowerBound(sc.before, memberIDs(sc.members), Owners(got)); moves != lb {
			t.Fatalf("sticky moved %d, lower bound %d\nbefore %v\nafter  %v", moves, lb, sc.before, got)
		}
		ranged := Range{}.Assign(sc.members, sc.parts)
		if c := counts(ranged); slices.Max(c)-slices.Min(c) <= 1 && moves > Moves(sc.before, ranged) {
			t.Fatalf("sticky moved %d, balanced range only %d", moves, Moves(sc.before, ranged))
		}
		for _, m := range sc.members {
			kept := 0
			for _, q := range m.Owned {
				if _, ok := expected(sc.members, sc.parts)[q]; ok {
					kept++
				}
			}
			if kept == len(got[m.ID]) && !subset(got[m.ID], m.Owned) {
				t.Fatalf("%s kept its count %d but not its partitions: %v → %v", m.ID, kept, m.Owned, got[m.ID])
			}
		}
	})
}

// TestPropertiesStickyAnySubscriptions checks sticky's promises for any
// subscriptions and any Owned: locally balanced, and stable (re-running on
// its own result changes nothing).
func TestPropertiesStickyAnySubscriptions(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		mode := ownedMode(rapid.IntRange(0, 2).Draw(t, "mode"))
		sc := drawScenario(t, false, mode)
		got := Sticky{}.Assign(sc.members, sc.parts)
		checkLocallyBalanced(t, sc.members, sc.parts, got)
		again := Sticky{}.Assign(withOwned(sc.members, got, 8), sc.parts)
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("not stable:\n%v\n%v", got, again)
		}
	})
}

// withOwned returns members reporting a as their Owned, at generation gen.
func withOwned(members []Member, a Assignment, gen int32) []Member {
	out := slices.Clone(members)
	for i := range out {
		out[i].Owned = a[out[i].ID]
		out[i].Generation = gen
	}
	return out
}

// TestPropertiesCooperative checks the two rounds of cooperative-sticky: the
// revoke round gives a partition only to a member no other present member
// still claims it from, and takes nothing from its target; the follow-up round
// only adds, completes the assignment, and (without conflicting claims and
// with identical subscriptions) equals Sticky's target exactly.
func TestPropertiesCooperative(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		identical := rapid.Bool().Draw(t, "identical")
		mode := ownedMode(rapid.IntRange(0, 2).Draw(t, "mode"))
		sc := drawScenario(t, identical, mode)
		target := Sticky{}.Assign(sc.members, sc.parts)
		first := CooperativeSticky{}.Assign(sc.members, sc.parts)

		targetOwners := Owners(target)
		for id, list := range first {
			for _, q := range list {
				if targetOwners[q] != id {
					t.Fatalf("revoke round gives %v to %s, target %s", q, id, targetOwners[q])
				}
				for _, m := range sc.members {
					if m.ID != id && slices.Contains(m.Owned, q) {
						t.Fatalf("revoke round gives %v to %s while %s still owns it", q, id, m.ID)
					}
				}
			}
		}

		second := CooperativeSticky{}.Assign(withOwned(sc.members, first, 9), sc.parts)
		checkValid(t, sc.members, sc.parts, second, true)
		checkLocallyBalanced(t, sc.members, sc.parts, second)
		for id, list := range first {
			if !subset(list, second[id]) {
				t.Fatalf("follow-up round took from %s: %v → %v", id, list, second[id])
			}
		}
		if third := (CooperativeSticky{}).Assign(withOwned(sc.members, second, 10), sc.parts); !reflect.DeepEqual(second, third) {
			t.Fatalf("follow-up round is not final:\n%v\n%v", second, third)
		}
		if identical && mode != ownedArbitrary && !reflect.DeepEqual(second, target) {
			t.Fatalf("two rounds reached\n%v\nnot sticky's target\n%v", second, target)
		}
	})
}
