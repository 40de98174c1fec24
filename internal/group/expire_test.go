package group

import (
	"testing"
	"time"
)

const testRetention = time.Hour

// TestSimpleCommitsExpire: an offsets-only group's offsets expire one
// retention after their own commit, each on its own clock; the last one
// takes the group with it, and the removal survives a restart.
func TestSimpleCommitsExpire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{OffsetsRetention: testRetention})
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 0), 1)})
	h.clock.Advance(30 * time.Minute)
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 1), 2)})
	h.clock.Advance(30*time.Minute - time.Second)
	if n := h.c.ExpireOffsets(ctx); n != 0 {
		t.Fatalf("expired %d offsets a second before the first is due", n)
	}
	h.clock.Advance(time.Second)
	if n := h.c.ExpireOffsets(ctx); n != 1 {
		t.Fatalf("expired %d offsets, want t-0 alone", n)
	}
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); len(o) != 1 || o[tp("t", 1)].Offset != 2 {
		t.Fatalf("offsets left: %v", o)
	}
	h.clock.Advance(30 * time.Minute)
	if n := h.c.ExpireOffsets(ctx); n != 1 {
		t.Fatalf("expired %d offsets, want t-1", n)
	}
	if l := h.c.List(ctx, nil); len(l) != 0 {
		t.Fatalf("group without offsets or members still listed: %+v", l)
	}
	h.restart()
	if o, _ := h.c.FetchOffsets(ctx, testGroup, nil); len(o) != 0 {
		t.Fatalf("expired offsets back after restart: %v", o)
	}
	if l := h.c.List(ctx, nil); len(l) != 0 {
		t.Fatalf("expired group back after restart: %+v", l)
	}
}

// TestGroupOffsetsExpireAfterItEmpties: while a consumer group has members,
// the offsets of topics they subscribe to never expire, however old; other
// topics' offsets do. Once the last member leaves, the clock for the rest
// starts then, not at their commit, and a restart keeps that clock.
func TestGroupOffsetsExpireAfterItEmpties(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{OffsetsRetention: testRetention, GroupMaxSessionTimeout: 2 * testRetention})
	long := joinReq("")
	long.SessionTimeout = 2 * testRetention // heartbeats below come an hour apart
	cs := h.form(long)
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: cs[0].generation, MemberID: cs[0].id,
		Offsets: offsets(tp("t", 0), 5, tp("old", 0), 7)})
	for range 3 { // two retentions pass with the member alive
		h.clock.Advance(testRetention - time.Second)
		if code := h.heartbeat(cs[0]); code != CodeNone {
			t.Fatalf("heartbeat: %v", code)
		}
		h.c.ExpireOffsets(ctx)
	}
	o, _ := h.c.FetchOffsets(ctx, testGroup, nil)
	if len(o) != 1 || o[tp("t", 0)].Offset != 5 {
		t.Fatalf("with a member subscribed to t: %v; want t-0 kept and old-0 expired", o)
	}
	if r := h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: cs[0].id}}}); r.Code != CodeNone {
		t.Fatalf("leave: %+v", r)
	}
	if s := h.snap(); s.state != StateEmpty {
		t.Fatalf("after the last member left: %+v", s)
	}
	h.clock.Advance(testRetention / 2)
	h.restart() // the time the group emptied is in its stored metadata
	if n := h.c.ExpireOffsets(ctx); n != 0 {
		t.Fatalf("expired %d offsets half a retention after the group emptied", n)
	}
	h.clock.Advance(testRetention / 2)
	if n := h.c.ExpireOffsets(ctx); n != 1 {
		t.Fatalf("expired %d offsets a retention after the group emptied, want 1", n)
	}
	if l := h.c.List(ctx, nil); len(l) != 0 {
		t.Fatalf("empty group without offsets still listed: %+v", l)
	}
}

// TestNegativeRetentionKeepsOffsets: offsets.retention.minutes < 0 never
// expires anything.
func TestNegativeRetentionKeepsOffsets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{OffsetsRetention: -1})
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: NoGeneration, Offsets: offsets(tp("t", 0), 1)})
	h.clock.Advance(1000 * DefaultOffsetsRetention)
	if n := h.c.ExpireOffsets(ctx); n != 0 {
		t.Fatalf("expired %d offsets with retention off", n)
	}
}
