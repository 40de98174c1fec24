package assign

import (
	"slices"
)

// This file holds the server-side assignors of KIP-848 consumer groups. In a
// classic group a client leader runs an Assignor over what the members report
// in JoinGroup; in a KIP-848 group the broker runs a ServerAssignor over what
// it stores itself: each member's subscription and its current *target*
// assignment (the previous result), and the topics' partition counts. A target
// assignment never lists a partition twice, so there are no generations or
// conflicting claims to resolve, and the assignor's output is a target, not
// what members own: handing it out safely (revoke before assign) is the group
// engine's job (internal/group/consumer).

// Subscriber is one KIP-848 group member as a server-side assignor sees it,
// the shape of Kafka's MemberSubscriptionSpec plus its current target.
type Subscriber struct {
	// ID is the member id (a client-made UUID in v1 of the heartbeat).
	ID string
	// InstanceID is the static member id, or "". Range deals to static
	// members first, by InstanceID, as the classic assignors do.
	InstanceID string
	// Rack is the member's rack, or "". Carried for rack-aware placement,
	// which neither assignor here does yet (see TopicMetadata.Racks).
	Rack string
	// Topics the member subscribes to, resolved names (a regex subscription
	// is resolved by the caller). Topics not in the metadata are ignored.
	Topics []string
	// Current is the member's target assignment from the previous run.
	Current []Partition
}

// TopicMetadata describes one topic to a server-side assignor.
type TopicMetadata struct {
	// Partitions is the partition count; a topic with none is ignored.
	Partitions int32
	// Racks, if set, lists per partition the racks of its replicas. It is
	// accepted so that callers pass what Kafka's SubscribedTopicDescriber
	// offers, but no placement here reads it: Kafka's own uniform and range
	// builders no longer place by rack either.
	Racks [][]string
}

// ServerAssignor computes a KIP-848 target assignment. Implementations are
// pure and deterministic, as the classic Assignors are: the same subscribers
// (in any order) and metadata give the same Assignment, which lists every
// subscriber, and assigns every partition of every subscribed topic exactly
// once, to a subscriber of its topic.
type ServerAssignor interface {
	// Name is the name clients request in group.remote.assignor.
	Name() string
	// Target computes the new target assignment.
	Target(members []Subscriber, topics map[string]TopicMetadata) Assignment
}

// ServerByName returns the server-side assignor named "uniform" or "range".
func ServerByName(name string) (ServerAssignor, bool) {
	switch name {
	case Uniform{}.Name():
		return Uniform{}, true
	case ServerRange{}.Name():
		return ServerRange{}, true
	}
	return nil, false
}

// asMembers turns subscribers into the classic input, every Current list at
// one generation: a target never lists a partition twice, so no claim ties.
func asMembers(subs []Subscriber) []Member {
	members := make([]Member, len(subs))
	for i, s := range subs {
		members[i] = Member{ID: s.ID, InstanceID: s.InstanceID, Topics: s.Topics, Owned: s.Current, Generation: 1}
	}
	return members
}

func partitionCounts(topics map[string]TopicMetadata) map[string]int32 {
	counts := make(map[string]int32, len(topics))
	for name, md := range topics {
		counts[name] = md.Partitions
	}
	return counts
}

// Uniform is Kafka's server-side UniformAssignor ("uniform", the default of
// group.consumer.assignors): balanced and sticky. Kafka splits it into two
// builders; both map onto Sticky's algorithm run on the current targets:
//
//   - Homogeneous subscriptions (Kafka's optimized builder): every member
//     keeps its current partitions up to its quota — ⌊P/M⌋, or one more for
//     as many members as P mod M allows, those holding the most first — and
//     the rest (partitions of departed members, excess over a quota, new
//     partitions) go to members under quota. Counts differ by at most one and
//     the number of partitions that change owner is the minimum any such
//     assignment can have; Sticky's step 3 is this quota rule.
//   - Heterogeneous subscriptions (Kafka's general builder): keep every
//     current partition still subscribed, hand out the unassigned ones —
//     topics with the fewest subscribers first — each to the least loaded
//     subscriber, then move partitions from fuller to emptier subscribers
//     while that improves balance. Sticky does the same and stops at local
//     balance: no partition could go to a subscriber of its topic holding
//     two or more fewer than its owner.
//
// Partitions of a topic a member no longer subscribes to are revoked from it
// (Kafka does the same).
type Uniform struct{}

// Name returns "uniform".
func (Uniform) Name() string { return "uniform" }

// Target implements ServerAssignor.
func (Uniform) Target(members []Subscriber, topics map[string]TopicMetadata) Assignment {
	ms := asMembers(members)
	return Sticky{}.Assign(ms, partitionCounts(topics))
}

// ServerRange is Kafka's server-side RangeAssignor ("range"). Like the
// classic Range it works per topic over the topic's subscribers in canonical
// order (static members by InstanceID first), so that topics with the same
// partition count and subscribers are co-partitioned: partition p of each
// lands on the same member. Unlike the classic one it is sticky:
//
//  1. Per topic with n partitions and m subscribers, each subscriber's quota
//     is n/m, and n%m of them may hold one more.
//  2. Each subscriber keeps the lowest-numbered of its current partitions of
//     the topic up to n/m; one that held more also keeps its next one while
//     extra slots remain (in canonical order).
//  3. The partitions nobody kept are dealt in ascending contiguous runs, in
//     canonical order, to the subscribers still short of quota: the first to
//     receive take the remaining extra slots.
//
// For a fresh group this is exactly the classic range. When a member joins,
// the others shed only what exceeds their new quota, so fewer partitions
// move than with the classic range, but more than with uniform: the extra
// slots go by canonical order, not to whoever holds the partition.
type ServerRange struct{}

// Name returns "range".
func (ServerRange) Name() string { return "range" }

// Target implements ServerAssignor.
func (ServerRange) Target(members []Subscriber, topics map[string]TopicMetadata) Assignment {
	ms := asMembers(members)
	pr := newProblem(ms, partitionCounts(topics))
	owner := pr.unowned()
	var mine []int32 // one member's current partitions of one topic
	for t, elig := range pr.eligible {
		n, m := pr.base[t+1]-pr.base[t], int32(len(elig))
		share, extra := n/m, n%m
		need := make([]int32, len(elig)) // how many more each may take
		for i, member := range elig {
			mine = mine[:0]
			for _, p := range pr.members[member].Owned {
				if d, ok := pr.dense(p); ok && pr.topicOf[d] == int32(t) {
					mine = append(mine, d)
				}
			}
			slices.Sort(mine)
			mine = slices.Compact(mine)
			keep := min(int32(len(mine)), share)
			if int32(len(mine)) > share && extra > 0 {
				keep++
				extra--
				need[i] = -1 // filled, with an extra slot
			} else {
				need[i] = share - keep
			}
			for _, d := range mine[:keep] {
				owner[d] = member
			}
		}
		d := pr.base[t]
		for i, member := range elig {
			if need[i] < 0 {
				continue
			}
			k := need[i]
			if extra > 0 {
				k++
				extra--
			}
			for ; k > 0; d++ {
				if owner[d] < 0 {
					owner[d] = member
					k--
				}
			}
		}
	}
	return pr.result(owner)
}
