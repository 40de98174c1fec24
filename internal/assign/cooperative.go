package assign

// CooperativeSticky is the "cooperative-sticky" assignor: Sticky's target,
// reached by KIP-429's incremental cooperative protocol, so that no partition
// is ever owned by two members at once and members keep consuming what they
// keep while the group rebalances.
//
// Assign is one round of that protocol. It computes Sticky's assignment, then
// withholds every partition that would change hands — any partition that a
// present member other than its target owner lists in Owned. A withheld
// partition is assigned to nobody in this round: it is missing from the old
// owner's list (so the old owner revokes it) and it is NOT given to the new
// owner yet. Partitions that no present member claims (new partitions, or
// those of members that left) go straight to their target owner.
//
// A member that lost partitions rejoins (a Kafka client does so as soon as it
// sees its assignment shrink), and the follow-up round, whose Owned lists are
// this round's result, assigns the withheld partitions. That round withholds
// nothing: it is complete, and feeding it back again changes nothing.
//
// Which assignment the follow-up round reaches: whenever Sticky's canonical
// placement stands (always with identical subscriptions and unconflicting
// Owned lists; see Sticky, step 4) it is exactly Sticky's assignment for this
// round's input. Otherwise Assign simulates the follow-up round, and if that
// round would take a partition from a member this round leaves it with, this
// round withholds that partition too (repeating until the follow-up takes
// nothing), so that two rounds always suffice; the result is then complete
// and locally balanced, but may place some partitions differently from
// Sticky. Deferring one more rebalance instead was rejected: each extra round
// stops the whole group's affected members again.
//
// Measure a cooperative rebalance with Moves from the assignment before the
// revoke round to the one after the follow-up round.
type CooperativeSticky struct{}

// Name returns "cooperative-sticky".
func (CooperativeSticky) Name() string { return "cooperative-sticky" }

// Assign implements Assignor: one round, withholding partitions that change
// hands.
func (CooperativeSticky) Assign(members []Member, partitions map[string]int32) Assignment {
	pr := newProblem(members, partitions)
	s := newSticky(pr)
	s.resolvePrevious()
	owner := s.plan()
	for d, o := range owner {
		if s.contested(int32(d), o) {
			owner[d] = -1
		}
	}
	if s.canonical {
		return pr.result(owner)
	}
	// Each pass withholds at least one more partition, so this ends; with
	// nothing left assigned the follow-up round trivially takes nothing.
	for {
		next := newSticky(pr)
		next.assume(owner)
		target := next.plan()
		shrunk := false
		for d, o := range owner {
			if o >= 0 && target[d] != o {
				owner[d] = -1
				shrunk = true
			}
		}
		if !shrunk {
			return pr.result(owner)
		}
	}
}
