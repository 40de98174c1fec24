package group

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/group/consumer"
)

// This file hosts KIP-848 consumer groups in the group actor. The pure engine
// (internal/group/consumer) decides; the actor serialises its steps, persists
// the records each step returns in __consumer_offsets before the new state
// is visible (so a step and its records are one), and runs the session and
// rebalance timeouts with one timer at the group's next deadline.
//
// Classic and consumer groups share one id namespace: a group is a consumer
// group while g.cg is set. An Empty group converts either way (Kafka's
// bidirectional policy for empty groups); a live group converts as
// group.consumer.migration.policy allows (migrate.go).

// historyLen bounds each group's rebalance history (kept in memory).
const historyLen = 32

// Rebalance is one change of a consumer group's target assignment: when,
// why, at which epoch, and how many partitions changed owner
// (assign.Moves between the target before and after).
type Rebalance struct {
	Time    time.Time
	Reason  string
	Epoch   int32
	Members int // members after the change
	// Moved is the number of partitions whose target owner changed;
	// Added and Removed partitions gained or lost by the target as a whole
	// (a topic created, grown or unsubscribed) are not moves.
	Moved int
	// MovedTo lists, per member that gained a partition from another
	// member, how many it gained.
	MovedTo map[string]int
	// HandedOver counts the partitions given to a member after this
	// change (until the next) that had been released by another, and
	// MaxUnowned is the longest any of them went with no owner: the
	// consumption gap the rebalance cost.
	HandedOver int
	MaxUnowned time.Duration
}

// ConsumerGroupDescription describes one consumer-protocol group
// (ConsumerGroupDescribe). Group is a copy the caller may read freely; nil
// unless Code is CodeNone.
type ConsumerGroupDescription struct {
	GroupID  string
	Code     Code
	Message  string
	Group    *consumer.Group
	Assignor string
	History  []Rebalance
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat (API 68).
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req consumer.Request) consumer.Response {
	if req.GroupID == "" {
		return consumer.Response{Code: consumer.InvalidRequest, Message: "GroupId can't be empty."}
	}
	var resp consumer.Response
	_, err := c.do(ctx, req.GroupID, req.MemberEpoch == consumer.JoinEpoch, func(g *group) { resp = g.consumerHeartbeat(req) })
	switch {
	case errors.Is(err, errNoGroup):
		return consumer.Response{Code: consumer.GroupIDNotFound, Message: fmt.Sprintf("Group %s not found.", req.GroupID)}
	case err != nil:
		return consumer.Response{Code: consumer.Code(CodeCoordinatorNotAvailable)}
	}
	return resp
}

// ConsumerDescribe handles ConsumerGroupDescribe (API 69): one description
// per id, in order. A group that does not exist, or is a classic group, is
// GROUP_ID_NOT_FOUND with Kafka's message.
func (c *Coordinator) ConsumerDescribe(ctx context.Context, ids []string) []ConsumerGroupDescription {
	out := make([]ConsumerGroupDescription, 0, len(ids))
	for _, id := range ids {
		d := ConsumerGroupDescription{GroupID: id, Code: CodeGroupIDNotFound, Message: fmt.Sprintf("Group %s not found.", id)}
		if id == "" {
			d.Code, d.Message = CodeInvalidGroupID, ""
			out = append(out, d)
			continue
		}
		_, err := c.do(ctx, id, false, func(g *group) {
			if g.cg == nil {
				if !g.disposable() {
					d.Message = fmt.Sprintf("Group %s is not a consumer group.", id)
				}
				return
			}
			d.Code, d.Message = CodeNone, ""
			d.Group = g.cg.Clone()
			d.Assignor = c.engine.AssignorName(g.cg)
			d.History = slices.Clone(g.history)
		})
		if err != nil && !errors.Is(err, errNoGroup) {
			d = ConsumerGroupDescription{GroupID: id, Code: CodeCoordinatorNotAvailable}
		}
		out = append(out, d)
	}
	return out
}

// classicInUse reports whether the classic side of g holds anything that a
// conversion would drop: members, pending members or a rebalance under way.
func (g *group) classicInUse() bool {
	return len(g.members) > 0 || len(g.pending) > 0 || g.state != StateEmpty
}

// consumerHeartbeat runs one heartbeat on the actor.
func (g *group) consumerHeartbeat(req consumer.Request) consumer.Response {
	if g.state == StateDead {
		return consumer.Response{Code: consumer.Code(CodeCoordinatorNotAvailable)}
	}
	var pre []StoreRecord
	now := g.c.cfg.Clock.Now()
	cg, upgraded := g.cg, false
	if g.cg == nil {
		if g.classicInUse() {
			if req.MemberEpoch != consumer.JoinEpoch {
				return consumer.Response{Code: consumer.UnknownMemberID, Message: fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id)}
			}
			// Online upgrade (migrate.go): the classic group and its
			// members become a consumer group, then the member joins it.
			var recs []consumer.Record
			var refused consumer.Response
			if cg, recs, refused = g.upgradeFromClassic(now); cg == nil {
				return refused
			}
			pre = append(pre, StoreRecord{Key: groupKey(g.id)})
			for _, r := range recs {
				k, v := r.Encode()
				pre = append(pre, StoreRecord{Key: k, Value: v})
			}
			upgraded = true
		} else if g.generation > 0 || g.protocolType != "" {
			// An Empty classic group converts: its metadata goes, its
			// offsets stay.
			pre = append(pre, StoreRecord{Key: groupKey(g.id)})
		}
	}
	resp, next, recs := g.c.engine.Heartbeat(cg, req, now, g.c.cfg.Topics())
	if resp.Code != consumer.None || next == nil {
		return resp
	}
	if err := g.storeConsumer(pre, recs); err != nil {
		return consumer.Response{Code: consumer.Code(CodeCoordinatorNotAvailable), Message: "storing the group's records failed"}
	}
	switch {
	case upgraded:
		members := len(g.members)
		g.dropClassic()
		g.log.Info("classic group converted to a consumer group", "classic members", members, "epoch", cg.Epoch)
		g.setConsumer(cg, fmt.Sprintf("converted from a classic group of %d members", members))
	case len(pre) > 0:
		g.resetMetadata()
		g.log.Info("empty classic group converted to a consumer group")
	}
	reason := heartbeatReason(g.cg, &req)
	g.setConsumer(next, reason)
	if req.MemberEpoch == consumer.LeaveEpoch || req.MemberEpoch == consumer.StaticLeaveEpoch {
		g.maybeDowngrade(reason)
	}
	return resp
}

// heartbeatReason says why a heartbeat may have changed the target.
func heartbeatReason(before *consumer.Group, req *consumer.Request) string {
	switch {
	case req.MemberEpoch == consumer.LeaveEpoch:
		return "member " + req.MemberID + " left"
	case req.MemberEpoch == consumer.StaticLeaveEpoch:
		return "static member " + req.MemberID + " left temporarily"
	case before == nil || before.Members[req.MemberID] == nil:
		return "member " + req.MemberID + " joined"
	case req.MemberEpoch == consumer.JoinEpoch:
		return "member " + req.MemberID + " rejoined"
	}
	return "subscription or topic metadata changed (member " + req.MemberID + ")"
}

// storeConsumer appends pre and the engine's records, in order.
func (g *group) storeConsumer(pre []StoreRecord, recs []consumer.Record) error {
	out := pre
	for _, r := range recs {
		k, v := r.Encode()
		out = append(out, StoreRecord{Key: k, Value: v})
	}
	if len(out) == 0 {
		return nil
	}
	err := g.c.cfg.Store.Append(g.c.ctx, out)
	if err != nil {
		g.log.Warn("storing consumer group records failed", "err", err)
	}
	return err
}

// setConsumer installs the group after a step: it notes when partitions
// were given to their owners (for offset commits, KIP-1251), records a
// rebalance if the target changed, and re-arms the deadline timer.
func (g *group) setConsumer(next *consumer.Group, reason string) {
	prev := g.cg
	g.cg = next
	if prev == nil || prev.AssignmentEpoch != next.AssignmentEpoch {
		if g.pendingReason != "" {
			reason, g.pendingReason = g.pendingReason, ""
		}
		g.noteRebalance(reason)
	}
	g.noteAssigned(prev)
	if next.Epoch > next.AssignmentEpoch && g.pendingReason == "" {
		// An input changed (a leave, an expiry): the target follows at the
		// next heartbeat, and this is why.
		g.pendingReason = reason
	}
	if len(next.Members) == 0 && (prev == nil || len(prev.Members) > 0) {
		g.stateSince = g.c.cfg.Clock.Now() // Empty since: offsets expire from here
	}
	g.scheduleConsumer()
}

// noteAssigned keeps assignedAt: for every partition a member now holds
// that it did not hold before, the member epoch at which it got it.
func (g *group) noteAssigned(prev *consumer.Group) {
	if g.assignedAt == nil {
		g.assignedAt = map[assign.Partition]int32{}
	}
	had := map[assign.Partition]string{}
	if prev != nil {
		had = prev.Owners()
	}
	now := g.cg.Owners()
	for p := range g.assignedAt {
		if _, ok := now[p]; !ok {
			delete(g.assignedAt, p)
		}
	}
	t := g.c.cfg.Clock.Now()
	if g.unownedSince == nil {
		g.unownedSince = map[assign.Partition]time.Time{}
	}
	for p := range had {
		if _, ok := now[p]; !ok {
			g.unownedSince[p] = t // released: nobody consumes it until it is handed over
		}
	}
	for p, owner := range now {
		if had[p] != owner {
			g.assignedAt[p] = g.cg.Members[owner].Epoch
		}
		if since, ok := g.unownedSince[p]; ok {
			delete(g.unownedSince, p)
			if n := len(g.history); n > 0 {
				h := &g.history[n-1]
				h.HandedOver++
				h.MaxUnowned = max(h.MaxUnowned, t.Sub(since))
			}
		}
	}
}

// noteRebalance appends the change of target since the last one noted to
// the history. It compares with lastTarget, not the previous step's
// target: a leaving member's target is dropped with it before the new
// target is computed, and its partitions moving must still count.
func (g *group) noteRebalance(reason string) {
	before := g.lastTarget
	after := assign.Assignment(maps.Clone(g.cg.Target))
	g.lastTarget = after
	r := Rebalance{Time: g.c.cfg.Clock.Now(), Reason: reason, Epoch: g.cg.AssignmentEpoch, Members: len(g.cg.Members),
		Moved: assign.Moves(before, after), MovedTo: map[string]int{}}
	was := assign.Owners(before)
	for p, owner := range assign.Owners(after) {
		if old, ok := was[p]; ok && old != owner {
			r.MovedTo[owner]++
		}
	}
	g.history = append(g.history, r)
	if len(g.history) > historyLen {
		g.history = slices.Delete(g.history, 0, len(g.history)-historyLen)
	}
	g.storeHistory()
	g.c.rebalances.Add(1)
	g.rebalances++
	g.moved += int64(r.Moved)
	g.log.Info("consumer group target assignment changed", "epoch", r.Epoch, "reason", reason, "members", r.Members, "moved", r.Moved)
}

// scheduleConsumer arms the group's one timer at its next session or
// rebalance deadline; a timer that fires after a later step re-armed it
// finds cgSeq changed and does nothing.
func (g *group) scheduleConsumer() {
	if g.cgTimer != nil {
		g.cgTimer.Stop()
		g.cgTimer = nil
	}
	g.cgSeq++
	if g.cg == nil {
		return
	}
	at := g.cg.NextDeadline()
	if at.IsZero() {
		return
	}
	seq := g.cgSeq
	g.cgTimer = g.after(max(at.Sub(g.c.cfg.Clock.Now()), 0), func() {
		if g.cgSeq == seq {
			g.consumerExpire()
		}
	})
}

// consumerExpireRetry is how soon an expiry whose records could not be
// stored is tried again.
const consumerExpireRetry = time.Second

// consumerExpire removes members whose session or rebalance timeout passed.
func (g *group) consumerExpire() {
	if g.cg == nil {
		return
	}
	next, recs, gone := g.c.engine.Expire(g.cg, g.c.cfg.Clock.Now())
	if len(gone) == 0 {
		g.scheduleConsumer()
		return
	}
	if err := g.storeConsumer(nil, recs); err != nil {
		g.cgSeq++
		seq := g.cgSeq
		g.cgTimer = g.after(consumerExpireRetry, func() {
			if g.cgSeq == seq {
				g.consumerExpire()
			}
		})
		return
	}
	g.log.Info("consumer group members expired", "members", gone, "epoch", next.Epoch)
	reason := fmt.Sprintf("session or rebalance timeout of %v", gone)
	g.setConsumer(next, reason)
	g.maybeDowngrade(reason)
}

// consumerCommitCheck validates an OffsetCommit to a consumer group, as
// Kafka does: an admin commit (negative epoch) only while the group has no
// members; otherwise OffsetCommit v9+, a known member, and an epoch no
// greater than the member's. An older epoch is accepted per partition
// (KIP-1251) when the member holds the partition and got it at or before
// that epoch, so a commit racing a new epoch is not refused needlessly;
// anything else is STALE_MEMBER_EPOCH. It returns a group-wide code and,
// when that is CodeNone, a per-partition check (nil: all pass).
func (g *group) consumerCommitCheck(req OffsetCommitRequest) (Code, func(TopicPartition) Code) {
	if req.Generation < 0 && activeMembers(g.cg) == 0 {
		return CodeNone, nil
	}
	m := g.cg.Members[req.MemberID]
	if m != nil && m.Classic != nil {
		// A classic member commits as in a classic group, at any
		// version: its generation is its member epoch (Kafka's
		// validateOffsetCommit for classic members).
		if int32(req.Generation) != m.Epoch {
			return CodeIllegalGeneration, nil
		}
		return CodeNone, nil
	}
	if req.Version < 9 {
		return CodeUnsupportedVersion, nil
	}
	if m == nil {
		return CodeUnknownMemberID, nil
	}
	epoch := int32(req.Generation)
	switch {
	case epoch > m.Epoch:
		return CodeStaleMemberEpoch, nil
	case epoch == m.Epoch:
		return CodeNone, nil
	}
	held := map[assign.Partition]bool{}
	for _, p := range m.Assigned {
		held[p] = true
	}
	for _, p := range m.Revoking {
		held[p] = true
	}
	return CodeNone, func(tp TopicPartition) Code {
		p := assign.Partition{Topic: tp.Topic, Partition: tp.Partition}
		if at, ok := g.assignedAt[p]; held[p] && ok && at <= epoch {
			return CodeNone
		}
		return CodeStaleMemberEpoch
	}
}

// activeMembers counts members not at StaticLeaveEpoch.
func activeMembers(cg *consumer.Group) int {
	n := 0
	for _, m := range cg.Members {
		if m.Epoch != consumer.StaticLeaveEpoch {
			n++
		}
	}
	return n
}

// consumerFetchCheck validates an OffsetFetch v9+ naming a member of a
// consumer group: an admin fetch (no member id, negative epoch) passes;
// otherwise the member must exist with exactly that epoch.
func (g *group) consumerFetchCheck(memberID *string, epoch int32) Code {
	if memberID == nil && epoch < 0 {
		return CodeNone
	}
	if memberID == nil {
		return CodeUnknownMemberID
	}
	m := g.cg.Members[*memberID]
	switch {
	case m == nil:
		return CodeUnknownMemberID
	case m.Epoch != epoch:
		return CodeStaleMemberEpoch
	}
	return CodeNone
}

// consumerTombstones are the records that delete an empty consumer group's
// group-level records (its members have none left).
func consumerTombstones(id string) []StoreRecord {
	var out []StoreRecord
	out = append(out, StoreRecord{Key: historyKey(id)})
	for _, r := range consumer.Tombstones(consumer.NewGroup(id)) {
		k, _ := r.Encode()
		out = append(out, StoreRecord{Key: k})
	}
	return out
}

// dropConsumer deletes an empty consumer group's records (so that the id
// can become a classic group, or the group be deleted); offsets stay.
func (g *group) dropConsumer() error {
	if err := g.c.cfg.Store.Append(g.c.ctx, consumerTombstones(g.id)); err != nil {
		g.log.Warn("deleting consumer group records failed", "err", err)
		return err
	}
	g.forgetConsumer()
	return nil
}

// forgetConsumer drops the consumer side of g (deleted, or converted).
func (g *group) forgetConsumer() {
	g.cg, g.assignedAt, g.history, g.lastTarget, g.pendingReason, g.unownedSince = nil, nil, nil, nil, "", nil
	g.rebalances, g.moved = 0, 0
	g.scheduleConsumer()
}

// consumerListing is a consumer group's ListGroups entry.
func (g *group) consumerListing() GroupListing {
	st := g.cg.State()
	l := GroupListing{GroupID: g.id, ProtocolType: "consumer", Type: TypeConsumer, StateName: st.String(), State: StatePreparingRebalance,
		Rebalances: g.rebalances, PartitionsMoved: g.moved}
	switch st {
	case consumer.Empty:
		l.State = StateEmpty
	case consumer.StableGroup:
		l.State = StateStable
	}
	return l
}

// consumerSubscribed is every topic a consumer group's members subscribe to.
func (g *group) consumerSubscribed() map[string]bool {
	out := map[string]bool{}
	for t := range maps.Keys(g.cg.Subscribed) {
		out[t] = true
	}
	return out
}

// consumerReplayer gathers the KIP-848 records of each group during replay.
type consumerReplayer map[string][]consumer.Record

// isConsumerKey reports whether key is a KIP-848 group record's (key types
// 3–8; 0–2 are the classic offset and group keys).
func isConsumerKey(key []byte) bool {
	if len(key) < 2 {
		return false
	}
	t := consumer.RecordType(int16(key[0])<<8 | int16(key[1]))
	return t >= consumer.TypeGroupMetadata && t <= consumer.TypeCurrentAssignment
}

// add keeps r; a group-metadata tombstone deletes the group: what came
// before it is forgotten.
func (cr consumerReplayer) add(r consumer.Record) {
	if r.Type == consumer.TypeGroupMetadata && r.Tombstone {
		delete(cr, r.Group)
		return
	}
	cr[r.Group] = append(cr[r.Group], r)
}

// restore rebuilds each consumer group into its actor: members get a fresh
// session (consumer.Engine.Restore), and each partition counts as held
// since its owner's current epoch (commits at older epochs are refused
// until the member catches up; the per-partition epochs are not stored).
func (c *Coordinator) restoreConsumers(cr consumerReplayer, histories map[string][]Rebalance) {
	now := c.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(cr)) {
		cg, err := consumer.Replay(id, cr[id])
		if err != nil {
			c.cfg.Logger.Error("group: skipping a consumer group whose records do not replay", "group", id, "err", err)
			continue
		}
		if cg == nil {
			continue
		}
		g := c.mu.groups[id]
		if g == nil {
			g = newGroup(c, id)
			c.mu.groups[id] = g
		}
		g.resetMetadata() // a consumer group has no classic side
		g.cg = c.engine.Restore(cg, now)
		g.lastTarget = assign.Assignment(maps.Clone(g.cg.Target))
		g.history = histories[id]
		g.assignedAt = map[assign.Partition]int32{}
		for p, owner := range g.cg.Owners() {
			g.assignedAt[p] = g.cg.Members[owner].Epoch
		}
		if len(g.cg.Members) == 0 {
			g.stateSince = now
		}
	}
}
