package assign

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// churnResult is what one assignor cost over a membership churn.
type churnResult struct {
	moves    int // Σ Moves(stable before, stable after) over every change
	bound    int // Σ per change of the fewest moves balance within one needs
	withheld int // partitions revoked and withheld (cooperative only)
	rounds   int // rebalance rounds run
}

// churn replays a membership churn: the members of join arrive one at a
// time, then leave one at a time in the order of leave. After each change the
// group rebalances, every member reporting its previous assignment as Owned;
// a cooperative round that withholds partitions is followed by a follow-up
// round, and the change is measured from the stable assignment before it to
// the stable one after.
func churn(t *testing.T, a Assignor, parts map[string]int32, join, leave []string) churnResult {
	t.Helper()
	topics := slices.Sorted(maps.Keys(parts))
	var res churnResult
	current := Assignment{}
	var ids []string
	gen := int32(0)
	rebalance := func() {
		start := current
		for round := 1; ; round++ {
			members := make([]Member, 0, len(ids))
			for _, id := range ids {
				members = append(members, Member{ID: id, Topics: topics, Owned: current[id], Generation: gen})
			}
			gen++
			res.rounds++
			next := a.Assign(members, parts)
			checkValid(t, members, parts, next, false)
			missing := len(expected(members, parts)) - len(Owners(next))
			current = next
			if missing == 0 {
				break
			}
			res.withheld += missing
			if round == 2 {
				t.Fatalf("%s: %d partitions still withheld after the follow-up round", a.Name(), missing)
			}
		}
		if a.Name() != "range" {
			checkWithinOne(t, a.Name(), counts(current))
		}
		res.moves += Moves(start, current)
		res.bound += lowerBound(start, ids, Owners(current))
	}
	for _, id := range join {
		ids = append(ids, id)
		rebalance()
	}
	for _, id := range leave {
		ids = slices.DeleteFunc(ids, func(x string) bool { return x == id })
		rebalance()
	}
	return res
}

// TestChurnStickyMovesFewerThanRange replays six members joining and then
// leaving in another order over 24 partitions, and checks that sticky moves
// strictly fewer partitions in total than range. Member ids are not in join
// order, as Kafka's generated ids are not, so range cannot get lucky by
// appending each newcomer at the end.
func TestChurnStickyMovesFewerThanRange(t *testing.T) {
	t.Parallel()
	join := []string{"c-7f3a", "c-12bd", "c-e901", "c-4c6e", "c-a0d2", "c-0b55"}
	leave := []string{"c-e901", "c-0b55", "c-7f3a", "c-a0d2", "c-12bd", "c-4c6e"}
	for _, tc := range []struct {
		name  string
		parts map[string]int32
	}{
		{"one topic of 24", map[string]int32{"orders": 24}},
		{"three topics of 8", map[string]int32{"orders": 8, "payments": 8, "refunds": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]churnResult{}
			for _, a := range allAssignors {
				got[a.Name()] = churn(t, a, tc.parts, join, leave)
			}
			r, rr, s, cs := got["range"], got["roundrobin"], got["sticky"], got["cooperative-sticky"]
			summary := fmt.Sprintf("churn over %s (12 rebalances): moves range=%d roundrobin=%d sticky=%d cooperative-sticky=%d (in %d rounds, %d partitions revoked and withheld)",
				tc.name, r.moves, rr.moves, s.moves, cs.moves, cs.rounds, cs.withheld)
			t.Log(summary)
			if testing.Verbose() {
				fmt.Println(summary)
			}
			if s.moves >= r.moves {
				t.Errorf("sticky moved %d, range %d: want strictly fewer", s.moves, r.moves)
			}
			if cs.moves != s.moves {
				t.Errorf("cooperative-sticky moved %d, sticky %d: two rounds should reach sticky's target", cs.moves, s.moves)
			}
			// Identical subscriptions: every partition sticky moved had to
			// move, given where the previous rebalance left them.
			if s.moves != s.bound {
				t.Errorf("sticky moved %d, lower bound %d", s.moves, s.bound)
			}
		})
	}
}
