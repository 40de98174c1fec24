package group

import (
	"errors"
	"log/slog"
	"testing"
	"time"
)

func tp(topic string, p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

func offsets(kv ...any) map[TopicPartition]OffsetAndMetadata {
	m := map[TopicPartition]OffsetAndMetadata{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(TopicPartition)] = OffsetAndMetadata{Offset: int64(kv[i+1].(int)), LeaderEpoch: -1}
	}
	return m
}

func TestSimpleCommitCreatesEmptyGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	if got := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: "nope", Generation: 1, MemberID: "m", Offsets: offsets(tp("t", 0), 1)}); got[tp("t", 0)] != CodeIllegalGeneration {
		t.Errorf("member commit to unknown group: %v", got)
	}
	got := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 0), 10, tp("t", 1), 20)})
	if got[tp("t", 0)] != CodeNone || got[tp("t", 1)] != CodeNone {
		t.Fatalf("simple commit: %v", got)
	}
	if s := h.snap(); s.state != StateEmpty {
		t.Fatalf("group after simple commit: %+v", s)
	}
	all, code := h.c.FetchOffsets(ctx, testGroup, nil)
	if code != CodeNone || len(all) != 2 || all[tp("t", 0)].Offset != 10 || all[tp("t", 1)].Offset != 20 {
		t.Fatalf("fetch all: %v %v", all, code)
	}
	if !all[tp("t", 0)].CommitTime.Equal(h.clock.Now()) {
		t.Errorf("commit time %v, want %v", all[tp("t", 0)].CommitTime, h.clock.Now())
	}
	some, _ := h.c.FetchOffsets(ctx, testGroup, []TopicPartition{tp("t", 1), tp("t", 7)})
	if len(some) != 1 || some[tp("t", 1)].Offset != 20 {
		t.Errorf("fetch some: %v", some)
	}
	none, code := h.c.FetchOffsets(ctx, "unknown", nil)
	if code != CodeNone || len(none) != 0 {
		t.Errorf("fetch of unknown group: %v %v", none, code)
	}
	if _, code := h.c.FetchOffsets(ctx, "", nil); code != CodeInvalidGroupID {
		t.Errorf("fetch with no group id: %v", code)
	}
}

func TestCommitGenerationFencing(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""))
	commit := func(gen Generation, member, instance string) Code {
		got := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: gen, MemberID: member, InstanceID: instance, Offsets: offsets(tp("t", 0), 5)})
		return got[tp("t", 0)]
	}
	tests := []struct {
		name     string
		gen      Generation
		member   string
		instance string
		want     Code
	}{
		{"current member", 1, cs[1].id, "", CodeNone},
		{"stale generation", 0, cs[1].id, "", CodeIllegalGeneration},
		{"unknown member", 1, "nobody", "", CodeUnknownMemberID},
		{"simple commit to a live group", NoGeneration, "", "", CodeIllegalGeneration},
		{"unknown instance", 1, cs[1].id, "i9", CodeUnknownMemberID},
	}
	for _, tt := range tests {
		if got := commit(tt.gen, tt.member, tt.instance); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	// Mid-rebalance: the old generation may still commit while members
	// rejoin (revocation commits), but a member of the generation being
	// formed must wait for its assignment.
	r := cs[0].req
	r.MemberID = cs[0].id
	ch := h.joinAsync(r)
	waitFor(t, "rebalance", func() bool { return h.snap().state == StatePreparingRebalance })
	if got := commit(1, cs[1].id, ""); got != CodeNone {
		t.Errorf("commit during PreparingRebalance: %v", got)
	}
	next := h.rejoin(cs[1])
	recv(t, ch)
	if got := commit(2, next[0].id, ""); got != CodeRebalanceInProgress {
		t.Errorf("commit during CompletingRebalance: %v", got)
	}
	if got := commit(1, next[0].id, ""); got != CodeIllegalGeneration {
		t.Errorf("old generation after the rebalance: %v", got)
	}
}

func TestCommitPartitionErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{
		MaxMetadataSize: 8,
		PartitionExists: func(p TopicPartition) bool { return p.Topic == "t" && p.Partition < 2 },
	})
	req := OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: map[TopicPartition]OffsetAndMetadata{
		tp("t", 0): {Offset: 1, Metadata: "ok"},
		tp("t", 1): {Offset: 1, Metadata: "way too long"},
		tp("t", 5): {Offset: 1},
		tp("u", 0): {Offset: 1},
	}}
	got := h.c.CommitOffsets(ctx, req)
	want := map[TopicPartition]Code{tp("t", 0): CodeNone, tp("t", 1): CodeOffsetMetadataTooLarge, tp("t", 5): CodeUnknownTopicOrPartition, tp("u", 0): CodeUnknownTopicOrPartition}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%v: %v, want %v", p, got[p], w)
		}
	}
	all, _ := h.c.FetchOffsets(ctx, testGroup, nil)
	if len(all) != 1 || all[tp("t", 0)].Metadata != "ok" {
		t.Errorf("committed: %v", all)
	}
	if got := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: "", Offsets: offsets(tp("t", 0), 1)}); got[tp("t", 0)] != CodeInvalidGroupID {
		t.Errorf("no group id: %v", got)
	}
	// A commit whose partitions all fail leaves no group behind.
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: "ghost", Generation: NoGeneration, Offsets: offsets(tp("u", 0), 1)})
	if ls := h.c.List(ctx, nil); len(ls) != 1 {
		t.Errorf("groups: %+v", ls)
	}
}

func TestStoreFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 0), 1)})
	h.store.FailAppends(errors.New("disk on fire"))
	got := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 0), 2)})
	if got[tp("t", 0)] != CodeCoordinatorNotAvailable {
		t.Errorf("commit on failing store: %v", got)
	}
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); o[tp("t", 0)].Offset != 1 {
		t.Errorf("a failed commit changed the offset: %v", o)
	}
	// The leader's sync cannot be stored: the generation is abandoned.
	jr := h.c.Join(ctx, joinReq(""))
	sr := h.c.Sync(ctx, SyncRequest{GroupID: testGroup, Generation: jr.Generation, MemberID: jr.MemberID,
		Assignments: []MemberAssignment{{MemberID: jr.MemberID, Assignment: []byte("a")}}})
	if sr.Code != CodeCoordinatorNotAvailable || h.snap().state != StatePreparingRebalance {
		t.Fatalf("sync on failing store: %v %+v", sr.Code, h.snap())
	}
	if code := h.c.Delete(ctx, []string{testGroup})[testGroup]; code != CodeNonEmptyGroup {
		t.Errorf("delete: %v", code)
	}
	h.store.FailAppends(nil)
	r := joinReq(jr.MemberID)
	jr = h.c.Join(ctx, r)
	if jr.Code != CodeNone || jr.Generation != 2 {
		t.Fatalf("rejoin after the store recovered: %+v", jr)
	}
}

func TestDeleteGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	cs := h.form(joinReq(""))
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: 1, MemberID: cs[0].id, Offsets: offsets(tp("t", 0), 3)})
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: "other", Generation: NoGeneration, Offsets: offsets(tp("t", 0), 4)})
	got := h.c.Delete(ctx, []string{testGroup, "unknown", ""})
	if got[testGroup] != CodeNonEmptyGroup || got["unknown"] != CodeGroupIDNotFound || got[""] != CodeInvalidGroupID {
		t.Fatalf("delete: %v", got)
	}
	h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: cs[0].id}}})
	if got := h.c.Delete(ctx, []string{testGroup}); got[testGroup] != CodeNone {
		t.Fatalf("delete of the Empty group: %v", got)
	}
	if d := h.describe(); d.State != StateDead {
		t.Errorf("after delete: %+v", d)
	}
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); len(o) != 0 {
		t.Errorf("offsets after delete: %v", o)
	}
	if got := h.c.Delete(ctx, []string{testGroup}); got[testGroup] != CodeGroupIDNotFound {
		t.Errorf("second delete: %v", got)
	}
	// The tombstones hold across a restart; the other group is untouched.
	h.restart()
	if ls := h.c.List(ctx, nil); len(ls) != 1 || ls[0].GroupID != "other" {
		t.Errorf("groups after restart: %+v", ls)
	}
	if o, _ := h.c.FetchOffsets(ctx, "other", nil); o[tp("t", 0)].Offset != 4 {
		t.Errorf("other group's offsets: %v", o)
	}
	// The id is free for a new group.
	if jr := h.c.Join(ctx, joinReq("")); jr.Code != CodeNone || jr.Generation != 1 {
		t.Errorf("join after delete: %+v", jr)
	}
}

func TestDeleteOffsets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	r := joinReq("") // subscribes to topic "t"
	cs := h.form(r)
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: 1, MemberID: cs[0].id, Offsets: offsets(tp("t", 0), 1, tp("old", 0), 2)})
	code, got := h.c.DeleteOffsets(ctx, testGroup, []TopicPartition{tp("t", 0), tp("old", 0), tp("never", 0)})
	if code != CodeNone || got[tp("t", 0)] != CodeGroupSubscribedToTopic || got[tp("old", 0)] != CodeNone || got[tp("never", 0)] != CodeNone {
		t.Fatalf("delete offsets: %v %v", code, got)
	}
	o, _ := h.c.FetchOffsets(ctx, testGroup, nil)
	if len(o) != 1 || o[tp("t", 0)].Offset != 1 {
		t.Errorf("offsets left: %v", o)
	}
	if code, _ := h.c.DeleteOffsets(ctx, "unknown", []TopicPartition{tp("t", 0)}); code != CodeGroupIDNotFound {
		t.Errorf("unknown group: %v", code)
	}
	// Once the group is Empty, anything can go.
	h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: cs[0].id}}})
	if code, got := h.c.DeleteOffsets(ctx, testGroup, []TopicPartition{tp("t", 0)}); code != CodeNone || got[tp("t", 0)] != CodeNone {
		t.Errorf("delete from Empty group: %v %v", code, got)
	}
	h.restart()
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); len(o) != 0 {
		t.Errorf("offsets after restart: %v", o)
	}
}

func TestDeleteOffsetsOfNonConsumerGroup(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	r := joinReq("")
	r.ProtocolType = "connect"
	r.Protocols = []Protocol{{Name: "default", Metadata: []byte{0xff}}}
	h.form(r)
	if code, _ := h.c.DeleteOffsets(ctx, testGroup, []TopicPartition{tp("t", 0)}); code != CodeNonEmptyGroup {
		t.Errorf("non-consumer group: %v", code)
	}
}

func TestRestartRecoversGroupsAndOffsets(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(static("i1"), joinReq(""), joinReq(""))
	before := h.snap()
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: 1, MemberID: cs[1].id,
		Offsets: map[TopicPartition]OffsetAndMetadata{tp("t", 0): {Offset: 42, LeaderEpoch: 7, Metadata: "m"}}})
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: 1, MemberID: cs[1].id, Offsets: offsets(tp("t", 0), 43, tp("t", 1), 9)})
	commitTime := h.clock.Now()
	descBefore := h.describe()

	h.restart()
	after := h.snap()
	if after != before {
		t.Fatalf("state after restart %+v, want %+v", after, before)
	}
	descAfter := h.describe()
	if len(descAfter.Members) != 3 || descAfter.Protocol != "range" || descAfter.ProtocolType != "consumer" {
		t.Fatalf("describe after restart: %+v", descAfter)
	}
	for i, m := range descAfter.Members {
		b := descBefore.Members[i]
		if m.MemberID != b.MemberID || m.InstanceID != b.InstanceID || m.ClientID != b.ClientID || m.ClientHost != b.ClientHost ||
			string(m.Assignment) != string(b.Assignment) || string(m.Metadata) != string(b.Metadata) {
			t.Errorf("member %d: %+v, want %+v", i, m, b)
		}
	}
	if descAfter.Members[0].InstanceID != "i1" {
		t.Errorf("instance id lost: %+v", descAfter.Members[0])
	}
	o, _ := h.c.FetchOffsets(ctx, testGroup, nil)
	if o[tp("t", 0)].Offset != 43 || o[tp("t", 1)].Offset != 9 || !o[tp("t", 0)].CommitTime.Equal(commitTime) {
		t.Errorf("offsets after restart: %v", o)
	}
	// The members carry on in generation 1 ...
	for _, cl := range cs {
		if code := h.heartbeat(cl); code != CodeNone {
			t.Errorf("heartbeat after restart: %v", code)
		}
	}
	sr := h.c.Sync(ctx, SyncRequest{GroupID: testGroup, Generation: 1, MemberID: cs[2].id})
	if sr.Code != CodeNone || string(sr.Assignment) != "a-"+cs[2].id {
		t.Errorf("sync after restart: %+v", sr)
	}
	// ... and the recovered sessions run: silent members, static ones
	// too, expire, and the group is Empty in the next generation.
	h.clock.Advance(testSession + time.Second)
	if s := h.snap(); s.state != StateEmpty || s.members != 0 || s.generation != 2 {
		t.Errorf("after sessions expired: %+v", s)
	}
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); len(o) != 2 {
		t.Errorf("offsets after the group emptied: %v", o)
	}
}

func TestRecordsUseKafkaSchemas(t *testing.T) {
	t.Parallel()
	key := offsetKey("g", tp("t", 3))
	want := []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 3}
	if string(key) != string(want) {
		t.Errorf("offset key % x, want % x", key, want)
	}
	if gk := groupKey("g"); string(gk) != string([]byte{0, 2, 0, 1, 'g'}) {
		t.Errorf("group key % x", gk)
	}
	v := offsetValue(OffsetAndMetadata{Offset: 5, LeaderEpoch: 2, Metadata: "x", CommitTime: time.UnixMilli(9)})
	d, err := decodeRecord(StoreRecord{Key: key, Value: v})
	if err != nil || d.group != "g" || d.offset.tp != tp("t", 3) || d.offset.value.Offset != 5 || d.offset.value.LeaderEpoch != 2 ||
		d.offset.value.Metadata != "x" || d.offset.value.CommitTime.UnixMilli() != 9 {
		t.Errorf("round trip: %+v %v", d, err)
	}
	if v[1] != 3 {
		t.Errorf("offset value version %d, want 3", v[1])
	}
	for _, bad := range []StoreRecord{{Key: []byte{0}}, {Key: []byte{0, 9, 0, 0}}, {Key: key, Value: []byte{0, 3, 1}}, {Key: []byte{0, 2, 0, 5}}} {
		if _, err := decodeRecord(bad); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("decode % x: %v", bad.Key, err)
		}
	}
	// An unreadable record among good ones is skipped (KIP-915: the
	// coordinator ignores record types it does not know), not fatal.
	store := &MemStore{}
	_ = store.Append(ctx, []StoreRecord{
		{Key: offsetKey("g1", tp("t", 0)), Value: offsetValue(OffsetAndMetadata{Offset: 1})},
		{Key: []byte{0, 9}},
		{Key: offsetKey("g2", tp("t", 0)), Value: offsetValue(OffsetAndMetadata{Offset: 2})},
	})
	c, err := New(Config{Store: store, Clock: newFakeClock(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New over a store with one unreadable record: %v", err)
	}
	defer c.Close()
	for g, want := range map[string]int64{"g1": 1, "g2": 2} {
		if o, _ := c.FetchOffsets(ctx, g, nil); o[tp("t", 0)].Offset != want {
			t.Errorf("%s after the skipped record: %v", g, o)
		}
	}
}
