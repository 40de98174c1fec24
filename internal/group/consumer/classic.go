package consumer

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// This file is online migration (Kafka's group.consumer.migration.policy):
// members that speak the classic protocol (JoinGroup / SyncGroup /
// Heartbeat) inside a consumer group, as Kafka's "classic members in a
// consumer group". The broker's assignor decides for them too; they learn
// of a new target through REBALANCE_IN_PROGRESS on their heartbeat, rejoin
// reporting what they own (the "consumer" embedded protocol's
// OwnedPartitions), and get the reconciled assignment through SyncGroup. A
// classic member's epoch is its generation and moves only when it rejoins:
// the engine reconciles a member only in its own requests.

// The classic protocol's codes a classic member can be answered.
const (
	IllegalGeneration   Code = 22
	RebalanceInProgress Code = 27
)

// ClassicMember is what a classic-protocol member adds to a Member: its
// session timeout (it heartbeats on its own schedule, not
// group.consumer.heartbeat.interval.ms) and its JoinGroup protocols, kept
// so the group can turn back into a classic group.
type ClassicMember struct {
	SessionTimeout time.Duration
	Protocols      []ClassicProtocol
}

// ClassicProtocol is one (name, metadata) of a JoinGroup.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// sessionTimeout is m's session timeout: its own if it is a classic member.
func (e *Engine) sessionTimeout(m *Member) time.Duration {
	if m.Classic != nil && m.Classic.SessionTimeout > 0 {
		return m.Classic.SessionTimeout
	}
	return e.cfg.SessionTimeout
}

// AllClassic reports whether g has members and all of them speak the
// classic protocol: the condition to convert it back to a classic group.
func (g *Group) AllClassic() bool {
	for _, m := range g.Members {
		if m.Classic == nil {
			return false
		}
	}
	return len(g.Members) > 0
}

// ClassicJoin handles a JoinGroup of a classic member into consumer group g
// (not nil): req carries the member id (one the caller made for a new
// member), instance id, rebalance timeout, client details, the subscribed
// topics and the partitions the member reports owning, all decoded from its
// "consumer" protocol metadata. A new member joins at epoch 0; a known one
// is a heartbeat at its own epoch with its owned partitions, so it keeps
// what it holds and its revocations complete. The results are Heartbeat's.
func (e *Engine) ClassicJoin(g *Group, req Request, classic ClassicMember, now time.Time, topics map[string]int32) (Response, *Group, []Record) {
	if g == nil {
		return fail(GroupIDNotFound, "Group %s not found.", req.GroupID), nil, nil
	}
	req.Version = 1
	if req.Topics == nil {
		req.Topics = []string{}
	}
	if req.Owned == nil {
		req.Owned = []assign.Partition{}
	}
	req.Regex, req.ServerAssignor = nil, nil
	switch m := g.Members[req.MemberID]; {
	case m == nil:
		req.MemberEpoch, req.Owned = JoinEpoch, []assign.Partition{}
	case m.Classic == nil:
		return fail(UnknownMemberID, "Member %s is not a classic member of group %s.", req.MemberID, g.ID), g, nil
	default:
		req.MemberEpoch = m.Epoch
	}
	req.Classic = &classic
	return e.Heartbeat(g, req, now, topics)
}

// ClassicHeartbeat handles a Heartbeat of classic member id at generation
// (its member epoch): it restarts the member's session, and answers
// REBALANCE_IN_PROGRESS while the member is not at the group's current
// target (a new target is due or computed, or the member still has
// partitions to revoke or to receive), so that it rejoins. g is not
// modified; the group returned differs only in the member's deadline.
func (e *Engine) ClassicHeartbeat(g *Group, id string, generation int32, now time.Time) (Code, *Group) {
	m := g.Members[id]
	switch {
	case m == nil || m.Classic == nil:
		return UnknownMemberID, g
	case generation != m.Epoch:
		return IllegalGeneration, g
	}
	g = g.Clone()
	m = g.Members[id]
	m.SessionDeadline = now.Add(e.sessionTimeout(m))
	if g.Epoch != g.AssignmentEpoch || m.Epoch != g.AssignmentEpoch || m.State != Stable {
		return RebalanceInProgress, g
	}
	return None, g
}

// ClassicAssignment is what SyncGroup tells classic member id at
// generation: the partitions it is assigned now (without those it must
// revoke).
func (g *Group) ClassicAssignment(id string, generation int32) ([]assign.Partition, Code) {
	m := g.Members[id]
	switch {
	case m == nil || m.Classic == nil:
		return nil, UnknownMemberID
	case generation != m.Epoch:
		return nil, IllegalGeneration
	}
	return orEmpty(m.Assigned), None
}

// FromClassic builds the consumer group a live classic group becomes
// (online upgrade): every member keeps the partitions of its last
// assignment as both its current and target assignment, at epoch (the
// classic generation), with a fresh session from now. It returns the group
// and the records that write it whole; an assignment that gives a
// partition to two members is an error.
func (e *Engine) FromClassic(id string, epoch int32, members []*Member, now time.Time, topics map[string]int32) (*Group, []Record, error) {
	g := NewGroup(id)
	g.Epoch, g.AssignmentEpoch = epoch, epoch
	for _, m := range members {
		if m.Classic == nil {
			return nil, nil, fmt.Errorf("consumer: member %s of classic group %s has no classic metadata", m.ID, id)
		}
		mc := *m
		mc.Epoch, mc.PreviousEpoch, mc.State = epoch, epoch, Stable
		mc.Assigned = normalize(orEmpty(m.Assigned))
		mc.Revoking = nil
		mc.SessionDeadline = now.Add(e.sessionTimeout(&mc))
		g.Members[mc.ID] = &mc
		g.Target[mc.ID] = mc.Assigned
	}
	if _, err := g.owners(); err != nil {
		return nil, nil, err
	}
	g.Subscribed = subscriptionMetadata(g, topics)
	recs := []Record{
		{Type: TypeGroupMetadata, Group: id, Epoch: epoch},
		{Type: TypeSubscriptionMetadata, Group: id, Topics: maps.Clone(g.Subscribed)},
	}
	for _, mid := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[mid]
		recs = append(recs, metadataRecord(g, m),
			Record{Type: TypeTargetAssignment, Group: id, Member: mid, Partitions: m.Assigned},
			currentRecord(g, m))
	}
	return g, append(recs, Record{Type: TypeTargetAssignmentMetadata, Group: id, Epoch: epoch}), nil
}

// Tombstones are the records that delete g whole: every member's records,
// then the group-level ones, the group-epoch tombstone last (the one replay
// acts on).
func Tombstones(g *Group) []Record {
	var recs []Record
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		recs = append(recs,
			Record{Type: TypeCurrentAssignment, Group: g.ID, Member: id, Tombstone: true},
			Record{Type: TypeTargetAssignment, Group: g.ID, Member: id, Tombstone: true},
			Record{Type: TypeMemberMetadata, Group: g.ID, Member: id, Tombstone: true})
	}
	return append(recs,
		Record{Type: TypeSubscriptionMetadata, Group: g.ID, Tombstone: true},
		Record{Type: TypeTargetAssignmentMetadata, Group: g.ID, Tombstone: true},
		Record{Type: TypeGroupMetadata, Group: g.ID, Tombstone: true})
}
