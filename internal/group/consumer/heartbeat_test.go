package consumer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

var sixOfA = map[string]int32{"a": 6, "b": 2}

// TestHeartbeatErrors covers every refusal, in Kafka's order of checks.
func TestHeartbeatErrors(t *testing.T) {
	t.Parallel()
	withA := func(h *harness) { h.ok(joinReq("m1", "a")) }
	withStatic := func(h *harness) {
		r := joinReq("m1", "a")
		r.InstanceID = str("i1")
		h.ok(r)
	}
	tests := []struct {
		name  string
		setup func(*harness)
		req   func() Request
		code  Code
		msg   string
	}{
		{"member id empty", nil, func() Request { r := joinReq("", "a"); return r }, InvalidRequest, "MemberId can't be empty."},
		{"member id blank on heartbeat", withA, func() Request { return beatReq(" ", 1, nil) }, InvalidRequest, "MemberId can't be empty."},
		{"group id empty", nil, func() Request { r := joinReq("m1", "a"); r.GroupID = " "; return r }, InvalidRequest, "GroupId can't be empty."},
		{"instance id empty", nil, func() Request { r := joinReq("m1", "a"); r.InstanceID = str(""); return r }, InvalidRequest, "InstanceId can't be empty."},
		{"rack id empty", nil, func() Request { r := joinReq("m1", "a"); r.RackID = str(""); return r }, InvalidRequest, "RackId can't be empty."},
		{"join without rebalance timeout", nil, func() Request { r := joinReq("m1", "a"); r.RebalanceTimeoutMs = -1; return r }, InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"join with null owned", nil, func() Request { r := joinReq("m1", "a"); r.Owned = nil; return r }, InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"join owning partitions", nil, func() Request { r := joinReq("m1", "a"); r.Owned = ps("a", 0); return r }, InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"join without subscription", nil, func() Request { r := joinReq("m1"); r.Topics = nil; return r }, InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance", withA, func() Request { return beatReq("m1", StaticLeaveEpoch, nil) }, InvalidRequest, "InstanceId can't be null."},
		{"epoch below -2", withA, func() Request { return beatReq("m1", -3, nil) }, InvalidRequest, "MemberEpoch is invalid."},
		{"unsupported assignor", nil, func() Request { r := joinReq("m1", "a"); r.ServerAssignor = str("sticky"); return r }, UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
		{"bad regex", nil, func() Request { r := joinReq("m1"); r.Topics = nil; r.Regex = str("a("); return r }, InvalidRegularExpression, "SubscribedTopicRegex `a(` is not a valid regular expression"},
		{"heartbeat to no group", nil, func() Request { return beatReq("m1", 1, nil) }, GroupIDNotFound, "Group g not found."},
		{"unknown member", withA, func() Request { return beatReq("m2", 1, nil) }, UnknownMemberID, "Member m2 is not a member of group g."},
		{"unknown member leaving", withA, func() Request { return beatReq("m2", LeaveEpoch, nil) }, UnknownMemberID, "Member m2 is not a member of group g."},
		{"epoch ahead", withA, func() Request { return beatReq("m1", 2, nil) }, FencedMemberEpoch, "The consumer group member has a greater member epoch (2)"},
		{"epoch behind, not previous", func(h *harness) {
			withA(h)
			h.ok(joinReq("m2", "a"))
			settle(t, h)
			h.ok(joinReq("m3", "a"))
			settle(t, h)
		}, func() Request { return beatReq("m1", 1, []assign.Partition{}) }, FencedMemberEpoch, "The consumer group member has a smaller member epoch (1)"},
		{"previous epoch owning more", func(h *harness) {
			withA(h)
			h.ok(joinReq("m2", "a"))
			h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5)))
			h.ok(beatReq("m1", 1, ps("a", 0, 1, 2)))
		}, func() Request { return beatReq("m1", 1, ps("a", 0, 1, 2, 3)) }, FencedMemberEpoch, "smaller member epoch (1)"},
		{"previous epoch, owned null", func(h *harness) {
			withA(h)
			h.ok(joinReq("m2", "a"))
			h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5)))
			h.ok(beatReq("m1", 1, ps("a", 0, 1, 2)))
		}, func() Request { return beatReq("m1", 1, nil) }, FencedMemberEpoch, "smaller member epoch (1)"},
		{"group full", withA, func() Request { return joinReq("m2", "a") }, GroupMaxSizeReached, "The consumer group has reached its maximum capacity of 1 members."},
		{"full group before unknown member", withA, func() Request { return beatReq("m9", 3, nil) }, GroupMaxSizeReached, "maximum capacity of 1 members."},
		{"heartbeat with an unknown instance", withStatic, func() Request { r := beatReq("m1", 1, nil); r.InstanceID = str("i9"); return r }, UnknownMemberID, "Instance id i9 is unknown."},
		{"static leave for good, unknown instance", withStatic, func() Request { r := beatReq("m1", LeaveEpoch, nil); r.InstanceID = str("i9"); return r }, UnknownMemberID, "Instance id i9 is unknown."},
		{"instance id held by a live member", withStatic, func() Request { r := joinReq("m2", "a"); r.InstanceID = str("i1"); return r }, UnreleasedInstanceID,
			"Static member m2 with instance id i1 cannot join the group because the instance id is owned by m1 member."},
		{"instance id of another member on heartbeat", withStatic, func() Request { r := beatReq("m2", 1, nil); r.InstanceID = str("i1"); return r }, FencedInstanceID,
			"Static member m2 with instance id i1 was fenced by member m1."},
		{"static leave of unknown instance", withStatic, func() Request { r := beatReq("m1", StaticLeaveEpoch, nil); r.InstanceID = str("i9"); return r }, UnknownMemberID, "Instance id i9 is unknown."},
		{"static leave by another member", withStatic, func() Request { r := beatReq("m2", StaticLeaveEpoch, nil); r.InstanceID = str("i1"); return r }, FencedInstanceID,
			"Static member m2 with instance id i1 was fenced by member m1."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{}
			if tc.code == GroupMaxSizeReached || strings.HasPrefix(tc.name, "full group") {
				cfg.MaxSize = 1
			}
			h := newHarness(t, cfg, sixOfA)
			if tc.setup != nil {
				tc.setup(h)
			}
			before := h.g
			resp := h.do(tc.req())
			if resp.Code != tc.code || !strings.Contains(resp.Message, tc.msg) {
				t.Fatalf("got %d %q, want %d %q", resp.Code, resp.Message, tc.code, tc.msg)
			}
			if h.g != before {
				t.Fatal("an error replaced the group")
			}
		})
	}
}

// TestTwoConsumersRebalance: the second member waits for the first to revoke
// before it gets anything (revoke before assign), and both end stable.
func TestTwoConsumersRebalance(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, sixOfA)
	r := h.ok(joinReq("m1", "a"))
	if r.MemberEpoch != 1 || !slices.Equal(r.Assignment, ps("a", 0, 1, 2, 3, 4, 5)) || r.HeartbeatInterval != 5*time.Second {
		t.Fatalf("first join: %+v", r)
	}
	if h.g.State() != StableGroup {
		t.Fatalf("state %v", h.g.State())
	}
	r = h.ok(joinReq("m2", "a"))
	if r.MemberEpoch != 2 || len(r.Assignment) != 0 || h.member("m2").State != UnreleasedPartitions {
		t.Fatalf("second join should wait for unreleased partitions: %+v\n%s", r, dump(h.g))
	}
	if h.g.State() != Reconciling {
		t.Fatalf("state %v", h.g.State())
	}
	// m2 asks again before m1 revoked: still nothing, no change.
	if r = h.ok(beatReq("m2", 2, []assign.Partition{})); r.Assignment != nil {
		t.Fatalf("m2 got %v while m1 holds everything", r.Assignment)
	}
	r = h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5)))
	keep := h.g.Target["m1"]
	if r.MemberEpoch != 1 || !slices.Equal(r.Assignment, keep) || h.member("m1").State != UnrevokedPartitions {
		t.Fatalf("m1 should be told to revoke, at epoch 1: %+v\n%s", r, dump(h.g))
	}
	// Not yet revoked: it keeps reporting everything.
	if r = h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5))); r.MemberEpoch != 1 {
		t.Fatalf("%+v", r)
	}
	r = h.ok(beatReq("m1", 1, keep))
	if r.MemberEpoch != 2 || h.member("m1").State != Stable {
		t.Fatalf("m1 after revoking: %+v\n%s", r, dump(h.g))
	}
	r = h.ok(beatReq("m2", 2, []assign.Partition{}))
	if !slices.Equal(r.Assignment, h.g.Target["m2"]) || len(r.Assignment) != 3 {
		t.Fatalf("m2 after release: %+v\n%s", r, dump(h.g))
	}
	if h.g.State() != StableGroup {
		t.Fatalf("state %v\n%s", h.g.State(), dump(h.g))
	}
}

// settle heartbeats every member, acknowledging what it was told, until the
// group is stable, and returns the rounds it took.
func settle(t testing.TB, h *harness) int {
	t.Helper()
	owned := map[string][]assign.Partition{}
	for id, m := range h.g.Members {
		owned[id] = m.Assigned
	}
	for round := 1; round <= 5; round++ {
		for _, id := range sortedIDs(h.g) {
			m := h.g.Members[id]
			if m.Epoch == StaticLeaveEpoch {
				continue
			}
			r := h.ok(beatReq(id, m.Epoch, orEmpty(owned[id])))
			if r.Assignment != nil {
				owned[id] = r.Assignment
			}
		}
		if h.g.State() == StableGroup {
			return round
		}
	}
	t.Fatalf("not stable after 5 rounds:\n%s", dump(h.g))
	return 0
}

func sortedIDs(g *Group) []string {
	var ids []string
	for id := range g.Members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestLeaveReassigns: a leaving member's partitions go to the others at once,
// and the leave bumps the group epoch.
func TestLeaveReassigns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, sixOfA)
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	settle(t, h)
	epoch := h.g.Epoch
	if r := h.ok(beatReq("m2", h.member("m2").Epoch, nil)); r.MemberEpoch != epoch {
		t.Fatalf("%+v", r)
	}
	r := h.ok(beatReq("m1", LeaveEpoch, nil))
	if r.MemberEpoch != LeaveEpoch || h.g.Epoch != epoch+1 || len(h.g.Members) != 1 {
		t.Fatalf("leave: %+v\n%s", r, dump(h.g))
	}
	r = h.ok(beatReq("m2", epoch, nil))
	if r.MemberEpoch != epoch+1 || len(r.Assignment) != 6 {
		t.Fatalf("m2 after the leave: %+v\n%s", r, dump(h.g))
	}
	h.ok(beatReq("m2", LeaveEpoch, nil))
	if h.g.State() != Empty {
		t.Fatalf("state %v", h.g.State())
	}
}

// TestLostResponse: a member whose response was lost heartbeats with its
// previous epoch and what it owned; it is answered, not fenced.
func TestLostResponse(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, sixOfA)
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	h.ok(beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5)))
	keep := h.g.Target["m1"]
	h.ok(beatReq("m1", 1, keep)) // epoch 2; say this response is lost
	// The retry reports exactly its assignment, so only the epoch is news.
	r := h.ok(beatReq("m1", 1, keep))
	if r.MemberEpoch != 2 || (r.Assignment != nil && !slices.Equal(r.Assignment, keep)) {
		t.Fatalf("retry at the previous epoch: %+v", r)
	}
}

// TestSessionAndRebalanceTimeouts: Expire removes a silent member at its
// session deadline, and fences one that does not revoke within its rebalance
// timeout; the others then get its partitions.
func TestSessionAndRebalanceTimeouts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{SessionTimeout: 10 * time.Second}, sixOfA)
	h.ok(joinReq("m1", "a"))
	h.now = h.now.Add(9 * time.Second)
	h.ok(joinReq("m2", "a"))
	if gone := h.expire(); gone != nil {
		t.Fatalf("expired early: %v", gone)
	}
	if d := h.g.NextDeadline(); !d.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next deadline %v", d)
	}
	h.now = t0.Add(10 * time.Second)
	if gone := h.expire(); !slices.Equal(gone, []string{"m1"}) {
		t.Fatalf("expired %v", gone)
	}
	if r := h.ok(beatReq("m2", 2, []assign.Partition{})); len(r.Assignment) != 6 {
		t.Fatalf("m2 after m1 expired: %+v", r)
	}

	// Rebalance timeout: m3 joins, m2 is told to revoke and never does.
	h.ok(joinReq("m3", "a"))
	h.ok(beatReq("m2", h.member("m2").Epoch, ps("a", 0, 1, 2, 3, 4, 5)))
	if h.member("m2").State != UnrevokedPartitions {
		t.Fatalf("\n%s", dump(h.g))
	}
	h.now = h.now.Add(5 * time.Second)
	h.ok(beatReq("m2", h.member("m2").Epoch, ps("a", 0, 1, 2, 3, 4, 5))) // alive, not revoking
	h.ok(beatReq("m3", h.member("m3").Epoch, []assign.Partition{}))
	h.now = h.now.Add(25 * time.Second) // 30 s after the revocation started
	if gone := h.expire(); !slices.Contains(gone, "m2") {
		t.Fatalf("m2 not fenced: %v\n%s", gone, dump(h.g))
	}
	if r := h.do(beatReq("m2", 3, nil)); r.Code != UnknownMemberID {
		t.Fatalf("fenced m2 heartbeat: %+v", r)
	}
}

// TestStaticMembership: a static member leaving with -2 keeps its place and
// partitions without an epoch bump; a new member id with its instance id
// takes them over; its session end removes it.
func TestStaticMembership(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{SessionTimeout: 10 * time.Second}, sixOfA)
	j := joinReq("m1", "a")
	j.InstanceID = str("i1")
	h.ok(j)
	h.ok(joinReq("m2", "a"))
	settle(t, h)
	epoch, held := h.g.Epoch, h.member("m1").Assigned
	leave := beatReq("m1", h.member("m1").Epoch, nil)
	leave.MemberEpoch, leave.InstanceID = StaticLeaveEpoch, str("i1")
	if r := h.ok(leave); r.MemberEpoch != StaticLeaveEpoch || h.g.Epoch != epoch {
		t.Fatalf("static leave: %+v epoch %d", r, h.g.Epoch)
	}
	// m2 gets nothing of m1's meanwhile.
	if r := h.ok(beatReq("m2", epoch, h.member("m2").Assigned)); r.Assignment != nil {
		t.Fatalf("m2 took reserved partitions: %+v", r)
	}
	j = joinReq("m1b", "a")
	j.InstanceID = str("i1")
	r := h.ok(j)
	if r.MemberEpoch != epoch || !slices.Equal(r.Assignment, held) || h.g.Epoch != epoch {
		t.Fatalf("replacement: %+v\n%s", r, dump(h.g))
	}
	if _, ok := h.g.Members["m1"]; ok {
		t.Fatal("replaced member still there")
	}
	// The same instance leaving temporarily and never coming back.
	leave = beatReq("m1b", epoch, nil)
	leave.MemberEpoch, leave.InstanceID = StaticLeaveEpoch, str("i1")
	h.ok(leave)
	h.now = h.now.Add(10 * time.Second)
	h.ok(beatReq("m2", epoch, h.member("m2").Assigned))
	if gone := h.expire(); !slices.Equal(gone, []string{"m1b"}) {
		t.Fatalf("expired %v", gone)
	}
	if r := h.ok(beatReq("m2", epoch, h.member("m2").Assigned)); len(r.Assignment) != 6 {
		t.Fatalf("m2 after the static member expired: %+v", r)
	}
}

// TestSubscriptionChange: changing topics bumps the epoch and moves the
// member to the new topic's partitions.
func TestSubscriptionChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, sixOfA)
	h.ok(joinReq("m1", "a"))
	req := beatReq("m1", 1, ps("a", 0, 1, 2, 3, 4, 5))
	req.Topics = []string{"b"}
	r := h.ok(req)
	if h.g.Epoch != 2 || r.MemberEpoch != 1 || len(r.Assignment) != 0 || h.member("m1").State != UnrevokedPartitions {
		t.Fatalf("%+v\n%s", r, dump(h.g))
	}
	r = h.ok(beatReq("m1", 1, []assign.Partition{}))
	if r.MemberEpoch != 2 || !slices.Equal(r.Assignment, ps("b", 0, 1)) {
		t.Fatalf("%+v\n%s", r, dump(h.g))
	}
	// A topic growing bumps the epoch at the next heartbeat.
	h.topics = map[string]int32{"a": 6, "b": 3}
	r = h.ok(beatReq("m1", 2, ps("b", 0, 1)))
	if h.g.Epoch != 3 || r.MemberEpoch != 3 || !slices.Equal(r.Assignment, ps("b", 0, 1, 2)) {
		t.Fatalf("%+v\n%s", r, dump(h.g))
	}
}

// TestAssignorChoice: the assignor most members ask for wins; range then
// co-partitions.
func TestAssignorChoice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, map[string]int32{"a": 3, "b": 3})
	j := joinReq("m1", "a", "b")
	j.ServerAssignor = str("range")
	h.ok(j)
	h.ok(joinReq("m2", "a", "b"))
	if got := h.e.chooseAssignor(h.g).Name(); got != "range" {
		t.Fatalf("chose %s", got)
	}
	settle(t, h)
	if want := append(ps("a", 0, 1), ps("b", 0, 1)...); !slices.Equal(h.g.Target["m1"], want) {
		t.Fatalf("range target %v", h.g.Target)
	}
}

// TestRegexSubscription: a regex is resolved against the cluster's topics,
// full match.
func TestRegexSubscription(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, map[string]int32{"orders": 2, "orders-dlq": 1, "xorders": 1})
	j := joinReq("m1")
	j.Topics, j.Regex = nil, str("orders.*")
	r := h.ok(j)
	if want := append(ps("orders", 0, 1), ps("orders-dlq", 0)...); !slices.Equal(r.Assignment, want) {
		t.Fatalf("%v", r.Assignment)
	}
	// A new matching topic is noticed at the metadata refresh (10 s).
	h.topics = map[string]int32{"orders": 2, "orders-dlq": 1, "xorders": 1, "orders-eu": 1}
	h.now = h.now.Add(9 * time.Second)
	if r = h.ok(beatReq("m1", 1, r.Assignment)); r.MemberEpoch != 1 {
		t.Fatalf("noticed before the refresh: %+v", r)
	}
	h.now = h.now.Add(time.Second)
	if r = h.ok(beatReq("m1", 1, h.member("m1").Assigned)); r.MemberEpoch != 2 || !slices.Contains(r.Assignment, ps("orders-eu", 0)[0]) {
		t.Fatalf("not noticed at the refresh: %+v", r)
	}
}

// TestThreeMembersStateTransitions walks a group through Empty, Stable,
// Assigning-then-Reconciling and back to Stable as members join, and checks
// that a member reporting it already dropped what it must give up skips the
// revocation round.
func TestThreeMembersStateTransitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{}, map[string]int32{"a": 9})
	if NewGroup("g").State() != Empty {
		t.Fatal("new group not empty")
	}
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	settle(t, h)
	if h.g.State() != StableGroup {
		t.Fatalf("state %v", h.g.State())
	}
	h.ok(joinReq("m3", "a"))
	if h.g.State() != Reconciling || h.member("m3").State != UnreleasedPartitions {
		t.Fatalf("state %v\n%s", h.g.State(), dump(h.g))
	}
	// m1 drops what it must give up before being asked (it reports only its
	// target): it moves to the new epoch at once.
	m1 := h.member("m1")
	r := h.ok(beatReq("m1", m1.Epoch, h.g.Target["m1"]))
	if r.MemberEpoch != h.g.AssignmentEpoch || h.member("m1").State != Stable {
		t.Fatalf("m1 should skip the revocation round: %+v\n%s", r, dump(h.g))
	}
	if rounds := settle(t, h); rounds > 2 {
		t.Fatalf("%d rounds", rounds)
	}
	for id, m := range h.g.Members {
		if len(m.Assigned) != 3 || !slices.Equal(m.Assigned, h.g.Target[id]) {
			t.Fatalf("\n%s", dump(h.g))
		}
	}
}

// TestIncrementalJoinFigures is B-T4 on the engine: 10 members settled on
// 120 partitions, an 11th joins. A partition that ends with its old owner is
// owned by it at every step (no consumption gap), at most 11 move (10 is
// ideal), and the moved ones are unowned for at most one heartbeat round;
// classic eager range revokes all 120 and moves 55.
func TestIncrementalJoinFigures(t *testing.T) {
	t.Parallel()
	parts := map[string]int32{"t": 120}
	for _, assignor := range []string{"uniform", "range"} {
		h := newHarness(t, Config{}, parts)
		join := func(id string) {
			j := joinReq(id, "t")
			j.ServerAssignor = str(assignor)
			h.ok(j)
		}
		for i := range 10 {
			join(fmt.Sprintf("m%02d", i))
		}
		settle(t, h)
		before := h.g.Owners()
		join("m10")
		var history []map[assign.Partition]string // owners after every heartbeat
		gapRounds, rounds := 0, 0
		for h.g.State() != StableGroup {
			if rounds++; rounds > 4 {
				t.Fatalf("not stable:\n%s", dump(h.g))
			}
			for _, id := range sortedIDs(h.g) {
				m := h.g.Members[id]
				h.ok(beatReq(id, m.Epoch, orEmpty(m.Assigned)))
				history = append(history, h.g.Owners())
			}
			if len(history[len(history)-1]) < 120 {
				gapRounds++
			}
		}
		after := h.g.Owners()
		moved := 0
		for p, owner := range after {
			if before[p] != owner {
				moved++
				continue
			}
			for _, owners := range history {
				if owners[p] != owner {
					t.Fatalf("%s: %v stayed with %s but was owned by %q meanwhile", assignor, p, owner, owners[p])
				}
			}
		}
		if moved > 11 || len(after) != 120 {
			t.Fatalf("%s: moved %d, %d owned", assignor, moved, len(after))
		}
		t.Logf("%s: 10→11 members on 120 partitions: %d moved, %d consumed throughout, stable in %d rounds, %d round(s) ending with a moved partition unowned",
			assignor, moved, 120-moved, rounds, gapRounds)
	}
	var ten, eleven []assign.Member
	for i := range 11 {
		m := assign.Member{ID: fmt.Sprintf("m%02d", i), Topics: []string{"t"}}
		if i < 10 {
			ten = append(ten, m)
		}
		eleven = append(eleven, m)
	}
	classic := assign.Moves(assign.Range{}.Assign(ten, parts), assign.Range{}.Assign(eleven, parts))
	t.Logf("classic eager range: all 120 revoked and paused, %d moved", classic)
}
