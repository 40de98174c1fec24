package consumer

import (
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// simClient is a consumer as it sees itself: what it believes it owns, at
// which epoch. It applies responses the way a KIP-848 client does.
type simClient struct {
	id       string
	instance string
	topics   []string
	epoch    int32
	owned    []assign.Partition
}

type sim struct {
	t       *testing.T
	rng     *rand.Rand
	h       *harness
	clients map[string]*simClient // live clients by member id
	next    int
	// last epochs seen, to check they only grow
	groupEpoch, assignmentEpoch int32
	memberEpoch                 map[string]int32
}

var simTopics = []string{"a", "b", "c"}

// simSeeds is how many sequences TestSimulation runs; B-T2's figure is
// -consumer.seeds=10000.
var simSeeds = flag.Int("consumer.seeds", 200, "sequences TestSimulation runs")

func (s *sim) randomTopics() []string {
	var out []string
	for _, t := range simTopics {
		if s.rng.IntN(2) == 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = []string{simTopics[s.rng.IntN(len(simTopics))]}
	}
	return out
}

func (s *sim) pick() *simClient {
	if len(s.clients) == 0 {
		return nil
	}
	ids := make([]string, 0, len(s.clients))
	for id := range s.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return s.clients[ids[s.rng.IntN(len(ids))]]
}

// send sends req for c and applies the response unless lost.
func (s *sim) send(c *simClient, req Request, lost bool) {
	req.InstanceID = nil
	if c.instance != "" {
		req.InstanceID = str(c.instance)
	}
	resp := s.h.do(req)
	switch resp.Code {
	case None:
	case FencedMemberEpoch, UnknownMemberID:
		// The client drops everything and rejoins next time.
		c.epoch, c.owned = 0, nil
		return
	default:
		s.t.Fatalf("unexpected %d %s for %+v", resp.Code, resp.Message, req)
	}
	if lost {
		return
	}
	c.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		c.owned = resp.Assignment
	}
}

func (s *sim) beat(c *simClient, lost bool) {
	if c.epoch == 0 {
		r := joinReq(c.id, c.topics...)
		s.send(c, r, lost)
		return
	}
	s.send(c, beatReq(c.id, c.epoch, orEmpty(c.owned)), lost)
}

func (s *sim) join() {
	s.next++
	c := &simClient{id: fmt.Sprintf("m%03d", s.next), topics: s.randomTopics()}
	if s.rng.IntN(3) == 0 {
		inst := fmt.Sprintf("i%d", s.rng.IntN(3))
		if s.h.g == nil {
			// no group yet: nothing holds the instance
		} else if m, ok := s.h.g.StaticMember(inst); ok && m.Epoch != StaticLeaveEpoch {
			inst = ""
		}
		for _, o := range s.clients {
			if o.instance == inst {
				inst = ""
			}
		}
		c.instance = inst
	}
	s.clients[c.id] = c
	s.beat(c, false)
	if c.epoch == 0 {
		delete(s.clients, c.id) // refused (e.g. instance still held)
	}
}

// step runs one random action.
func (s *sim) step() {
	c := s.pick()
	switch op := s.rng.IntN(12); {
	case c == nil || op == 0:
		if len(s.clients) < 8 {
			s.join()
		}
	case op <= 5:
		s.beat(c, false)
	case op == 6:
		s.beat(c, true)
	case op == 7:
		s.send(c, beatReq(c.id, LeaveEpoch, nil), false)
		delete(s.clients, c.id)
	case op == 8 && c.instance != "" && c.epoch > 0:
		s.send(c, beatReq(c.id, StaticLeaveEpoch, nil), false)
		delete(s.clients, c.id)
	case op == 9 && c.epoch > 0:
		c.topics = s.randomTopics()
		r := beatReq(c.id, c.epoch, orEmpty(c.owned))
		r.Topics = c.topics
		s.send(c, r, false)
	case op == 10:
		s.h.now = s.h.now.Add(time.Duration(s.rng.IntN(20)) * time.Second)
		s.expire()
	case op == 11 && s.rng.IntN(4) == 0:
		t := simTopics[s.rng.IntN(len(simTopics))]
		topics := maps.Clone(s.h.topics)
		topics[t]++
		s.h.topics = topics
	}
	s.checkStep()
}

// expire runs the timers. A client whose member was removed does not know
// yet; it learns at its next heartbeat and rejoins.
func (s *sim) expire() {
	if s.h.g != nil {
		s.h.expire()
	}
}

// checkStep: no two live clients that are still members believe they own
// the same partition, each owns only what the broker counts as its, and the
// epochs only grow.
func (s *sim) checkStep() {
	g := s.h.g
	if g == nil {
		return
	}
	owners := g.Owners()
	held := map[assign.Partition]string{}
	for _, c := range s.clients {
		if _, member := g.Members[c.id]; !member {
			continue // removed by a timeout; a real client stops on its own timer
		}
		for _, p := range c.owned {
			if other, dup := held[p]; dup {
				s.t.Fatalf("%v owned by clients %s and %s\n%s", p, other, c.id, dump(g))
			}
			held[p] = c.id
			if owners[p] != c.id {
				s.t.Fatalf("client %s owns %v, the broker says %q\n%s", c.id, p, owners[p], dump(g))
			}
		}
	}
	if g.Epoch < s.groupEpoch || g.AssignmentEpoch < s.assignmentEpoch {
		s.t.Fatalf("epochs went back: group %d→%d, assignment %d→%d", s.groupEpoch, g.Epoch, s.assignmentEpoch, g.AssignmentEpoch)
	}
	s.groupEpoch, s.assignmentEpoch = g.Epoch, g.AssignmentEpoch
	for id, m := range g.Members {
		if prev, ok := s.memberEpoch[id]; ok && m.Epoch >= 0 && m.Epoch < prev && m.Epoch != 0 {
			s.t.Fatalf("member %s epoch went back %d→%d", id, prev, m.Epoch)
		}
		if m.Epoch >= 0 {
			s.memberEpoch[id] = m.Epoch
		}
	}
}

// quiesce lets the group go quiet. First every live client heartbeats every
// 10 s for 40 s, so that static members that left temporarily and members
// whose clients were lost time out (and timed-out clients rejoin). Then one
// more member joins and, without time passing, clients heartbeat round after
// round until the group is stable; it returns those rounds and checks every
// member holds its target.
func (s *sim) quiesce() int {
	for range 4 {
		s.round()
		s.h.now = s.h.now.Add(10 * time.Second)
		s.expire()
		s.checkStep()
	}
	s.join() // a last change to converge from
	s.checkStep()
	for round := 1; round <= 6; round++ {
		s.round()
		if g := s.h.g; g.State() == StableGroup || g.State() == Empty {
			s.checkConverged()
			return round
		}
	}
	s.t.Fatalf("not converged after 6 rounds:\n%s", dump(s.h.g))
	return 0
}

func (s *sim) round() {
	for _, id := range sortedClientIDs(s.clients) {
		s.beat(s.clients[id], false)
		s.checkStep()
	}
}

func (s *sim) checkConverged() {
	g := s.h.g
	if len(g.Members) == 0 {
		return
	}
	owned := 0
	for id, m := range g.Members {
		if m.Epoch == StaticLeaveEpoch {
			continue
		}
		c, ok := s.clients[id]
		if !ok || !slices.Equal(c.owned, orEmpty(g.Target[id])) && !(len(c.owned) == 0 && len(g.Target[id]) == 0) {
			s.t.Fatalf("member %s holds %v, target %v\n%s", id, c, g.Target[id], dump(g))
		}
	}
	for _, l := range g.Target {
		owned += len(l)
	}
	want := 0
	for _, n := range g.Subscribed {
		want += int(n)
	}
	if owned != want {
		s.t.Fatalf("%d of %d subscribed partitions in the target\n%s", owned, want, dump(g))
	}
}

func sortedClientIDs(m map[string]*simClient) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestSimulation runs seeded random sequences of joins, leaves, static
// leaves, lost responses, subscription changes, topic growth and timeouts,
// checking after every step that no partition has two owners, that each
// client owns only what the broker counts as its, that epochs only grow and
// that replaying the records rebuilds the group; then lets the group go
// quiet and checks every member converges on its target.
func TestSimulation(t *testing.T) {
	t.Parallel()
	seeds, steps := *simSeeds, 120
	if testing.Short() {
		seeds = 20
	}
	worst := 0
	for seed := range seeds {
		s := &sim{
			t:           t,
			rng:         rand.New(rand.NewPCG(uint64(seed), 848)),
			clients:     map[string]*simClient{},
			memberEpoch: map[string]int32{},
		}
		s.h = newHarness(t, Config{SessionTimeout: 30 * time.Second}, map[string]int32{"a": 6, "b": 3, "c": 1})
		for range steps {
			s.step()
		}
		if s.h.g == nil {
			continue
		}
		// Clients removed by timeouts rejoin first, then all go quiet.
		if r := s.quiesce(); r > worst {
			worst = r
		}
		checkReplay(t, s.h.g, s.h.recs)
	}
	t.Logf("%d seeds × %d steps: converged within %d heartbeat rounds after the last join", seeds, steps, worst)
	if worst > 3 {
		t.Fatalf("took %d rounds to converge, want ≤ 3 (B-T2)", worst)
	}
}
