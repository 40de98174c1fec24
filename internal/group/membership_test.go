package group

import (
	"context"
	"slices"
	"testing"
	"time"
)

var ctx = context.Background()

func delayed(t *testing.T) *harness {
	return newHarness(t, Config{InitialRebalanceDelay: 3 * time.Second})
}

func TestThreeMembersFormOneGeneration(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""), joinReq(""))
	leaders := 0
	for _, cl := range cs {
		if cl.generation != 1 {
			t.Errorf("member %s: generation %d, want 1", cl.id, cl.generation)
		}
		if cl.leader {
			leaders++
			if got, want := memberIDs(cl.members), memberIDs([]JoinMember{{MemberID: cs[0].id}, {MemberID: cs[1].id}, {MemberID: cs[2].id}}); !slices.Equal(got, want) {
				t.Errorf("leader's members %v, want %v", got, want)
			}
			for _, m := range cl.members {
				if string(m.Metadata) != string(consumerMeta("t")) {
					t.Errorf("leader got metadata %q for %s", m.Metadata, m.MemberID)
				}
			}
		} else if len(cl.members) != 0 {
			t.Errorf("follower %s got members", cl.id)
		}
		if string(cl.assignment) != "a-"+cl.id {
			t.Errorf("member %s assignment %q", cl.id, cl.assignment)
		}
	}
	if leaders != 1 || !cs[0].leader {
		t.Errorf("want the first member as the only leader; leaders=%d", leaders)
	}
	d := h.describe()
	if d.State != StateStable || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 3 {
		t.Fatalf("describe: %+v", d)
	}
	for i, m := range d.Members {
		if m.MemberID != cs[i].id || string(m.Assignment) != "a-"+cs[i].id || m.ClientID != "client" || m.ClientHost != "/127.0.0.1" {
			t.Errorf("describe member %d: %+v", i, m)
		}
	}
	for _, cl := range cs {
		if code := h.heartbeat(cl); code != CodeNone {
			t.Errorf("heartbeat %s: %v", cl.id, code)
		}
	}
}

func TestInitialDelayWaitsForMembers(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	first := h.joinAsync(joinReq(""))
	waitFor(t, "join", func() bool { return h.snap().awaiting == 1 })
	h.clock.Advance(2 * time.Second)
	pending(t, h, first)
	h.clock.Advance(time.Second) // no new member during the delay: done
	if r := recv(t, first); r.Code != CodeNone || r.Generation != 1 {
		t.Fatalf("join: %+v", r)
	}
}

func TestSessionExpiryRebalances(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""), joinReq(""))
	live, dead := cs[:2], cs[2]
	// Heartbeat the live members every 3s; the third goes silent.
	for range 3 {
		h.clock.Advance(3 * time.Second)
		for _, cl := range live {
			if code := h.heartbeat(cl); code != CodeNone {
				t.Fatalf("heartbeat: %v", code)
			}
		}
	}
	h.clock.Advance(3 * time.Second) // 12s: the silent member's 10s session is over
	if s := h.snap(); s.state != StatePreparingRebalance || s.members != 2 {
		t.Fatalf("after expiry: %+v", s)
	}
	if code := h.heartbeat(dead); code != CodeUnknownMemberID {
		t.Errorf("expired member's heartbeat: %v", code)
	}
	for _, cl := range live {
		if code := h.heartbeat(cl); code != CodeRebalanceInProgress {
			t.Errorf("live member's heartbeat: %v", code)
		}
	}
	next := h.rejoin(live...)
	for _, cl := range next {
		if cl.generation != 2 {
			t.Errorf("generation %d, want 2", cl.generation)
		}
	}
	h.syncAll(next)
	if s := h.snap(); s.state != StateStable || s.generation != 2 || s.members != 2 {
		t.Fatalf("after rebalance: %+v", s)
	}
}

func TestLeaveRebalances(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""), joinReq(""))
	resp := h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{
		{MemberID: cs[0].id, Reason: "shutdown"}, {MemberID: "nobody"},
	}})
	if resp.Code != CodeNone || resp.Members[0].Code != CodeNone || resp.Members[1].Code != CodeUnknownMemberID {
		t.Fatalf("leave: %+v", resp)
	}
	if s := h.snap(); s.state != StatePreparingRebalance || s.members != 2 || s.leader == cs[0].id {
		t.Fatalf("after leave: %+v", s)
	}
	next := h.rejoin(cs[1], cs[2])
	if next[0].generation != 2 || !next[0].leader || len(next[0].members) != 2 {
		t.Fatalf("new leader's join: %+v", next[0])
	}
	h.syncAll(next)
	// Everyone leaves: the group is Empty, in a new generation.
	h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: next[0].id}, {MemberID: next[1].id}}})
	if s := h.snap(); s.state != StateEmpty || s.generation != 3 || s.members != 0 {
		t.Fatalf("after all left: %+v", s)
	}
	resp = h.c.Leave(ctx, LeaveRequest{GroupID: "unknown", Members: []LeaveMember{{MemberID: "x"}}})
	if resp.Code != CodeNone || resp.Members[0].Code != CodeUnknownMemberID {
		t.Fatalf("leave of unknown group: %+v", resp)
	}
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""))
	// The leader rejoins: a rebalance. The follower keeps heartbeating but
	// never rejoins.
	r := cs[0].req
	r.MemberID = cs[0].id
	ch := h.joinAsync(r)
	waitFor(t, "rebalance", func() bool { return h.snap().awaiting == 1 })
	for range 6 {
		h.clock.Advance(3 * time.Second)
		if code := h.heartbeat(cs[1]); code != CodeRebalanceInProgress {
			t.Fatalf("follower heartbeat: %v", code)
		}
		pending(t, h, ch)
	}
	h.clock.Advance(2 * time.Second) // 20s: the rebalance timeout
	jr := recv(t, ch)
	if jr.Code != CodeNone || jr.Generation != 2 || len(jr.Members) != 1 {
		t.Fatalf("join after rebalance timeout: %+v", jr)
	}
	if code := h.heartbeat(cs[1]); code != CodeUnknownMemberID {
		t.Errorf("dropped member's heartbeat: %v", code)
	}
}

func TestSyncTimeoutRebalances(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	ch := h.joinAsync(joinReq(""))
	jr := recv(t, ch)
	// The leader never syncs but heartbeats: after the rebalance timeout it
	// is dropped and the group is Empty again.
	for range 6 {
		h.clock.Advance(3 * time.Second)
		if code := h.heartbeat(&client{id: jr.MemberID, generation: jr.Generation}); code != CodeNone {
			t.Fatalf("heartbeat before the sync deadline: %v", code)
		}
	}
	h.clock.Advance(3 * time.Second) // 21s
	if s := h.snap(); s.state != StateEmpty || s.members != 0 || s.generation != 2 {
		t.Fatalf("after sync timeout: %+v", s)
	}
}

func TestHeartbeatErrors(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(joinReq(""), joinReq(""))
	good := HeartbeatRequest{GroupID: testGroup, Generation: 1, MemberID: cs[1].id}
	tests := []struct {
		name string
		edit func(*HeartbeatRequest)
		want Code
	}{
		{"current", func(*HeartbeatRequest) {}, CodeNone},
		{"old generation", func(r *HeartbeatRequest) { r.Generation = 0 }, CodeIllegalGeneration},
		{"future generation", func(r *HeartbeatRequest) { r.Generation = 2 }, CodeIllegalGeneration},
		{"unknown member", func(r *HeartbeatRequest) { r.MemberID = "nobody" }, CodeUnknownMemberID},
		{"unknown instance", func(r *HeartbeatRequest) { r.InstanceID = "i9" }, CodeUnknownMemberID},
		{"unknown group", func(r *HeartbeatRequest) { r.GroupID = "other" }, CodeUnknownMemberID},
		{"no group id", func(r *HeartbeatRequest) { r.GroupID = "" }, CodeInvalidGroupID},
	}
	for _, tt := range tests {
		r := good
		tt.edit(&r)
		if got := h.c.Heartbeat(ctx, r); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	// During a rebalance (the leader rejoined) the current generation is
	// told to rejoin; a wrong one is still illegal.
	r := cs[0].req
	r.MemberID = cs[0].id
	ch := h.joinAsync(r)
	waitFor(t, "rebalance", func() bool { return h.snap().state == StatePreparingRebalance })
	if got := h.c.Heartbeat(ctx, good); got != CodeRebalanceInProgress {
		t.Errorf("during rebalance: %v", got)
	}
	bad := good
	bad.Generation = 0
	if got := h.c.Heartbeat(ctx, bad); got != CodeIllegalGeneration {
		t.Errorf("during rebalance, old generation: %v", got)
	}
	// Sync during the rebalance is refused too.
	if sr := h.c.Sync(ctx, SyncRequest{GroupID: testGroup, Generation: 1, MemberID: cs[1].id}); sr.Code != CodeRebalanceInProgress {
		t.Errorf("sync during rebalance: %v", sr.Code)
	}
	h.rejoin(cs[1])
	recv(t, ch)
}

func TestJoinValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	tests := []struct {
		name string
		edit func(*JoinRequest)
		want Code
	}{
		{"no group id", func(r *JoinRequest) { r.GroupID = "" }, CodeInvalidGroupID},
		{"session too short", func(r *JoinRequest) { r.SessionTimeout = time.Second }, CodeInvalidSessionTimeout},
		{"session too long", func(r *JoinRequest) { r.SessionTimeout = time.Hour }, CodeInvalidSessionTimeout},
		{"unknown member of unknown group", func(r *JoinRequest) { r.MemberID = "m" }, CodeUnknownMemberID},
		{"no protocols", func(r *JoinRequest) { r.Protocols = nil }, CodeInconsistentGroupProtocol},
		{"no protocol type", func(r *JoinRequest) { r.ProtocolType = "" }, CodeInconsistentGroupProtocol},
	}
	for _, tt := range tests {
		r := joinReq("")
		tt.edit(&r)
		if got := h.c.Join(ctx, r); got.Code != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got.Code, tt.want)
		}
	}
	if ls := h.c.List(ctx, nil); len(ls) != 0 {
		t.Errorf("failed joins left groups behind: %+v", ls)
	}
}

func TestMemberIDRequiredHandshake(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	r := joinReq("")
	r.RequireKnownMemberID = true
	first := h.c.Join(ctx, r)
	if first.Code != CodeMemberIDRequired || first.MemberID == "" || first.Generation != NoGeneration {
		t.Fatalf("first join: %+v", first)
	}
	if got := h.c.Join(ctx, joinReq("made-up")); got.Code != CodeUnknownMemberID {
		t.Errorf("join with an id never handed out: %v", got.Code)
	}
	r.MemberID = first.MemberID
	second := h.c.Join(ctx, r)
	if second.Code != CodeNone || second.MemberID != first.MemberID || second.Generation != 1 || second.Leader != first.MemberID {
		t.Fatalf("second join: %+v", second)
	}

	// An id handed out but not used within the session timeout expires.
	r2 := joinReq("")
	r2.RequireKnownMemberID = true
	third := h.c.Join(ctx, r2)
	if third.Code != CodeMemberIDRequired {
		t.Fatalf("third join: %+v", third)
	}
	h.heartbeat(&client{id: second.MemberID, generation: 1})
	h.clock.Advance(testSession + time.Second)
	r2.MemberID = third.MemberID
	if got := h.c.Join(ctx, r2); got.Code != CodeUnknownMemberID {
		t.Errorf("join with an expired pending id: %v", got.Code)
	}
}

func static(instance string, protocols ...string) JoinRequest {
	r := joinReq("", protocols...)
	r.InstanceID = instance
	return r
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(static("i1"), static("i2"))
	follower := cs[1]
	if follower.leader {
		t.Fatal("i2 should not lead")
	}
	// i2 restarts: a join with its instance id and no member id.
	jr := h.c.Join(ctx, static("i2"))
	if jr.Code != CodeNone || jr.MemberID == follower.id || jr.Generation != 1 || len(jr.Members) != 0 || jr.Protocol != "range" {
		t.Fatalf("static rejoin: %+v", jr)
	}
	if s := h.snap(); s.state != StateStable || s.generation != 1 {
		t.Fatalf("static rejoin rebalanced: %+v", s)
	}
	sr := h.c.Sync(ctx, SyncRequest{GroupID: testGroup, Generation: 1, MemberID: jr.MemberID, InstanceID: "i2"})
	if sr.Code != CodeNone || string(sr.Assignment) != "a-"+follower.id {
		t.Fatalf("sync after static rejoin: %+v", sr)
	}
	// The old incarnation is fenced.
	if code := h.heartbeat(follower); code != CodeFencedInstanceID {
		t.Errorf("old member id's heartbeat: %v", code)
	}
	old := *follower
	old.req.InstanceID = ""
	if code := h.heartbeat(&old); code != CodeUnknownMemberID {
		t.Errorf("old member id without instance: %v", code)
	}
	cr := h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: testGroup, Generation: 1, MemberID: follower.id, InstanceID: "i2",
		Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 5}}})
	if cr[TopicPartition{"t", 0}] != CodeFencedInstanceID {
		t.Errorf("old member id's commit: %v", cr)
	}
	lr := h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: follower.id, InstanceID: "i2"}}})
	if lr.Members[0].Code != CodeFencedInstanceID {
		t.Errorf("old member id's leave: %+v", lr)
	}
	// The replaced metadata survives a restart.
	h.restart()
	d := h.describe()
	if d.State != StateStable || len(d.Members) != 2 || d.Members[1].MemberID != jr.MemberID || d.Members[1].InstanceID != "i2" {
		t.Fatalf("after restart: %+v", d)
	}
	// An admin removes i1 by instance id alone.
	lr = h.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{InstanceID: "i1"}}})
	if lr.Members[0].Code != CodeNone || h.snap().members != 1 {
		t.Errorf("leave by instance id: %+v %+v", lr, h.snap())
	}
}

func TestStaticMemberRejoinWithNewProtocolRebalances(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(static("i1", "range", "roundrobin"), static("i2", "range", "roundrobin"))
	// i2 comes back preferring roundrobin: the votes tie, and the tie goes to
	// the first member's preference, so the protocol stays: no rebalance.
	jr := h.c.Join(ctx, static("i2", "roundrobin", "range"))
	if jr.Code != CodeNone || h.snap().state != StateStable {
		t.Fatalf("tie kept the protocol, yet: %+v %+v", jr, h.snap())
	}
	// i2 comes back supporting only roundrobin: the protocol must change.
	ch := h.joinAsync(static("i2", "roundrobin"))
	waitFor(t, "rebalance", func() bool { return h.snap().state == StatePreparingRebalance })
	if code := h.heartbeat(cs[0]); code != CodeRebalanceInProgress {
		t.Fatalf("heartbeat: %v", code)
	}
	cs[0].req.Protocols = cs[0].req.Protocols[1:] // i1 rejoins with roundrobin only too
	next := h.rejoin(cs[0])
	jr = recv(t, ch)
	if jr.Code != CodeNone || jr.Generation != 2 || jr.Protocol != "roundrobin" || next[0].generation != 2 {
		t.Fatalf("after protocol change: %+v", jr)
	}
}

func TestProtocolSelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		members [][]string
		want    string
	}{
		{"single", [][]string{{"range"}}, "range"},
		{"only common one", [][]string{{"roundrobin", "range"}, {"sticky", "range"}, {"range", "roundrobin"}}, "range"},
		{"most votes", [][]string{{"sticky", "range"}, {"range", "sticky"}, {"range", "sticky"}}, "range"},
		{"most votes, not first member's", [][]string{{"sticky", "range"}, {"range", "sticky"}, {"range", "sticky"}, {"sticky", "range"}, {"range", "sticky"}}, "range"},
		{"tie goes to first member", [][]string{{"sticky", "range"}, {"range", "sticky"}}, "sticky"},
		{"vote skips unsupported", [][]string{{"cooperative-sticky", "sticky", "range"}, {"sticky", "range"}, {"range"}}, "range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := delayed(t)
			var reqs []JoinRequest
			for _, ps := range tt.members {
				reqs = append(reqs, joinReq("", ps...))
			}
			h.form(reqs...)
			if d := h.describe(); d.Protocol != tt.want {
				t.Errorf("protocol %q, want %q", d.Protocol, tt.want)
			}
		})
	}
}

func TestInconsistentGroupProtocol(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	cs := h.form(joinReq("", "range", "roundrobin"))
	if got := h.c.Join(ctx, joinReq("", "sticky")); got.Code != CodeInconsistentGroupProtocol {
		t.Errorf("disjoint protocols: %v", got.Code)
	}
	r := joinReq("", "range")
	r.ProtocolType = "connect"
	if got := h.c.Join(ctx, r); got.Code != CodeInconsistentGroupProtocol {
		t.Errorf("other protocol type: %v", got.Code)
	}
	if s := h.snap(); s.state != StateStable || s.members != 1 {
		t.Errorf("refused joins changed the group: %+v", s)
	}
	// A sync naming another protocol is refused too.
	sr := h.c.Sync(ctx, SyncRequest{GroupID: testGroup, Generation: 1, MemberID: cs[0].id, Protocol: "sticky"})
	if sr.Code != CodeInconsistentGroupProtocol {
		t.Errorf("sync with another protocol: %v", sr.Code)
	}
}

func TestDescribeAndList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	h.form(joinReq(""))
	h.c.CommitOffsets(ctx, OffsetCommitRequest{GroupID: "simple", Generation: NoGeneration,
		Offsets: map[TopicPartition]OffsetAndMetadata{{"t", 0}: {Offset: 1}}})
	ds := h.c.Describe(ctx, []string{testGroup, "simple", "nope", ""})
	want := []struct {
		state State
		code  Code
	}{{StateStable, CodeNone}, {StateEmpty, CodeNone}, {StateDead, CodeNone}, {StateDead, CodeInvalidGroupID}}
	for i, w := range want {
		if ds[i].State != w.state || ds[i].Code != w.code {
			t.Errorf("describe %q: %v %v, want %v %v", ds[i].GroupID, ds[i].State, ds[i].Code, w.state, w.code)
		}
	}
	all := h.c.List(ctx, nil)
	if len(all) != 2 || all[0].GroupID != testGroup || all[0].ProtocolType != "consumer" || all[1].GroupID != "simple" || all[1].State != StateEmpty {
		t.Errorf("list: %+v", all)
	}
	if got := h.c.List(ctx, []State{StateEmpty}); len(got) != 1 || got[0].GroupID != "simple" {
		t.Errorf("list Empty: %+v", got)
	}
	for _, name := range []string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"} {
		if s, ok := ParseState(name); !ok || s.String() != name {
			t.Errorf("ParseState(%q) = %v, %v", name, s, ok)
		}
	}
	if s, ok := ParseState("stable"); !ok || s != StateStable {
		t.Errorf("ParseState is case-insensitive")
	}
}

func TestCloseAnswersParkedJoins(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	ch := h.joinAsync(joinReq(""))
	waitFor(t, "join", func() bool { return h.snap().awaiting == 1 })
	h.c.Close()
	if r := recv(t, ch); r.Code != CodeCoordinatorNotAvailable {
		t.Fatalf("parked join after Close: %+v", r)
	}
	if code := h.heartbeat(&client{id: "x"}); code != CodeCoordinatorNotAvailable {
		t.Errorf("heartbeat after Close: %v", code)
	}
}

func TestJoinHonoursContext(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cctx, cancel := context.WithCancel(ctx)
	ch := make(chan JoinResponse, 1)
	go func() { ch <- h.c.Join(cctx, joinReq("")) }()
	waitFor(t, "join", func() bool { return h.snap().awaiting == 1 })
	cancel()
	if r := recv(t, ch); r.Code != CodeCoordinatorNotAvailable {
		t.Fatalf("cancelled join: %+v", r)
	}
}

func TestManyMembersJoinInOneRebalance(t *testing.T) {
	t.Parallel()
	const n = 200
	h := delayed(t)
	chans := make([]<-chan JoinResponse, n)
	for i := range chans {
		chans[i] = h.joinAsync(joinReq(""))
	}
	waitFor(t, "all joins", func() bool { return h.snap().awaiting == n })
	for i := 0; h.snap().state == StatePreparingRebalance; i++ {
		if i == 10 {
			t.Fatal("join phase did not end")
		}
		h.clock.Advance(3 * time.Second)
	}
	leaders := 0
	for _, ch := range chans {
		r := recv(t, ch)
		if r.Code != CodeNone || r.Generation != 1 {
			t.Fatalf("join: %v generation %d", r.Code, r.Generation)
		}
		if len(r.Members) == n {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders", leaders)
	}
}

// TestSystemClock runs a session expiry on the real clock, to cover the
// timer path that production uses (timers firing on their own goroutines).
func TestSystemClock(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Store: &MemStore{}, GroupMinSessionTimeout: time.Millisecond, InitialRebalanceDelay: -1,
		Logger: newHarness(t, Config{}).cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := joinReq("")
	r.SessionTimeout, r.RebalanceTimeout = 20*time.Millisecond, 20*time.Millisecond
	jr := c.Join(ctx, r)
	if jr.Code != CodeNone {
		t.Fatalf("join: %v", jr.Code)
	}
	// No sync, no heartbeat: the sync deadline drops the member.
	waitFor(t, "the member to expire", func() bool {
		return c.Describe(ctx, []string{testGroup})[0].State == StateEmpty
	})
	if code := c.Heartbeat(ctx, HeartbeatRequest{GroupID: testGroup, Generation: jr.Generation, MemberID: jr.MemberID}); code != CodeUnknownMemberID {
		t.Errorf("heartbeat of an expired member: %v", code)
	}
}

func TestStaticMemberReplacedMidRebalanceFencesParkedJoin(t *testing.T) {
	t.Parallel()
	h := delayed(t)
	cs := h.form(static("i1"), static("i2"))
	r := cs[0].req
	r.MemberID = cs[0].id
	old := h.joinAsync(r) // the leader rejoins: a rebalance
	waitFor(t, "rebalance", func() bool { return h.snap().awaiting == 1 })
	fresh := h.joinAsync(static("i1")) // i1 restarts meanwhile
	if got := recv(t, old); got.Code != CodeFencedInstanceID {
		t.Fatalf("old incarnation's parked join: %+v", got)
	}
	next := h.rejoin(cs[1])
	got := recv(t, fresh)
	if got.Code != CodeNone || got.Generation != 2 || next[0].generation != 2 || got.MemberID == cs[0].id {
		t.Fatalf("after the rebalance: %+v %+v", got, next[0])
	}
	if s := h.snap(); s.members != 2 || s.state != StateCompletingRebalance {
		t.Fatalf("group: %+v", s)
	}
}
