package group

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/group/consumer"
)

// The KIP-848 side of the actor: persistence and replay, timers, offset
// commit and fetch checks, and the namespace shared with classic groups.
// The engine's own rules are tested in internal/group/consumer.

func new848(t *testing.T) *harness {
	return newHarness(t, Config{Topics: func() map[string]int32 { return map[string]int32{"t": 6} }})
}

func (h *harness) beat(member string, epoch int32, owned []assign.Partition) consumer.Response {
	h.t.Helper()
	req := consumer.Request{Version: 1, GroupID: testGroup, MemberID: member, MemberEpoch: epoch, RebalanceTimeoutMs: -1, Owned: owned}
	if epoch == consumer.JoinEpoch {
		req.RebalanceTimeoutMs, req.Topics, req.Owned = 30_000, []string{"t"}, []assign.Partition{}
	}
	return h.c.ConsumerHeartbeat(context.Background(), req)
}

func (h *harness) cdescribe() ConsumerGroupDescription {
	return h.c.ConsumerDescribe(context.Background(), []string{testGroup})[0]
}

func parts(ns ...int32) []assign.Partition {
	out := []assign.Partition{}
	for _, n := range ns {
		out = append(out, assign.Partition{Topic: "t", Partition: n})
	}
	return out
}

func (h *harness) commit(member string, epoch int32, version int16, ps ...int32) map[TopicPartition]Code {
	req := OffsetCommitRequest{Version: version, GroupID: testGroup, Generation: Generation(epoch), MemberID: member,
		Offsets: map[TopicPartition]OffsetAndMetadata{}}
	for _, p := range ps {
		req.Offsets[TopicPartition{Topic: "t", Partition: p}] = OffsetAndMetadata{Offset: 7, LeaderEpoch: -1}
	}
	return h.c.CommitOffsets(context.Background(), req)
}

func wantAll(t *testing.T, what string, codes map[TopicPartition]Code, want Code) {
	t.Helper()
	for tp, c := range codes {
		if c != want {
			t.Errorf("%s: %v: %v, want %v", what, tp, c, want)
		}
	}
}

// twoMembers forms a group of a and b converged on 3 partitions each and
// returns their epoch.
func (h *harness) twoMembers() int32 {
	t := h.t
	t.Helper()
	r := h.beat("a", 0, nil)
	if r.Code != consumer.None || len(r.Assignment) != 6 || r.MemberEpoch != 1 {
		t.Fatalf("a joins: %+v", r)
	}
	r = h.beat("b", 0, nil)
	if r.Code != consumer.None || len(r.Assignment) != 0 || r.MemberEpoch != 2 {
		t.Fatalf("b joins while a holds everything: %+v", r)
	}
	// a must give up three partitions first, at its old epoch.
	r = h.beat("a", 1, parts(0, 1, 2, 3, 4, 5))
	if r.MemberEpoch != 1 || len(r.Assignment) != 3 {
		t.Fatalf("a is told to revoke: %+v", r)
	}
	kept := r.Assignment
	r = h.beat("a", 1, kept)
	if r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", r)
	}
	r = h.beat("b", 2, []assign.Partition{})
	if len(r.Assignment) != 3 || r.MemberEpoch != 2 {
		t.Fatalf("b gets the released partitions: %+v", r)
	}
	d := h.cdescribe()
	if d.Code != CodeNone || d.Group.State() != consumer.StableGroup || d.Assignor != "uniform" {
		t.Fatalf("describe: %+v", d)
	}
	d.Group.Owners() // panics on a partition owned twice
	return 2
}

func TestConsumerGroupPersistsAndReplays(t *testing.T) {
	t.Parallel()
	h := new848(t)
	epoch := h.twoMembers()
	wantAll(t, "commit", h.commit("a", epoch, 9, 0, 1, 2), CodeNone)
	before := h.cdescribe()

	h.restart()
	after := h.cdescribe()
	if after.Code != CodeNone || after.Group.Epoch != before.Group.Epoch || after.Group.AssignmentEpoch != before.Group.AssignmentEpoch ||
		len(after.Group.Members) != 2 {
		t.Fatalf("after restart: %+v, before %+v", after, before)
	}
	for id, m := range before.Group.Members {
		if got := after.Group.Members[id]; got == nil || got.Epoch != m.Epoch || len(got.Assigned) != len(m.Assigned) {
			t.Errorf("member %s after restart: %+v, before %+v", id, got, m)
		}
	}
	offsets, code := h.c.FetchMemberOffsets(context.Background(), testGroup, new("a"), epoch, nil)
	if code != CodeNone || len(offsets) != 3 {
		t.Fatalf("offsets after restart: %v %v", offsets, code)
	}
	// The members heartbeat on where they were.
	if r := h.beat("a", epoch, nil); r.Code != consumer.None || r.MemberEpoch != epoch {
		t.Fatalf("a after restart: %+v", r)
	}
}

func TestConsumerGroupSessionTimeout(t *testing.T) {
	t.Parallel()
	h := new848(t)
	h.twoMembers()
	// a keeps heartbeating; b goes silent and is removed after 45 s.
	for range 10 {
		h.clock.Advance(5 * time.Second)
		if r := h.beat("a", h.cdescribe().Group.Members["a"].Epoch, nil); r.Code != consumer.None {
			t.Fatalf("a: %+v", r)
		}
	}
	d := h.cdescribe()
	if len(d.Group.Members) != 1 || d.Group.Members["b"] != nil {
		t.Fatalf("b not expired: %+v", d.Group.Members)
	}
	if r := h.beat("b", 2, nil); r.Code != consumer.UnknownMemberID {
		t.Fatalf("b after expiry: %+v", r)
	}
	// a got all six partitions at its next heartbeat.
	if m := d.Group.Members["a"]; len(m.Assigned) != 6 || m.Epoch != 3 {
		t.Fatalf("a after b expired: %+v", m)
	}
	// The history: a joins (nothing moves), b joins (3 move to b), b
	// expires (its 3 move back to a), with the reasons.
	hist := h.cdescribe().History
	if len(hist) != 3 {
		t.Fatalf("history: %+v", hist)
	}
	last := hist[2]
	if !strings.Contains(last.Reason, "timeout") || last.Moved != 3 || last.MovedTo["a"] != 3 || hist[1].Moved != 3 || hist[0].Moved != 0 {
		t.Fatalf("history: %+v", hist)
	}
	// b's join: a released 3 partitions at its heartbeat and b got them at
	// its next, in the same instant of the fake clock. b's expiry freed its
	// 3 at the 45 s deadline; a took them at its heartbeat of that instant
	// (a heartbeats every 5 s: never more than that).
	if hist[1].HandedOver != 3 || hist[1].MaxUnowned != 0 || last.HandedOver != 3 || last.MaxUnowned > 5*time.Second {
		t.Fatalf("unowned gaps: %+v", hist)
	}
	if l := h.c.List(context.Background(), nil); l[0].Rebalances != 3 || l[0].PartitionsMoved != 6 {
		t.Fatalf("listing counters: %+v", l)
	}
	h.clock.Advance(time.Minute)
	if d := h.cdescribe(); len(d.Group.Members) != 0 || d.Group.State() != consumer.Empty {
		t.Fatalf("a not expired: %+v", d.Group.Members)
	}
	// An expiry is persisted: a restart does not bring the members back.
	h.restart()
	if d := h.cdescribe(); d.Code != CodeNone || len(d.Group.Members) != 0 {
		t.Fatalf("after restart: %+v", d)
	}
}

func TestConsumerGroupOffsetChecks(t *testing.T) {
	t.Parallel()
	h := new848(t)
	epoch := h.twoMembers()
	ctx := context.Background()
	wantAll(t, "current epoch", h.commit("b", epoch, 9, 3, 4, 5), CodeNone)
	wantAll(t, "future epoch", h.commit("b", epoch+1, 9, 3), CodeStaleMemberEpoch)
	wantAll(t, "v8", h.commit("b", epoch, 8, 3), CodeUnsupportedVersion)
	wantAll(t, "unknown member", h.commit("zz", epoch, 9, 3), CodeUnknownMemberID)
	wantAll(t, "admin commit to a live group", h.commit("", -1, 9, 3), CodeUnknownMemberID)
	// KIP-1251: a holds 0-2 since epoch 1 (its join), so a commit at epoch
	// 1 of those is fine; b got 3-5 at epoch 2, so epoch 1 is stale.
	d := h.cdescribe()
	a := d.Group.Members["a"]
	codes := h.commit("a", 1, 9, a.Assigned[0].Partition)
	wantAll(t, "older epoch, held since", codes, CodeNone)
	wantAll(t, "older epoch, not held", h.commit("a", 1, 9, d.Group.Members["b"].Assigned[0].Partition), CodeStaleMemberEpoch)
	wantAll(t, "b at an epoch before it got its partitions", h.commit("b", 1, 9, 3), CodeStaleMemberEpoch)

	if _, code := h.c.FetchMemberOffsets(ctx, testGroup, new("b"), epoch-1, nil); code != CodeStaleMemberEpoch {
		t.Fatalf("fetch at a stale epoch: %v", code)
	}
	if _, code := h.c.FetchMemberOffsets(ctx, testGroup, new("zz"), epoch, nil); code != CodeUnknownMemberID {
		t.Fatalf("fetch by an unknown member: %v", code)
	}
	if o, code := h.c.FetchMemberOffsets(ctx, testGroup, nil, -1, nil); code != CodeNone || len(o) != 4 {
		t.Fatalf("admin fetch: %v %v", o, code)
	}
	// Both leave: an admin commit is accepted again.
	h.beat("a", consumer.LeaveEpoch, nil)
	h.beat("b", consumer.LeaveEpoch, nil)
	wantAll(t, "admin commit to an empty group", h.commit("", -1, 9, 0), CodeNone)
}

// TestGroupIDNamespace: with group.consumer.migration.policy=disabled a
// live group of one protocol refuses members of the other; empty groups
// convert either way.
func TestGroupIDNamespace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, Config{Topics: func() map[string]int32 { return map[string]int32{"t": 6} }, MigrationPolicy: MigrationDisabled})
	h.twoMembers()

	// A classic member cannot join a live consumer group.
	if r := recv(t, h.joinAsync(joinReq(""))); r.Code != CodeInconsistentGroupProtocol {
		t.Fatalf("classic join to a consumer group: %+v", r)
	}
	if d := h.describe(); d.Code != CodeGroupIDNotFound || d.Message == "" {
		t.Fatalf("DescribeGroups of a consumer group: %+v", d)
	}
	ls := h.c.List(ctx, nil)
	if len(ls) != 1 || ls[0].Type != TypeConsumer || ls[0].StateName != "Stable" || ls[0].ProtocolType != "consumer" {
		t.Fatalf("list: %+v", ls)
	}
	if codes := h.c.Delete(ctx, []string{testGroup}); codes[testGroup] != CodeNonEmptyGroup {
		t.Fatalf("delete a live consumer group: %v", codes)
	}

	// Once empty it converts to classic on a classic join...
	h.beat("a", consumer.LeaveEpoch, nil)
	h.beat("b", consumer.LeaveEpoch, nil)
	j := recv(t, h.joinAsync(joinReq("")))
	if j.Code == CodeMemberIDRequired {
		j = recv(t, h.joinAsync(joinReq(j.MemberID)))
	}
	if j.Code != CodeNone {
		t.Fatalf("classic join to an empty consumer group: %+v", j)
	}
	if d := h.cdescribe(); d.Code != CodeGroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %+v", d)
	}
	// ...and a live classic group refuses consumer-protocol members.
	if r := h.beat("c", 0, nil); r.Code != consumer.GroupIDNotFound || r.Message == "" {
		t.Fatalf("consumer join to a live classic group: %+v", r)
	}
	// The conversion survives a restart: the group is classic.
	h.restart()
	if d := h.cdescribe(); d.Code != CodeGroupIDNotFound {
		t.Fatalf("after restart: %+v", d)
	}
}

func TestConsumerGroupDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := new848(t)
	epoch := h.twoMembers()
	wantAll(t, "commit", h.commit("a", epoch, 9, 0), CodeNone)
	h.beat("a", consumer.LeaveEpoch, nil)
	h.beat("b", consumer.LeaveEpoch, nil)
	if codes := h.c.Delete(ctx, []string{testGroup}); codes[testGroup] != CodeNone {
		t.Fatalf("delete: %v", codes)
	}
	h.restart()
	if d := h.cdescribe(); d.Code != CodeGroupIDNotFound || len(h.c.List(ctx, nil)) != 0 {
		t.Fatalf("deleted group after restart: %+v %+v", d, h.c.List(ctx, nil))
	}
}

// TestConsumerGroupUnownedGap: the history records how long the partitions
// a rebalance moved had no owner — from the old owner's release to the new
// owner's heartbeat.
func TestConsumerGroupUnownedGap(t *testing.T) {
	t.Parallel()
	h := new848(t)
	h.beat("a", 0, nil)
	h.beat("b", 0, nil)
	r := h.beat("a", 1, parts(0, 1, 2, 3, 4, 5)) // told to revoke 3
	h.beat("a", 1, r.Assignment)                 // released
	h.clock.Advance(1500 * time.Millisecond)
	if r := h.beat("b", 2, []assign.Partition{}); len(r.Assignment) != 3 {
		t.Fatalf("b: %+v", r)
	}
	hist := h.cdescribe().History
	if last := hist[len(hist)-1]; last.HandedOver != 3 || last.MaxUnowned != 1500*time.Millisecond {
		t.Fatalf("history: %+v", hist)
	}
}

// TestClassicMemberInConsumerGroup: under the default (bidirectional)
// policy a classic member joins a live consumer group and is served by it —
// its generation is its member epoch, SyncGroup hands out what the server
// assignor gave it, Heartbeat says when to rejoin — and when the KIP-848
// members leave, the group turns back into a classic group (records
// included: a restart finds it classic) that rebalances.
func TestClassicMemberInConsumerGroup(t *testing.T) {
	t.Parallel()
	h := new848(t)
	epoch := h.twoMembers()
	j := recv(t, h.joinAsync(joinReq("")))
	if j.Code != CodeNone || j.Generation != Generation(epoch+1) || j.Protocol != "range" || j.Leader == j.MemberID {
		t.Fatalf("classic join to a consumer group: %+v", j)
	}
	sync := func(gen Generation) SyncResponse {
		return recv(t, h.syncAsync(SyncRequest{GroupID: testGroup, Generation: gen, MemberID: j.MemberID}))
	}
	if r := sync(j.Generation + 1); r.Code != CodeIllegalGeneration {
		t.Fatalf("sync at a wrong generation: %+v", r)
	}
	// a and b still hold everything: the newcomer waits for releases.
	if r := sync(j.Generation); r.Code != CodeNone || len(mustAssignment(t, r.Assignment)) != 0 {
		t.Fatalf("sync: %+v", r)
	}
	hb := func(gen Generation) Code {
		return h.c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: testGroup, Generation: gen, MemberID: j.MemberID})
	}
	if c := hb(j.Generation); c != CodeRebalanceInProgress {
		t.Fatalf("heartbeat while partitions are due: %v", c)
	}
	// a gives up two partitions: the classic member rejoins and gets them.
	r := h.beat("a", epoch, nil)
	h.beat("a", epoch, r.Assignment)
	r = h.beat("b", epoch, nil)
	h.beat("b", epoch, r.Assignment)
	j2 := recv(t, h.joinAsync(joinReq(j.MemberID)))
	if s := sync(j2.Generation); s.Code != CodeNone || len(mustAssignment(t, s.Assignment)) != 2 {
		t.Fatalf("rejoin and sync: %+v %+v", j2, s)
	}
	if c := hb(j2.Generation); c != CodeNone {
		t.Fatalf("heartbeat at the target: %v", c)
	}
	if d := h.cdescribe(); d.Code != CodeNone || len(d.Group.Members) != 3 || d.Group.Members[j.MemberID].Classic == nil {
		t.Fatalf("describe: %+v", d)
	}
	// A restart restores the classic member (its protocols and session
	// timeout are in its member record).
	h.restart()
	if d := h.cdescribe(); d.Code != CodeNone || len(d.Group.Members) != 3 || d.Group.Members[j.MemberID].Classic == nil ||
		d.Group.Members[j.MemberID].Classic.SessionTimeout != testSession {
		t.Fatalf("describe after restart: %+v", d)
	}
	if c := hb(j2.Generation); c != CodeNone {
		t.Fatalf("heartbeat after restart: %v", c)
	}
	// The KIP-848 members leave: the group is classic again.
	h.beat("a", consumer.LeaveEpoch, nil)
	if d := h.cdescribe(); d.Code != CodeNone {
		t.Fatalf("a KIP-848 member remains, still a consumer group: %+v", d)
	}
	h.beat("b", consumer.LeaveEpoch, nil)
	if d := h.describe(); d.Code != CodeNone || d.State != StatePreparingRebalance || len(d.Members) != 1 {
		t.Fatalf("downgraded: %+v", d)
	}
	if c := hb(j2.Generation); c != CodeRebalanceInProgress {
		t.Fatalf("heartbeat after the downgrade: %v", c)
	}
	j3 := recv(t, h.joinAsync(joinReq(j.MemberID)))
	if j3.Code != CodeNone || j3.Leader != j.MemberID {
		t.Fatalf("rejoin the classic group: %+v", j3)
	}
	h.restart()
	if d := h.cdescribe(); d.Code != CodeGroupIDNotFound {
		t.Fatalf("after restart: %+v", d)
	}
	if d := h.describe(); d.ProtocolType != "consumer" || len(d.Members) != 1 {
		t.Fatalf("classic group after restart: %+v", d)
	}
}

func mustAssignment(t *testing.T, b []byte) []assign.Partition {
	t.Helper()
	ps, err := decodeAssignment(b)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestRebalanceHistorySurvivesRestart: the history is stored in
// __consumer_offsets and replayed; converting the group back (here: deleting
// it once empty) deletes it.
func TestRebalanceHistorySurvivesRestart(t *testing.T) {
	t.Parallel()
	h := new848(t)
	h.twoMembers()
	before := h.cdescribe().History
	if len(before) < 2 {
		t.Fatalf("history: %+v", before)
	}
	h.restart()
	after := h.cdescribe().History
	if len(after) != len(before) {
		t.Fatalf("history after restart: %d entries, %d before", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if !a.Time.Equal(b.Time.Truncate(time.Millisecond)) || a.Reason != b.Reason || a.Epoch != b.Epoch || a.Moved != b.Moved ||
			a.Members != b.Members || !maps.Equal(a.MovedTo, b.MovedTo) {
			t.Fatalf("entry %d: %+v after restart, %+v before", i, a, b)
		}
	}
	// A rebalance after the restart appends to the restored history.
	h.beat("a", consumer.LeaveEpoch, nil)
	h.beat("b", after[len(after)-1].Epoch, []assign.Partition{})
	if got := h.cdescribe().History; len(got) != len(before)+1 || !strings.Contains(got[len(got)-1].Reason, "left") {
		t.Fatalf("history after a leave: %+v", got)
	}
	h.beat("b", consumer.LeaveEpoch, nil)
	if codes := h.c.Delete(context.Background(), []string{testGroup}); codes[testGroup] != CodeNone {
		t.Fatalf("delete: %v", codes)
	}
	h.beat("c", 0, nil)
	h.restart()
	if got := h.cdescribe().History; len(got) != 1 || !strings.Contains(got[0].Reason, "member c joined") {
		t.Fatalf("history of a group made again after a delete: %+v", got)
	}
}

func TestHistoryRecordRoundTrip(t *testing.T) {
	t.Parallel()
	h := []Rebalance{
		{Time: time.UnixMilli(1700000000123), Reason: "member x joined", Epoch: 3, Members: 2, Moved: 3,
			MovedTo: map[string]int{"x": 3}, HandedOver: 3, MaxUnowned: 1500 * time.Millisecond},
		{Time: time.UnixMilli(1700000001000), Reason: "", Epoch: 4, Members: 0, MovedTo: map[string]int{}},
	}
	got, err := decodeHistory(encodeHistory(h))
	if err != nil || len(got) != 2 || !got[0].Time.Equal(h[0].Time) || got[0].MaxUnowned != h[0].MaxUnowned ||
		!maps.Equal(got[0].MovedTo, h[0].MovedTo) || got[1].Epoch != 4 {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	b := encodeHistory(h)
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0), {0, 1, 0, 0, 0, 0}} {
		if _, err := decodeHistory(bad); !errors.Is(err, errBadHistory) {
			t.Fatalf("corrupt %x: %v", bad, err)
		}
	}
	if id, ok := isHistoryKey(historyKey("g")); !ok || id != "g" {
		t.Fatalf("key: %q %v", id, ok)
	}
}
