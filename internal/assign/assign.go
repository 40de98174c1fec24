package assign

import (
	"cmp"
	"fmt"
	"slices"
)

// Partition names one partition of one topic.
type Partition struct {
	Topic     string
	Partition int32
}

// String formats p as topic/partition, for logs and test failures.
func (p Partition) String() string { return fmt.Sprintf("%s/%d", p.Topic, p.Partition) }

func comparePartitions(a, b Partition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Member is one group member as an assignor sees it: what it subscribes to and
// what it owned after the previous rebalance.
type Member struct {
	// ID is the member id the coordinator issued; unique within the group.
	ID string
	// InstanceID is the static member id (group.instance.id, KIP-345), or "".
	// Static members sort before dynamic ones (see compareMembers), so a
	// static member that restarts with a new ID keeps its place.
	InstanceID string
	// Topics the member subscribes to. Topics that do not exist are ignored.
	Topics []string
	// Owned is the member's previous assignment as it reported it in
	// JoinGroup. Only sticky and cooperative-sticky read it.
	Owned []Partition
	// Generation is the group generation Owned belongs to; when two members
	// claim the same partition the higher generation wins.
	Generation int32
}

// Assignment maps a member ID to its partitions, sorted by topic then
// partition.
type Assignment map[string][]Partition

// Assignor computes an Assignment. Implementations are pure and deterministic
// (see the package documentation).
type Assignor interface {
	// Name is the protocol name Kafka clients use for this assignor.
	Name() string
	// Assign distributes the partitions of every topic some member
	// subscribes to; partitions maps a topic to its partition count.
	Assign(members []Member, partitions map[string]int32) Assignment
}

// ByName returns the assignor with the given Kafka protocol name: "range",
// "roundrobin", "sticky" or "cooperative-sticky". Names are case-sensitive, as
// in Kafka.
func ByName(name string) (Assignor, bool) {
	switch name {
	case Range{}.Name():
		return Range{}, true
	case RoundRobin{}.Name():
		return RoundRobin{}, true
	case Sticky{}.Name():
		return Sticky{}, true
	case CooperativeSticky{}.Name():
		return CooperativeSticky{}, true
	}
	return nil, false
}

// Owners inverts a: each assigned partition maps to its member ID. In a valid
// Assignment a partition has one owner; if a lists a partition under several
// members, the smallest member ID wins, so the result is still deterministic.
func Owners(a Assignment) map[Partition]string {
	ids := make([]string, 0, len(a))
	n := 0
	for id, ps := range a {
		ids = append(ids, id)
		n += len(ps)
	}
	slices.Sort(ids)
	owners := make(map[Partition]string, n)
	for _, id := range ids {
		for _, p := range a[id] {
			if _, ok := owners[p]; !ok {
				owners[p] = id
			}
		}
	}
	return owners
}

// Moves counts the partitions whose owner changed from before to after: those
// that have an owner in both and the two owners differ. A member that left
// still owns its partitions in before, so each of them counts once it is
// assigned to someone else.
//
// Partitions with an owner on one side only are not moves: one that first
// appears in after (a new partition, or one nobody owned in before) is simply
// assigned, and one that appears only in before (deleted, or withheld by a
// cooperative-sticky revoke round) has no new owner yet. So a cooperative
// rebalance is measured from the assignment before it to the assignment after
// its follow-up round; measuring each round separately would miss the
// partitions it revoked.
func Moves(before, after Assignment) int {
	prev := Owners(before)
	n := 0
	for p, owner := range Owners(after) {
		if was, ok := prev[p]; ok && was != owner {
			n++
		}
	}
	return n
}

// compareMembers is the canonical member order, Kafka's MemberInfo order:
// members with an InstanceID first, by InstanceID; then the others by ID.
// Ties (a duplicate InstanceID) fall back to ID, so the order is total.
// Range and roundrobin deal partitions in this order, and every tie in sticky
// breaks towards the member that comes first.
func compareMembers(a, b Member) int {
	switch {
	case a.InstanceID != "" && b.InstanceID != "":
		if c := cmp.Compare(a.InstanceID, b.InstanceID); c != 0 {
			return c
		}
	case a.InstanceID != "":
		return -1
	case b.InstanceID != "":
		return 1
	}
	return cmp.Compare(a.ID, b.ID)
}

// problem is the normalised input every assignor works on. Members are
// numbered in canonical order, topics in name order, and partitions densely:
// topic t's partition p has dense index base[t]+p, so ascending dense order is
// topic-then-partition order.
type problem struct {
	members  []Member
	topics   []string         // subscribed by some member and with ≥ 1 partition
	index    map[string]int32 // topic → index in topics
	base     []int32          // len(topics)+1; base[len(topics)] is the total
	topicOf  []int32          // dense index → topic index
	eligible [][]int32        // topic → subscribed members, ascending
	subs     [][]uint64       // member → bit set of subscribed topics
}

func newProblem(members []Member, partitions map[string]int32) *problem {
	ms := slices.Clone(members)
	slices.SortFunc(ms, compareMembers)
	seen := make(map[string]struct{}, len(ms))
	var topics []string
	for _, m := range ms {
		if _, dup := seen[m.ID]; dup {
			panic(fmt.Sprintf("assign: duplicate member id %q", m.ID))
		}
		seen[m.ID] = struct{}{}
		for _, t := range m.Topics {
			if partitions[t] > 0 {
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)

	pr := &problem{
		members:  ms,
		topics:   topics,
		index:    make(map[string]int32, len(topics)),
		base:     make([]int32, len(topics)+1),
		eligible: make([][]int32, len(topics)),
		subs:     make([][]uint64, len(ms)),
	}
	for t, name := range topics {
		pr.index[name] = int32(t)
		pr.base[t+1] = pr.base[t] + partitions[name]
	}
	pr.topicOf = make([]int32, pr.total())
	for t := range topics {
		for d := pr.base[t]; d < pr.base[t+1]; d++ {
			pr.topicOf[d] = int32(t)
		}
	}
	words := (len(topics) + 63) / 64
	for i, m := range ms {
		pr.subs[i] = make([]uint64, words)
		for _, name := range m.Topics {
			if t, ok := pr.index[name]; ok && !pr.subscribed(int32(i), t) {
				pr.subs[i][t/64] |= 1 << (t % 64)
				pr.eligible[t] = append(pr.eligible[t], int32(i))
			}
		}
	}
	// Members were visited in ascending order, so each eligible list is
	// already sorted.
	return pr
}

// total is the number of partitions to assign.
func (pr *problem) total() int32 { return pr.base[len(pr.topics)] }

func (pr *problem) subscribed(member, topic int32) bool {
	return pr.subs[member][topic/64]&(1<<(topic%64)) != 0
}

// dense returns p's dense index, or false if p is not a partition to assign.
func (pr *problem) dense(p Partition) (int32, bool) {
	t, ok := pr.index[p.Topic]
	if !ok || p.Partition < 0 || p.Partition >= pr.base[t+1]-pr.base[t] {
		return 0, false
	}
	return pr.base[t] + p.Partition, true
}

func (pr *problem) partition(d int32) Partition {
	t := pr.topicOf[d]
	return Partition{Topic: pr.topics[t], Partition: d - pr.base[t]}
}

// unowned returns a dense owner slice with every partition unassigned (-1).
func (pr *problem) unowned() []int32 {
	owner := make([]int32, pr.total())
	for d := range owner {
		owner[d] = -1
	}
	return owner
}

// result turns a dense owner slice (member index per partition, -1 for none)
// into an Assignment. Walking dense indices in order yields sorted lists.
func (pr *problem) result(owner []int32) Assignment {
	counts := make([]int, len(pr.members))
	for _, o := range owner {
		if o >= 0 {
			counts[o]++
		}
	}
	lists := make([][]Partition, len(pr.members))
	for i, n := range counts {
		lists[i] = make([]Partition, 0, n)
	}
	for d, o := range owner {
		if o >= 0 {
			lists[o] = append(lists[o], pr.partition(int32(d)))
		}
	}
	out := make(Assignment, len(pr.members))
	for i, m := range pr.members {
		out[m.ID] = lists[i]
	}
	return out
}
