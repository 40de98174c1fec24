package assign

// Range is Kafka's RangeAssignor ("range"). It ignores Owned. For each topic
// on its own, the members subscribed to it, in canonical order, get
// contiguous ranges of its partitions; with n partitions and m members each
// gets n/m and the first n%m get one more. Partition p of every topic lands on
// the same member when the topics share subscribers and partition counts,
// which is why co-partitioned joins use it; the price is that the remainders
// of all topics pile onto the same first members.
type Range struct{}

// Name returns "range".
func (Range) Name() string { return "range" }

// Assign implements Assignor.
func (Range) Assign(members []Member, partitions map[string]int32) Assignment {
	pr := newProblem(members, partitions)
	owner := pr.unowned()
	for t, elig := range pr.eligible {
		n, m := pr.base[t+1]-pr.base[t], int32(len(elig))
		share, extra := n/m, n%m
		d := pr.base[t]
		for i, member := range elig {
			k := share
			if int32(i) < extra {
				k++
			}
			for range k {
				owner[d] = member
				d++
			}
		}
	}
	return pr.result(owner)
}

// RoundRobin is Kafka's RoundRobinAssignor ("roundrobin"). It ignores Owned.
// All partitions, sorted by topic then partition, are dealt one at a time to
// the members in canonical order, cycling; a member not subscribed to a
// partition's topic is skipped (and the deal continues after the member that
// took it). With identical subscriptions it is balanced within one.
type RoundRobin struct{}

// Name returns "roundrobin".
func (RoundRobin) Name() string { return "roundrobin" }

// Assign implements Assignor.
func (RoundRobin) Assign(members []Member, partitions map[string]int32) Assignment {
	pr := newProblem(members, partitions)
	owner := pr.unowned()
	next := int32(0)
	m := int32(len(pr.members))
	for d := range owner {
		// Some member subscribes to every topic in pr.topics, so this ends.
		for !pr.subscribed(next, pr.topicOf[d]) {
			next = (next + 1) % m
		}
		owner[d] = next
		next = (next + 1) % m
	}
	return pr.result(owner)
}
