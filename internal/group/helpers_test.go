package group

import (
	"context"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a Clock that moves only when Advance is called. Due timers
// fire in deadline order, in the goroutine calling Advance, with the clock
// reading their deadline; the clock's lock is not held while they run.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock *fakeClock
	at    time.Time
	f     func()
	done  bool // fired or stopped
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Advance moves the clock by d, firing every timer due by then, including
// timers set by the timers it fires.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		live := c.timers[:0]
		var next *fakeTimer
		for _, t := range c.timers {
			if t.done {
				continue
			}
			live = append(live, t)
			if !t.at.After(target) && (next == nil || t.at.Before(next.at)) {
				next = t
			}
		}
		c.timers = live
		if next == nil {
			c.now = target
			c.mu.Unlock()
			return
		}
		next.done = true
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
	testGroup     = "g"
)

type harness struct {
	t     *testing.T
	c     *Coordinator
	clock *fakeClock
	store *MemStore
	cfg   Config
}

// newHarness starts a Coordinator on a fake clock and a MemStore, with no
// initial rebalance delay unless cfg sets one.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), store: &MemStore{}}
	if cfg.InitialRebalanceDelay == 0 {
		cfg.InitialRebalanceDelay = -1
	}
	cfg.Store, cfg.Clock = h.store, h.clock
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h.cfg = cfg
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	c, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.c = c
	h.t.Cleanup(c.Close)
}

// restart closes the coordinator and starts a new one on the same store.
func (h *harness) restart() {
	h.c.Close()
	h.start()
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinReq is a consumer's join with the given protocol names (in order of
// preference), each with metadata subscribing to topic "t".
func joinReq(memberID string, protocols ...string) JoinRequest {
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	r := JoinRequest{
		GroupID: testGroup, MemberID: memberID, ClientID: "client", ClientHost: "/127.0.0.1",
		ProtocolType: "consumer", SessionTimeout: testSession, RebalanceTimeout: testRebalance,
	}
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, Protocol{Name: p, Metadata: consumerMeta("t")})
	}
	return r
}

func (h *harness) joinAsync(req JoinRequest) <-chan JoinResponse {
	ch := make(chan JoinResponse, 1)
	go func() { ch <- h.c.Join(context.Background(), req) }()
	return ch
}

func (h *harness) syncAsync(req SyncRequest) <-chan SyncResponse {
	ch := make(chan SyncResponse, 1)
	go func() { ch <- h.c.Sync(context.Background(), req) }()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a response")
		panic("unreachable")
	}
}

// pending asserts that nothing has arrived on ch yet. The actor runs
// requests in order, so a describe round-trip first settles earlier ones.
func pending[T any](t *testing.T, h *harness, ch <-chan T) {
	t.Helper()
	h.describe()
	select {
	case v := <-ch:
		t.Fatalf("unexpected response %+v", v)
	default:
	}
}

// waitFor polls cond (a condition, not a sleep: it returns at once when
// cond holds).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) describe() GroupDescription {
	return h.c.Describe(context.Background(), []string{testGroup})[0]
}

// snapshot is the group's internal state as the actor sees it.
type snapshot struct {
	state      State
	generation Generation
	leader     string
	protocol   string
	awaiting   int // members parked in a join
	members    int
}

func (h *harness) snap() snapshot {
	h.t.Helper()
	var s snapshot
	_, err := h.c.do(context.Background(), testGroup, false, func(g *group) {
		s = snapshot{state: g.state, generation: g.generation, leader: g.leader, protocol: g.protocol, members: len(g.members)}
		for _, m := range g.members {
			if m.joinReply != nil {
				s.awaiting++
			}
		}
	})
	if err != nil {
		s.state = StateDead
	}
	return s
}

// client is one member as a test drives it.
type client struct {
	req        JoinRequest
	id         string
	generation Generation
	leader     bool
	members    []JoinMember
	assignment []byte
}

// form has n members join one after another (waiting until each is parked
// in the join, so join order is member order), completes the join phase,
// and syncs them all, the leader assigning "a-<index>". With no initial
// delay, the first join completes alone; form then expects a one-member
// group, so call it with an initial delay when n > 1.
func (h *harness) form(reqs ...JoinRequest) []*client {
	h.t.Helper()
	var chans []<-chan JoinResponse
	for i, r := range reqs {
		chans = append(chans, h.joinAsync(r))
		waitFor(h.t, "member to join", func() bool { return h.snap().awaiting == i+1 || h.snap().state == StateCompletingRebalance })
	}
	// The initial delay extends while members keep arriving.
	for i := 0; h.snap().state == StatePreparingRebalance; i++ {
		if i == 10 {
			h.t.Fatal("join phase did not end")
		}
		h.clock.Advance(h.c.cfg.InitialRebalanceDelay)
	}
	cs := make([]*client, len(reqs))
	for i, ch := range chans {
		r := recv(h.t, ch)
		if r.Code != CodeNone {
			h.t.Fatalf("join %d: %v", i, r.Code)
		}
		cs[i] = &client{req: reqs[i], id: r.MemberID, generation: r.Generation, leader: r.Leader == r.MemberID, members: r.Members}
	}
	h.syncAll(cs)
	return cs
}

// syncAll syncs clients of one generation, followers first, then the leader.
func (h *harness) syncAll(cs []*client) {
	h.t.Helper()
	var leader *client
	chans := map[*client]<-chan SyncResponse{}
	for _, cl := range cs {
		if cl.leader {
			leader = cl
			continue
		}
		chans[cl] = h.syncAsync(SyncRequest{GroupID: testGroup, Generation: cl.generation, MemberID: cl.id, InstanceID: cl.req.InstanceID})
	}
	if leader == nil {
		h.t.Fatal("no leader among the clients")
	}
	var assigns []MemberAssignment
	for _, m := range leader.members {
		assigns = append(assigns, MemberAssignment{MemberID: m.MemberID, Assignment: []byte("a-" + m.MemberID)})
	}
	chans[leader] = h.syncAsync(SyncRequest{GroupID: testGroup, Generation: leader.generation, MemberID: leader.id, InstanceID: leader.req.InstanceID, Assignments: assigns})
	for cl, ch := range chans {
		r := recv(h.t, ch)
		if r.Code != CodeNone {
			h.t.Fatalf("sync %s: %v", cl.id, r.Code)
		}
		cl.assignment = r.Assignment
	}
}

// rejoin has clients rejoin with their member ids and returns their new
// generation's clients (not yet synced).
func (h *harness) rejoin(cs ...*client) []*client {
	h.t.Helper()
	var chans []<-chan JoinResponse
	for _, cl := range cs {
		r := cl.req
		r.MemberID = cl.id
		chans = append(chans, h.joinAsync(r))
	}
	out := make([]*client, len(cs))
	for i, ch := range chans {
		r := recv(h.t, ch)
		if r.Code != CodeNone {
			h.t.Fatalf("rejoin %s: %v", cs[i].id, r.Code)
		}
		out[i] = &client{req: cs[i].req, id: r.MemberID, generation: r.Generation, leader: r.Leader == r.MemberID, members: r.Members}
	}
	return out
}

func (h *harness) heartbeat(cl *client) Code {
	return h.c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: testGroup, Generation: cl.generation, MemberID: cl.id, InstanceID: cl.req.InstanceID})
}

func memberIDs(ms []JoinMember) []string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.MemberID)
	}
	sort.Strings(ids)
	return ids
}
