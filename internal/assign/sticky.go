package assign

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Sticky is the "sticky" assignor: balanced, and keeping as many of the
// partitions members owned before as balance allows (Member.Owned is the
// previous assignment). It is an eager assignor: a partition may change owner
// within one rebalance, which is safe only because eager members revoke
// everything before they rejoin.
//
// It works in four steps.
//
//  1. Previous owners. A claim in Owned counts if the partition exists and the
//     claimant still subscribes to its topic. A partition claimed by several
//     members belongs to the one with the highest Generation; if two tie at the
//     highest, neither keeps it.
//  2. Keep and deal. Every member keeps what it owned. The other partitions
//     are dealt one by one, those of topics with the fewest subscribers first,
//     each to the subscribed member holding the fewest (ties: canonical
//     order).
//  3. Balance. While some member holds a partition that a member subscribed to
//     its topic, holding at least two fewer, could take, the member holding the
//     most gives one to the subscribed member holding the fewest — preferring a
//     partition it was only dealt in step 2, which costs no move. Taking from
//     the fullest and giving to the emptiest is what makes the number of moves
//     minimal with identical subscriptions; each move lowers the sum of squared
//     counts, so the loop ends.
//  4. Canonical placement. The partitions changing hands — those that a
//     present member other than their new owner lists in Owned — are taken
//     back and dealt again by step 2's rule. That is exactly what
//     CooperativeSticky's follow-up round does with them (they arrive there
//     unowned, on the same counts), so placing them this way makes the
//     two-round cooperative result equal to this one. If dealing them again
//     would break local balance or hand one back to its only claimant, step
//     3's placement stands; with identical subscriptions and unconflicting
//     Owned lists that never happens.
type Sticky struct{}

// Name returns "sticky".
func (Sticky) Name() string { return "sticky" }

// Assign implements Assignor.
func (Sticky) Assign(members []Member, partitions map[string]int32) Assignment {
	pr := newProblem(members, partitions)
	s := newSticky(pr)
	s.resolvePrevious()
	return pr.result(s.plan())
}

// sticky is the working state of one Sticky run. Members and partitions are
// the dense indexes of problem.
type sticky struct {
	pr *problem

	prev  []int32 // partition → previous owner after step 1, or -1
	claim []int32 // partition → a present member listing it in Owned, or -1
	multi []bool  // partition → listed by two or more present members
	owner []int32 // partition → current owner, or -1
	count []int32 // member → partitions held

	// canonical is set when step 4's placement stood (or had nothing to
	// place): the follow-up cooperative round then reproduces owner exactly.
	canonical bool

	// Topics subscribed by exactly the same members form a class; a member
	// can give any partition of a class to any other member of it.
	class         []int32     // topic → class
	classMembers  [][]int32   // class → members, ascending
	memberClasses [][]int32   // member → classes, ascending
	hold          [][]holding // member → one holding per memberClasses entry
}

// holding is what one member holds of one class.
type holding struct {
	kept  []int32 // partitions it owned before
	fresh []int32 // partitions dealt or given to it in this run
}

func newSticky(pr *problem) *sticky {
	n, m := pr.total(), len(pr.members)
	s := &sticky{
		pr:            pr,
		prev:          make([]int32, n),
		claim:         make([]int32, n),
		multi:         make([]bool, n),
		count:         make([]int32, m),
		memberClasses: make([][]int32, m),
	}
	for d := range n {
		s.prev[d], s.claim[d] = -1, -1
	}
	return s
}

// plan runs steps 2 to 4, after prev and claim are set (step 1, or assume),
// and returns the owner of every partition.
func (s *sticky) plan() []int32 {
	s.owner = slices.Clone(s.prev)
	var free []int32
	for d, o := range s.owner {
		if o >= 0 {
			s.count[o]++
		} else {
			free = append(free, int32(d))
		}
	}
	s.deal(s.owner, s.count, free)
	s.balance()
	s.canonicalize()
	return s.owner
}

// resolvePrevious is step 1. It also records who claims what, whatever their
// subscription, for contested. The result does not depend on the order of
// members or of their Owned lists: a partition ends with the claimant of the
// highest generation, or with nobody when two distinct claimants share the
// highest generation.
func (s *sticky) resolvePrevious() {
	const (
		unclaimed = iota
		claimed
		tied
	)
	pr := s.pr
	state := make([]uint8, pr.total())
	gen := make([]int32, pr.total())
	for i, m := range pr.members {
		me := int32(i)
		for _, p := range m.Owned {
			d, ok := pr.dense(p)
			if !ok {
				continue
			}
			if s.claim[d] < 0 {
				s.claim[d] = me
			} else if s.claim[d] != me {
				s.multi[d] = true
			}
			if !pr.subscribed(me, pr.topicOf[d]) {
				continue
			}
			switch {
			case state[d] == unclaimed || m.Generation > gen[d]:
				state[d], gen[d], s.prev[d] = claimed, m.Generation, me
			case m.Generation == gen[d] && s.prev[d] != me:
				state[d] = tied
			}
		}
	}
	for d, st := range state {
		if st != claimed {
			s.prev[d] = -1
		}
	}
}

// assume sets prev and claim as if every member had reported exactly what
// owner gives it, at one generation: the input of a follow-up round.
func (s *sticky) assume(owner []int32) {
	copy(s.prev, owner)
	copy(s.claim, owner)
}

// contested reports whether a present member other than owner claims d: such
// a partition is changing hands.
func (s *sticky) contested(d, owner int32) bool {
	return s.claim[d] >= 0 && (s.multi[d] || s.claim[d] != owner)
}

// deal assigns the free partitions (step 2's rule): topics with the fewest
// subscribers first, then in partition order, each partition to the
// subscribed member with the lowest count, ties to the first member. It
// updates owner and count, which need not be s.owner and s.count.
func (s *sticky) deal(owner, count []int32, free []int32) {
	pr := s.pr
	slices.SortFunc(free, func(a, b int32) int {
		la, lb := len(pr.eligible[pr.topicOf[a]]), len(pr.eligible[pr.topicOf[b]])
		if c := cmp.Compare(la, lb); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	h := newMemberHeap(len(pr.members), func(a, b int32) bool {
		if count[a] != count[b] {
			return count[a] < count[b]
		}
		return a < b
	})
	// A topic's partitions are contiguous in free, so build one heap per topic.
	for i := 0; i < len(free); {
		t := pr.topicOf[free[i]]
		h.clear()
		for _, m := range pr.eligible[t] {
			h.push(m)
		}
		for ; i < len(free) && pr.topicOf[free[i]] == t; i++ {
			m := h.top()
			owner[free[i]] = m
			count[m]++
			h.fix(m)
		}
	}
}

// balance is step 3.
func (s *sticky) balance() {
	s.buildClasses()
	s.buildHoldings()
	count := s.count
	h := newMemberHeap(len(s.pr.members), func(a, b int32) bool {
		if count[a] != count[b] {
			return count[a] > count[b]
		}
		return a < b
	})
	// A member that cannot give may become able to once a member it could
	// give to has given in turn; so repeat until a pass moves nothing. With
	// identical subscriptions the first pass does all the work.
	for {
		moved := false
		for m, n := range count {
			if n > 0 {
				h.push(int32(m))
			}
		}
		for h.len() > 0 {
			from := h.top()
			to, ok := s.giveOne(from)
			if !ok {
				h.pop()
				continue
			}
			moved = true
			h.fix(from)
			if h.has(to) {
				h.fix(to)
			} else {
				h.push(to)
			}
		}
		if !moved {
			return
		}
	}
}

// giveOne moves one partition from member from to a member subscribed to its
// topic holding at least two fewer, if there is one. Among its classes it
// prefers one where it holds a fresh partition (a free move), then the one
// whose emptiest member holds the fewest.
func (s *sticky) giveOne(from int32) (int32, bool) {
	best, to := -1, int32(-1)
	bestFresh := false
	for k, c := range s.memberClasses[from] {
		hd := &s.hold[from][k]
		if len(hd.kept)+len(hd.fresh) == 0 {
			continue
		}
		least := s.fewest(c)
		if s.count[from]-s.count[least] < 2 {
			continue
		}
		fresh := len(hd.fresh) > 0
		if best < 0 || (fresh && !bestFresh) || (fresh == bestFresh && s.count[least] < s.count[to]) {
			best, to, bestFresh = k, least, fresh
		}
	}
	if best < 0 {
		return -1, false
	}
	hd := &s.hold[from][best]
	var d int32
	if n := len(hd.fresh); n > 0 {
		d, hd.fresh = hd.fresh[n-1], hd.fresh[:n-1]
	} else {
		n := len(hd.kept)
		d, hd.kept = hd.kept[n-1], hd.kept[:n-1]
	}
	k, _ := slices.BinarySearch(s.memberClasses[to], s.memberClasses[from][best])
	s.hold[to][k].fresh = append(s.hold[to][k].fresh, d)
	s.owner[d] = to
	s.count[from]--
	s.count[to]++
	return to, true
}

// fewest returns the member of class c holding the fewest partitions, the
// first one on a tie.
func (s *sticky) fewest(c int32) int32 {
	members := s.classMembers[c]
	least := members[0]
	for _, m := range members[1:] {
		if s.count[m] < s.count[least] {
			least = m
		}
	}
	return least
}

func (s *sticky) buildClasses() {
	pr := s.pr
	s.class = make([]int32, len(pr.topics))
	ids := make(map[string]int32)
	var key []byte
	for t, elig := range pr.eligible {
		key = key[:0]
		for _, m := range elig {
			key = binary.AppendUvarint(key, uint64(m))
		}
		c, ok := ids[string(key)]
		if !ok {
			c = int32(len(s.classMembers))
			ids[string(key)] = c
			s.classMembers = append(s.classMembers, elig)
			for _, m := range elig {
				s.memberClasses[m] = append(s.memberClasses[m], c)
			}
		}
		s.class[t] = c
	}
}

func (s *sticky) buildHoldings() {
	s.hold = make([][]holding, len(s.pr.members))
	for m, classes := range s.memberClasses {
		s.hold[m] = make([]holding, len(classes))
	}
	for d, o := range s.owner {
		k, _ := slices.BinarySearch(s.memberClasses[o], s.class[s.pr.topicOf[d]])
		hd := &s.hold[o][k]
		if s.prev[d] == o {
			hd.kept = append(hd.kept, int32(d))
		} else {
			hd.fresh = append(hd.fresh, int32(d))
		}
	}
}

// canonicalize is step 4. The partitions changing hands are those a present
// member other than their new owner claims; CooperativeSticky withholds
// exactly these, and its follow-up round deals them from the same counts with
// the same rule, so when the re-dealt placement is accepted here the two
// protocols agree. It is rejected if it breaks local balance, or if a
// partition lands on its only claimant (it would then not be withheld, and the
// follow-up round would start from different counts).
func (s *sticky) canonicalize() {
	var moving []int32
	for d, o := range s.owner {
		if s.contested(int32(d), o) {
			moving = append(moving, int32(d))
		}
	}
	if len(moving) == 0 {
		s.canonical = true
		return
	}
	owner, count := slices.Clone(s.owner), slices.Clone(s.count)
	for _, d := range moving {
		count[owner[d]]--
		owner[d] = -1
	}
	s.deal(owner, count, moving)
	for _, d := range moving {
		if !s.contested(d, owner[d]) {
			return
		}
	}
	if !s.locallyBalanced(owner, count) {
		return
	}
	s.owner, s.count = owner, count
	s.canonical = true
}

// locallyBalanced reports whether no partition could go to a member subscribed
// to its topic that holds at least two fewer than its owner.
func (s *sticky) locallyBalanced(owner, count []int32) bool {
	pr := s.pr
	for t, elig := range pr.eligible {
		least := count[elig[0]]
		for _, m := range elig[1:] {
			least = min(least, count[m])
		}
		for d := pr.base[t]; d < pr.base[t+1]; d++ {
			if count[owner[d]]-least > 1 {
				return false
			}
		}
	}
	return true
}
