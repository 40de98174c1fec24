package group

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestPropertyRandomMembership drives a group with random joins, syncs,
// heartbeats, leaves and clock jumps from a handful of clients (dynamic and
// static, using the KIP-394 handshake), and checks the group's invariants
// after every step:
//
//   - the generation never goes back;
//   - Empty has no members; CompletingRebalance and Stable have a leader
//     among the members; only PreparingRebalance has members parked in a join;
//   - every static instance maps to a member with that instance id;
//   - in Stable, every member has an assignment, and it is what the leader
//     of that generation assigned;
//   - clients that a heartbeat confirms as current (NONE) all believe the
//     same generation, the group's, and those holding an assignment hold the
//     one the group has for them.
func TestPropertyRandomMembership(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		clock := newFakeClock()
		c, err := New(Config{Store: &MemStore{}, Clock: clock, InitialRebalanceDelay: -1,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			rt.Fatal(err)
		}
		defer c.Close()
		p := &propRun{rt: rt, c: c, clock: clock, assigned: map[Generation]map[string]string{}}
		n := rapid.IntRange(1, 4).Draw(rt, "clients")
		for i := range n {
			cl := &propClient{}
			if rapid.Bool().Draw(rt, fmt.Sprintf("static%d", i)) {
				cl.instance = fmt.Sprintf("i%d", i)
			}
			p.clients = append(p.clients, cl)
		}
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			p.step(p.clients[rapid.IntRange(0, n-1).Draw(rt, "client")])
			p.settle()
			p.check()
		}
	})
}

// propClient is one simulated consumer: what it believes about the group.
type propClient struct {
	instance   string
	id         string
	generation Generation
	leader     bool
	members    []JoinMember
	synced     bool // holds an assignment for generation
	assignment []byte
	join       chan JoinResponse // parked join, if any
	sync       chan SyncResponse // parked sync, if any
}

type propRun struct {
	rt       *rapid.T
	c        *Coordinator
	clock    *fakeClock
	clients  []*propClient
	assigned map[Generation]map[string]string // generation → member → assignment
	lastGen  Generation
}

// step has cl do one random thing. Joins and syncs are handed to the actor
// directly rather than from a goroutine, so that the order of steps is the
// order the group sees them and a failing case replays exactly.
func (p *propRun) step(cl *propClient) {
	rt := p.rt
	switch op := rapid.IntRange(0, 7).Draw(rt, "op"); op {
	case 0, 1: // join or rejoin
		if cl.join != nil {
			return
		}
		r := joinReq(cl.id, rapid.SampledFrom([][]string{{"range"}, {"range", "roundrobin"}}).Draw(rt, "protocols")...)
		r.InstanceID = cl.instance
		r.RequireKnownMemberID = true
		cl.join = make(chan JoinResponse, 1)
		if _, err := p.c.do(ctx, testGroup, r.MemberID == "", func(g *group) { g.join(r, cl.join) }); err != nil {
			cl.join <- JoinResponse{Code: CodeUnknownMemberID}
		}
	case 2, 3: // sync
		if cl.id == "" || cl.join != nil || cl.sync != nil || cl.generation == 0 {
			return
		}
		req := SyncRequest{GroupID: testGroup, Generation: cl.generation, MemberID: cl.id, InstanceID: cl.instance}
		if cl.leader {
			if p.assigned[cl.generation] == nil {
				p.assigned[cl.generation] = map[string]string{}
			}
			for _, m := range cl.members {
				a := fmt.Sprintf("g%d-%s", cl.generation, m.MemberID)
				req.Assignments = append(req.Assignments, MemberAssignment{MemberID: m.MemberID, Assignment: []byte(a)})
				p.assigned[cl.generation][m.MemberID] = a
			}
		}
		cl.sync = make(chan SyncResponse, 1)
		if _, err := p.c.do(ctx, testGroup, false, func(g *group) { g.sync(req, cl.sync) }); err != nil {
			cl.sync <- SyncResponse{Code: CodeUnknownMemberID}
		}
	case 4:
		if cl.id != "" {
			p.c.Heartbeat(ctx, HeartbeatRequest{GroupID: testGroup, Generation: cl.generation, MemberID: cl.id, InstanceID: cl.instance})
		}
	case 5:
		if cl.id != "" {
			p.c.Leave(ctx, LeaveRequest{GroupID: testGroup, Members: []LeaveMember{{MemberID: cl.id, InstanceID: cl.instance}}})
			cl.synced = false
		}
	case 6, 7: // time passes
		p.clock.Advance(time.Duration(rapid.IntRange(1, 12).Draw(rt, "seconds")) * time.Second)
	}
}

// settle takes in the responses that have arrived.
func (p *propRun) settle() {
	for _, cl := range p.clients {
		select {
		case r := <-cl.join:
			cl.join, cl.synced = nil, false
			switch r.Code {
			case CodeNone:
				cl.id, cl.generation, cl.leader, cl.members = r.MemberID, r.Generation, r.Leader == r.MemberID, r.Members
			case CodeMemberIDRequired:
				cl.id = r.MemberID
			default:
				cl.id = "" // fenced, unknown, or superseded: start over
			}
		default:
		}
		select {
		case r := <-cl.sync:
			cl.sync = nil
			if r.Code == CodeNone {
				cl.synced, cl.assignment = true, r.Assignment
			}
		default:
		}
	}
}

// groupView is what check reads from the actor.
type groupView struct {
	state      State
	generation Generation
	assigns    map[string]string
	violations []string
}

func (v *groupView) read(g *group) {
	v.state, v.generation = g.state, g.generation
	parked := 0
	for _, m := range g.members {
		if m.joinReply != nil {
			parked++
		}
		v.assigns[m.id] = string(m.assignment)
		if v.state == StateStable && m.assignment == nil {
			v.violations = append(v.violations, "stable member without assignment "+m.id)
		}
	}
	if v.state == StateEmpty && len(g.members) > 0 {
		v.violations = append(v.violations, "Empty group with members")
	}
	if (v.state == StateStable || v.state == StateCompletingRebalance) && g.members[g.leader] == nil {
		v.violations = append(v.violations, "no leader among members in "+v.state.String())
	}
	if v.state != StatePreparingRebalance && parked > 0 {
		v.violations = append(v.violations, fmt.Sprintf("%d joins parked in %v", parked, v.state))
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID != inst {
			v.violations = append(v.violations, "static map broken for "+inst)
		}
	}
}

func (p *propRun) check() {
	rt := p.rt
	v := groupView{assigns: map[string]string{}}
	if _, err := p.c.do(ctx, testGroup, false, v.read); err != nil {
		return // the group is gone (it held nothing)
	}
	for _, s := range v.violations {
		rt.Fatal(s)
	}
	if v.generation < p.lastGen {
		rt.Fatalf("generation went back from %d to %d", p.lastGen, v.generation)
	}
	p.lastGen = v.generation
	if v.state == StateStable {
		for id, a := range v.assigns {
			if want := p.assigned[v.generation][id]; a != want {
				rt.Fatalf("member %s holds %q in generation %d, leader assigned %q", id, a, v.generation, want)
			}
		}
	}
	for _, cl := range p.clients {
		if cl.id == "" || cl.generation == 0 {
			continue
		}
		code := p.c.Heartbeat(ctx, HeartbeatRequest{GroupID: testGroup, Generation: cl.generation, MemberID: cl.id, InstanceID: cl.instance})
		if code != CodeNone {
			continue
		}
		if cl.generation != v.generation {
			rt.Fatalf("client %s confirmed in generation %d, group is in %d", cl.id, cl.generation, v.generation)
		}
		if cl.synced && v.state == StateStable && string(cl.assignment) != v.assigns[cl.id] {
			rt.Fatalf("client %s holds %q, group has %q", cl.id, cl.assignment, v.assigns[cl.id])
		}
	}
}
