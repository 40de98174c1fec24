package consumer

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// comparePartitions orders partitions by topic, then number.
func comparePartitions(a, b assign.Partition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// normalize returns ps sorted and without duplicates, as a new slice; nil
// stays nil and an empty list stays empty (the wire's null vs empty).
func normalize(ps []assign.Partition) []assign.Partition {
	if ps == nil {
		return nil
	}
	out := slices.Clone(ps)
	slices.SortFunc(out, comparePartitions)
	return slices.Compact(out)
}

// setOf returns ps as a set.
func setOf(ps []assign.Partition) map[assign.Partition]bool {
	s := make(map[assign.Partition]bool, len(ps))
	for _, p := range ps {
		s[p] = true
	}
	return s
}

// subset reports whether every partition of a is in b.
func subset(a, b []assign.Partition) bool {
	in := setOf(b)
	for _, p := range a {
		if !in[p] {
			return false
		}
	}
	return true
}

// disjoint reports whether a and b share no partition.
func disjoint(a, b []assign.Partition) bool {
	in := setOf(b)
	for _, p := range a {
		if in[p] {
			return false
		}
	}
	return true
}

// subscribedTopics resolves m's subscription against the cluster's topics:
// its names that exist, plus the topics its regex fully matches. The regex was
// validated when it was set.
func subscribedTopics(m *Member, topics map[string]int32) []string {
	var out []string
	for _, t := range m.Topics {
		if _, ok := topics[t]; ok {
			out = append(out, t)
		}
	}
	if m.Regex != "" {
		if re, err := regexp.Compile("^(?:" + m.Regex + ")$"); err == nil {
			for t := range topics {
				if re.MatchString(t) {
					out = append(out, t)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subscriptionMetadata is the partition count of every topic some member of g
// subscribes to.
func subscriptionMetadata(g *Group, topics map[string]int32) map[string]int32 {
	md := map[string]int32{}
	for _, m := range g.Members {
		for _, t := range subscribedTopics(m, topics) {
			md[t] = topics[t]
		}
	}
	return md
}

// subscribedTopicsChanged reports whether a topic of g's subscription
// metadata was deleted or changed its partition count: O(subscribed topics).
func subscribedTopicsChanged(g *Group, topics map[string]int32) bool {
	for t, n := range g.Subscribed {
		if cur, ok := topics[t]; !ok || cur != n {
			return true
		}
	}
	return false
}

// chooseAssignor picks the server assignor: the one most members asked for,
// ties to the one listed first in the configuration; the configured default
// when nobody asked.
func (e *Engine) chooseAssignor(g *Group) assign.ServerAssignor {
	votes := map[string]int{}
	for _, m := range g.Members {
		if m.Assignor != "" {
			votes[m.Assignor]++
		}
	}
	best, most := e.cfg.Assignors[0], 0
	for _, name := range e.cfg.Assignors {
		if votes[name] > most {
			best, most = name, votes[name]
		}
	}
	a, _ := assign.ServerByName(best)
	return a
}

// computeTarget runs the assignor for g's current epoch and returns the
// records for what changed: one TargetAssignment per member whose target
// differs, then the TargetAssignmentMetadata.
func (e *Engine) computeTarget(g *Group, topics map[string]int32) []Record {
	subs := make([]assign.Subscriber, 0, len(g.Members))
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		subs = append(subs, assign.Subscriber{
			ID: m.ID, InstanceID: m.InstanceID, Rack: m.Rack,
			Topics: subscribedTopics(m, topics), Current: g.Target[m.ID],
		})
	}
	md := make(map[string]assign.TopicMetadata, len(g.Subscribed))
	for t, n := range g.Subscribed {
		md[t] = assign.TopicMetadata{Partitions: n}
	}
	next := e.chooseAssignor(g).Target(subs, md)
	var recs []Record
	target := make(map[string][]assign.Partition, len(next))
	for _, s := range subs {
		list := next[s.ID]
		if list == nil {
			list = []assign.Partition{}
		}
		target[s.ID] = list
		if old, ok := g.Target[s.ID]; !ok || !slices.Equal(old, list) {
			recs = append(recs, Record{Type: TypeTargetAssignment, Group: g.ID, Member: s.ID, Partitions: list})
		}
	}
	g.Target = target
	g.AssignmentEpoch = g.Epoch
	return append(recs, Record{Type: TypeTargetAssignmentMetadata, Group: g.ID, Epoch: g.Epoch})
}

// reconcile moves m one step towards its target (Kafka's
// CurrentAssignmentBuilder), given the partitions the member reports owning
// (nil: not reported). It changes m in place and reports whether anything
// changed.
//
//   - UnrevokedPartitions: stays until the member reports owning none of
//     Revoking; then it is a fresh step.
//   - Stable at the assignment epoch: nothing to do.
//   - Otherwise compare Assigned with the target: keep = Assigned ∩ target;
//     revoke = Assigned − target; the rest of the target is given only if no
//     other member owns it (assigned or revoking), else it is unreleased.
//     Anything to revoke that the member may still hold (it reported owning
//     some of it, or did not report): Assigned = keep, Revoking = revoke, the
//     epoch stays and the rebalance timer starts. Otherwise the member moves
//     to the assignment epoch with keep + the free part of the target,
//     UnreleasedPartitions if some of it is still held elsewhere. A member
//     that reports it already dropped what it must revoke thus skips the
//     revocation round, as in Kafka.
func (e *Engine) reconcile(g *Group, m *Member, owned []assign.Partition, now time.Time) bool {
	if m.Epoch == StaticLeaveEpoch {
		return false
	}
	switch m.State {
	case UnrevokedPartitions:
		if owned == nil || !disjoint(owned, m.Revoking) {
			return false
		}
	case Stable:
		if m.Epoch == g.AssignmentEpoch {
			return false
		}
	}
	before := *m
	target := g.Target[m.ID]
	inTarget := setOf(target)
	var keep, revoke, add []assign.Partition
	for _, p := range m.Assigned {
		if inTarget[p] {
			keep = append(keep, p)
		} else {
			revoke = append(revoke, p)
		}
	}
	owners := g.Owners()
	unreleased := false
	mine := setOf(m.Assigned)
	for _, p := range target {
		if mine[p] {
			continue
		}
		if owner, held := owners[p]; held && owner != m.ID {
			unreleased = true
			continue
		}
		add = append(add, p)
	}
	switch {
	case len(revoke) > 0 && (owned == nil || !disjoint(owned, revoke)):
		m.Assigned, m.Revoking = orEmpty(keep), revoke
		m.State = UnrevokedPartitions
		m.RebalanceDeadline = now.Add(m.RebalanceTimeout)
	default:
		m.Assigned = normalize(append(orEmpty(keep), add...))
		m.Revoking = nil
		if m.Epoch != g.AssignmentEpoch {
			m.PreviousEpoch, m.Epoch = m.Epoch, g.AssignmentEpoch
		}
		m.State = Stable
		if unreleased {
			m.State = UnreleasedPartitions
		}
		m.RebalanceDeadline = time.Time{}
	}
	return !sameState(&before, m)
}

func orEmpty(ps []assign.Partition) []assign.Partition {
	if ps == nil {
		return []assign.Partition{}
	}
	return ps
}

// sameState reports whether a and b have the same persisted current state.
func sameState(a, b *Member) bool {
	return a.Epoch == b.Epoch && a.PreviousEpoch == b.PreviousEpoch && a.State == b.State &&
		slices.Equal(a.Assigned, b.Assigned) && slices.Equal(a.Revoking, b.Revoking)
}

// currentRecord is the CurrentAssignment record of m.
func currentRecord(g *Group, m *Member) Record {
	return Record{Type: TypeCurrentAssignment, Group: g.ID, Member: m.ID, Current: CurrentAssignment{
		Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch, State: m.State,
		Assigned: orEmpty(m.Assigned), Revoking: orEmpty(m.Revoking),
	}}
}

// metadataRecord is the MemberMetadata record of m.
func metadataRecord(g *Group, m *Member) Record {
	return Record{Type: TypeMemberMetadata, Group: g.ID, Member: m.ID, Meta: MemberMetadata{
		InstanceID: m.InstanceID, Rack: m.Rack, ClientID: m.ClientID, ClientHost: m.ClientHost,
		Topics: orEmptyStrings(m.Topics), Regex: m.Regex, Assignor: m.Assignor, RebalanceTimeout: m.RebalanceTimeout,
		Classic: m.Classic,
	}}
}

func orEmptyStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// remove takes a member out of g, bumps the group epoch and returns the
// records: drop's tombstones, then the new group epoch. Its partitions are
// free at once.
func remove(g *Group, id string) []Record {
	recs := drop(g, id)
	g.Epoch++
	return append(recs, Record{Type: TypeGroupMetadata, Group: g.ID, Epoch: g.Epoch})
}

// drop takes a member out of g and returns tombstones for its current
// assignment, target and metadata, in that order (Kafka's).
func drop(g *Group, id string) []Record {
	delete(g.Members, id)
	delete(g.Target, id)
	return []Record{
		{Type: TypeCurrentAssignment, Group: g.ID, Member: id, Tombstone: true},
		{Type: TypeTargetAssignment, Group: g.ID, Member: id, Tombstone: true},
		{Type: TypeMemberMetadata, Group: g.ID, Member: id, Tombstone: true},
	}
}

// AssignorName is the server assignor g's target is computed with: the one
// its members vote for, else the configured default (ConsumerGroupDescribe's
// AssignorName).
func (e *Engine) AssignorName(g *Group) string { return e.chooseAssignor(g).Name() }
