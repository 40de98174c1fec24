package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/group/consumer"
)

// This file is online migration between the two group protocols, Kafka's
// group.consumer.migration.policy:
//
//   - upgrade: a ConsumerGroupHeartbeat join to a Stable classic group whose
//     members use the "consumer" embedded protocol turns it into a consumer
//     group. The classic members stay, each keeping the partitions of its
//     last assignment, and go on speaking JoinGroup / SyncGroup / Heartbeat /
//     LeaveGroup, served by the consumer group (consumer/classic.go): the
//     server assignor decides for them, a new target reaches them as
//     REBALANCE_IN_PROGRESS, and they rejoin to reconcile.
//   - downgrade: when the last ConsumerGroupHeartbeat member leaves (or is
//     expired) and classic members remain, the group turns back into a
//     classic group with those members and their current assignments, and
//     starts a classic rebalance so its leader assigns afresh.
//
// Each conversion is one append: the old kind's records are deleted (a
// classic group tombstone, or every consumer record) and the new kind's
// written, before the state changes.

// MigrationPolicy is group.consumer.migration.policy.
type MigrationPolicy string

const (
	MigrationBidirectional MigrationPolicy = "bidirectional" // Kafka 4's default
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationDisabled      MigrationPolicy = "disabled"
)

// ParseMigrationPolicy accepts Kafka's values (case-insensitively, as
// Kafka's config does); "" is the default, bidirectional.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	switch p := MigrationPolicy(strings.ToLower(s)); p {
	case "":
		return MigrationBidirectional, nil
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return p, nil
	}
	return "", fmt.Errorf("group.consumer.migration.policy %q: want bidirectional, upgrade, downgrade or disabled", s)
}

func (p MigrationPolicy) upgrades() bool {
	return p == MigrationBidirectional || p == MigrationUpgrade || p == ""
}

func (p MigrationPolicy) downgrades() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade || p == ""
}

// classicProtocols converts JoinGroup protocols for the engine.
func classicProtocols(ps []Protocol) []consumer.ClassicProtocol {
	out := make([]consumer.ClassicProtocol, len(ps))
	for i, p := range ps {
		out[i] = consumer.ClassicProtocol{Name: p.Name, Metadata: p.Metadata}
	}
	return out
}

// decodeSubscription reads the "consumer" embedded protocol's
// subscription: topics and the partitions the member owns.
func decodeSubscription(metadata []byte) ([]string, []assign.Partition, error) {
	var md kmsg.ConsumerMemberMetadata
	if err := md.ReadFrom(metadata); err != nil {
		return nil, nil, err
	}
	var owned []assign.Partition
	for _, t := range md.OwnedPartitions {
		for _, p := range t.Partitions {
			owned = append(owned, assign.Partition{Topic: t.Topic, Partition: p})
		}
	}
	return slices.Clone(md.Topics), owned, nil
}

// decodeAssignment reads a ConsumerMemberAssignment's partitions; an empty
// assignment is none.
func decodeAssignment(b []byte) ([]assign.Partition, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, err
	}
	var out []assign.Partition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, assign.Partition{Topic: t.Topic, Partition: p})
		}
	}
	return out, nil
}

// encodeAssignment is ps as a ConsumerMemberAssignment (version 0: the
// topics, which is all a consumer reads).
func encodeAssignment(ps []assign.Partition) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, p := range ps {
		if n := len(a.Topics); n == 0 || a.Topics[n-1].Topic != p.Topic {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic = p.Topic
			a.Topics = append(a.Topics, t)
		}
		t := &a.Topics[len(a.Topics)-1]
		t.Partitions = append(t.Partitions, p.Partition)
	}
	return a.AppendTo(nil)
}

// upgradeFromClassic builds the consumer group g's live classic group
// becomes, with the records that write it; it refuses (with the message
// for the member) unless the policy allows it, the group is Stable and
// every member speaks the consumer protocol.
func (g *group) upgradeFromClassic(now time.Time) (*consumer.Group, []consumer.Record, consumer.Response) {
	refuse := func(code consumer.Code, format string, args ...any) (*consumer.Group, []consumer.Record, consumer.Response) {
		return nil, nil, consumer.Response{Code: code, Message: fmt.Sprintf(format, args...)}
	}
	policy := g.c.cfg.MigrationPolicy
	switch {
	case !policy.upgrades():
		return refuse(consumer.GroupIDNotFound, "Group %s is a classic group with members; group.consumer.migration.policy=%s "+
			"does not allow converting it to the consumer protocol.", g.id, policy)
	case g.protocolType != "consumer":
		return refuse(consumer.GroupIDNotFound, "Group %s is a classic group of protocol type %q, not \"consumer\": it cannot be "+
			"converted to the consumer protocol.", g.id, g.protocolType)
	case g.state != StateStable || len(g.pending) > 0:
		// Mid-rebalance the members' partitions are not known: the
		// joining member retries (its client rediscovers the coordinator).
		return refuse(consumer.Code(CodeCoordinatorNotAvailable), "Group %s is rebalancing; it converts to the consumer protocol once stable.", g.id)
	}
	var members []*consumer.Member
	for _, m := range g.sortedMembers() {
		topics, _, err := decodeSubscription(m.metadata(g.protocol))
		if err != nil {
			return refuse(consumer.GroupIDNotFound, "Group %s: member %s's subscription does not decode (%v): it cannot be converted.", g.id, m.id, err)
		}
		assigned, err := decodeAssignment(m.assignment)
		if err != nil {
			return refuse(consumer.GroupIDNotFound, "Group %s: member %s's assignment does not decode (%v): it cannot be converted.", g.id, m.id, err)
		}
		members = append(members, &consumer.Member{
			ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.host,
			Topics: slices.Compact(slices.Sorted(slices.Values(topics))), RebalanceTimeout: m.rebalance,
			Assigned: assigned,
			Classic:  &consumer.ClassicMember{SessionTimeout: m.session, Protocols: classicProtocols(m.protocols)},
		})
	}
	cg, recs, err := g.c.engine.FromClassic(g.id, max(int32(g.generation), 1), members, now, g.c.cfg.Topics())
	if err != nil {
		return refuse(consumer.GroupIDNotFound, "Group %s cannot be converted: %v.", g.id, err)
	}
	return cg, recs, consumer.Response{}
}

// dropClassic forgets the classic side after an upgrade: timers stop, and a
// request still parked (none in a Stable group but a retried join) is told
// to rejoin.
func (g *group) dropClassic() {
	g.stopPhase()
	for _, m := range g.members {
		if m.timer != nil {
			m.timer.Stop()
		}
		m.timerSeq++
		if m.joinReply != nil {
			m.joinReply <- JoinResponse{Code: CodeRebalanceInProgress, MemberID: m.id, Generation: NoGeneration}
			m.joinReply = nil
		}
		if m.syncReply != nil {
			m.syncReply <- SyncResponse{Code: CodeRebalanceInProgress}
			m.syncReply = nil
		}
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	g.resetMetadata()
}

// classicJoinConsumer is a JoinGroup to a consumer group with members: the
// member joins (or rejoins) as a classic member, and is answered at once
// with its member epoch as the generation. It is not the leader: the
// broker assigns, and SyncGroup hands out the result.
func (g *group) classicJoinConsumer(req JoinRequest, reply chan<- JoinResponse) {
	fail := func(code Code) {
		reply <- JoinResponse{Code: code, MemberID: req.MemberID, Generation: NoGeneration}
	}
	if g.c.cfg.MigrationPolicy == MigrationDisabled || req.ProtocolType != "consumer" || len(req.Protocols) == 0 {
		fail(CodeInconsistentGroupProtocol)
		return
	}
	topics, owned, err := decodeSubscription(req.Protocols[0].Metadata)
	if err != nil {
		fail(CodeInconsistentGroupProtocol)
		return
	}
	id := req.MemberID
	switch _, known := g.cg.Members[id]; {
	case id == "" && req.InstanceID != "":
		if m, ok := g.cg.StaticMember(req.InstanceID); ok {
			id = m.ID // a static member's restart: same place
		} else {
			id = newMemberID(req.InstanceID)
		}
	case id == "":
		id = newMemberID(req.ClientID)
		if req.RequireKnownMemberID {
			g.addPending(id, req.SessionTimeout)
			reply <- JoinResponse{Code: CodeMemberIDRequired, MemberID: id, Generation: NoGeneration}
			return
		}
	case !known:
		t, pending := g.pending[id]
		if !pending {
			fail(CodeUnknownMemberID)
			return
		}
		t.Stop()
		delete(g.pending, id)
	}
	creq := consumer.Request{
		GroupID: g.id, MemberID: id, RebalanceTimeoutMs: int32(req.RebalanceTimeout / time.Millisecond),
		Topics: topics, Owned: owned, ClientID: req.ClientID, ClientHost: req.ClientHost,
	}
	if req.InstanceID != "" {
		inst := req.InstanceID
		creq.InstanceID = &inst
	}
	classic := consumer.ClassicMember{SessionTimeout: req.SessionTimeout, Protocols: classicProtocols(req.Protocols)}
	resp, next, recs := g.c.engine.ClassicJoin(g.cg, creq, classic, g.c.cfg.Clock.Now(), g.c.cfg.Topics())
	if resp.Code != consumer.None {
		fail(Code(resp.Code))
		return
	}
	if err := g.storeConsumer(nil, recs); err != nil {
		fail(CodeCoordinatorNotAvailable)
		return
	}
	reason := "classic member " + id + " joined"
	if g.cg.Members[id] != nil {
		reason = "classic member " + id + " rejoined"
	}
	g.setConsumer(next, reason)
	reply <- JoinResponse{Generation: Generation(resp.MemberEpoch), ProtocolType: "consumer",
		Protocol: req.Protocols[0].Name, MemberID: id}
}

// classicSyncConsumer is a SyncGroup of a classic member of a consumer
// group: its current assignment (what it must revoke left out).
func (g *group) classicSyncConsumer(req SyncRequest) SyncResponse {
	m := g.cg.Members[req.MemberID]
	if m == nil || m.Classic == nil {
		return SyncResponse{Code: CodeUnknownMemberID}
	}
	if req.InstanceID != "" && m.InstanceID != req.InstanceID {
		return SyncResponse{Code: CodeFencedInstanceID}
	}
	ps, code := g.cg.ClassicAssignment(req.MemberID, int32(req.Generation))
	if code != consumer.None {
		return SyncResponse{Code: Code(code)}
	}
	protocol := m.Classic.Protocols[0].Name
	if (req.ProtocolType != "" && req.ProtocolType != "consumer") || (req.Protocol != "" && req.Protocol != protocol) {
		return SyncResponse{Code: CodeInconsistentGroupProtocol}
	}
	return SyncResponse{ProtocolType: "consumer", Protocol: protocol, Assignment: encodeAssignment(ps)}
}

// classicHeartbeatConsumer is a Heartbeat of a classic member of a consumer
// group.
func (g *group) classicHeartbeatConsumer(req HeartbeatRequest) Code {
	if m := g.cg.Members[req.MemberID]; m != nil && req.InstanceID != "" && m.InstanceID != req.InstanceID {
		return CodeFencedInstanceID
	}
	code, next := g.c.engine.ClassicHeartbeat(g.cg, req.MemberID, int32(req.Generation), g.c.cfg.Clock.Now())
	if next != g.cg {
		g.cg = next // only the member's session deadline moved
		g.scheduleConsumer()
	}
	return Code(code)
}

// classicLeaveConsumer is one LeaveGroup member of a consumer group: a
// classic member leaves for good.
func (g *group) classicLeaveConsumer(lm LeaveMember) Code {
	id := lm.MemberID
	if lm.InstanceID != "" {
		m, ok := g.cg.StaticMember(lm.InstanceID)
		switch {
		case !ok:
			return CodeUnknownMemberID
		case id != "" && id != m.ID:
			return CodeFencedInstanceID
		}
		id = m.ID
	}
	if m := g.cg.Members[id]; m == nil || m.Classic == nil {
		return CodeUnknownMemberID
	}
	resp, next, recs := g.c.engine.Heartbeat(g.cg, consumer.Request{Version: 1, GroupID: g.id, MemberID: id,
		MemberEpoch: consumer.LeaveEpoch}, g.c.cfg.Clock.Now(), g.c.cfg.Topics())
	if resp.Code != consumer.None {
		return Code(resp.Code)
	}
	if err := g.storeConsumer(nil, recs); err != nil {
		return CodeCoordinatorNotAvailable
	}
	g.setConsumer(next, "classic member "+id+" left")
	return CodeNone
}

// maybeDowngrade turns a consumer group whose members are all classic back
// into a classic group, if the policy allows: the members keep their ids,
// protocols, timeouts and current assignments, the generation is the
// highest member epoch, and a rebalance starts so that they rejoin and the
// classic leader assigns. Called after a step that removed a member.
func (g *group) maybeDowngrade(reason string) {
	if g.cg == nil || !g.cg.AllClassic() || !g.c.cfg.MigrationPolicy.downgrades() {
		return
	}
	cg := g.cg
	var generation int32
	for _, m := range cg.Members {
		generation = max(generation, m.Epoch)
	}
	// Build the classic side, encode it, and keep it only if the append
	// succeeds.
	g.resetMetadata()
	g.protocolType, g.generation = "consumer", Generation(generation)
	for _, id := range slices.Sorted(maps.Keys(cg.Members)) {
		cm := cg.Members[id]
		m := &member{id: id, instanceID: cm.InstanceID, clientID: cm.ClientID, host: cm.ClientHost,
			session: cm.Classic.SessionTimeout, rebalance: cm.RebalanceTimeout, seq: g.nextSeq,
			assignment: encodeAssignment(cm.Assigned)}
		for _, p := range cm.Classic.Protocols {
			m.protocols = append(m.protocols, Protocol{Name: p.Name, Metadata: p.Metadata})
		}
		if m.rebalance <= 0 {
			m.rebalance = m.session
		}
		g.nextSeq++
		g.members[id] = m
		if m.instanceID != "" {
			g.static[m.instanceID] = id
		}
		if g.leader == "" {
			g.leader = id
		}
	}
	g.protocol = g.selectProtocol()
	g.state = StateStable
	out := []StoreRecord{{Key: historyKey(g.id)}}
	for _, r := range consumer.Tombstones(cg) {
		k, _ := r.Encode()
		out = append(out, StoreRecord{Key: k})
	}
	out = append(out, g.metadataRecord(nil))
	if err := g.c.cfg.Store.Append(g.c.ctx, out); err != nil {
		g.log.Warn("converting the consumer group back to classic failed", "err", err)
		g.resetMetadata()
		return
	}
	g.forgetConsumer()
	g.log.Info("consumer group converted to a classic group: only classic members remain", "generation", generation,
		"members", len(g.members))
	for _, m := range g.members {
		g.resetSession(m)
	}
	g.prepareRebalance("converted from a consumer group (" + reason + ")")
}
