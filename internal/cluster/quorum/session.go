package quorum

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/nodetls"
)

// Fast detection of a dead process (issue 39). Heartbeats are one request
// per connection, so the controller learns nothing between two of them;
// a broker killed just after a heartbeat is fenced only when its session
// lapses (broker.session.timeout.ms, 9 s). But when a process dies and
// its machine lives — a crash, an OOM kill, a deploy — the kernel closes
// its sockets at once. So each registered broker also holds one idle
// connection open to the controller (a "session watch"), and the
// controller reads it until it ends. An end alone proves nothing (the
// broker may be following a new controller, or its network may have reset
// the connection), so the controller then dials the node's raft port: a
// refused connection means nothing listens there — the process is gone
// while its machine answers — and the controller fences the broker at
// once, with the same records a lapsed session writes (epoch-checked, and
// only if the incarnation that held the watch is still the registered
// one). A hung or partitioned node neither closes the watch nor refuses
// the probe (packets stall, or the probe times out), so it still waits
// for its session. A new controller probes every unfenced broker the
// same way as it takes over: the usual case of a controller change is the
// old controller's process dying, with its broker.

// SessionWatch opens a broker's session watch on the controller.
type SessionWatch struct {
	ID            cluster.NodeID
	IncarnationID string
}

// probeTimeout bounds the probe of a node's raft port: a refusal comes
// back in a round trip; a node that does not answer within this is not
// known to be gone.
const probeTimeout = 500 * time.Millisecond

// watchRedial is how long a broker waits before watching again after its
// watch could not be opened or ended.
const watchRedial = 100 * time.Millisecond

// watchUnknownRedial is how long a broker waits before asking again a
// controller that did not know the request (a rolling upgrade).
const watchUnknownRedial = 10 * time.Second

// sessionWatches is the controller's table of open watches.
type sessionWatches struct {
	mu sync.Mutex
	by map[cluster.NodeID]*heldWatch
}

type heldWatch struct{ conn net.Conn }

// hold serves a session watch on connection conn until it ends; then,
// unless a newer watch of the same broker replaced it or this leadership
// ended, it probes whether the broker's process is gone.
func (c *controller) hold(peer cluster.NodeID, conn net.Conn, r io.Reader, w SessionWatch) {
	defer conn.Close()
	if peer != nodetls.AnyNode && peer != w.ID {
		c.logger.Warn("cluster: refused a session watch from a node speaking for another", "peer", peer, "claims", w.ID)
		_ = writeFrame(conn, rpcFailure(cluster.ErrNotTheSender))
		return
	}
	c.mu.Lock()
	ready, term := c.ready, c.term
	c.mu.Unlock()
	if !ready {
		_ = writeFrame(conn, rpcFailure(cluster.ErrNotController))
		return
	}
	h := &heldWatch{conn: conn}
	c.watches.mu.Lock()
	if c.watches.by == nil {
		c.watches.by = map[cluster.NodeID]*heldWatch{}
	}
	if old := c.watches.by[w.ID]; old != nil {
		old.conn.Close() // replaced: its end is no news
	}
	c.watches.by[w.ID] = h
	c.watches.mu.Unlock()
	_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	err := writeFrame(conn, rpcResponse{})
	ended := make(chan struct{})
	if err == nil {
		go func() {
			select {
			case <-term:
				conn.Close()
			case <-ended:
			}
		}()
		_, _ = io.Copy(io.Discard, r) // the broker sends nothing: this returns when the connection ends
	}
	close(ended)
	c.watches.mu.Lock()
	mine := c.watches.by[w.ID] == h
	if mine {
		delete(c.watches.by, w.ID)
	}
	c.watches.mu.Unlock()
	select {
	case <-term:
		return
	default:
	}
	if mine {
		c.fenceIfGone(w.ID, w.IncarnationID, "its session watch closed")
	}
}

// probeAll probes every unfenced broker but this node's own, as a new
// controller takes over: one whose process died (often the old
// controller's) is fenced now rather than after a session.
func (c *controller) probeAll(term chan struct{}) {
	for _, b := range c.s.Image().Brokers() {
		if b.Fenced || b.ID == c.s.self {
			continue
		}
		select {
		case <-term:
			return
		default:
		}
		go c.fenceIfGone(b.ID, b.IncarnationID, "this controller took over")
	}
}

// fenceIfGone fences broker id's incarnation if its raft port refuses a
// connection: nothing listens there, so that process is gone.
func (c *controller) fenceIfGone(id cluster.NodeID, incarnation, why string) {
	addr, ok := c.s.raftAddr(id)
	if !ok {
		return
	}
	if gone, how := c.s.gone(addr); !gone {
		c.logger.Info("cluster: a broker's raft port answers; it keeps its session", "broker", id, "because", why, "probe", how)
		return
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	if !ready {
		return
	}
	img := c.s.Image()
	b, ok := img.Broker(id)
	if !ok || b.Fenced || b.IncarnationID != incarnation {
		return // already fenced, or a new process registered meanwhile
	}
	recs := append([]cluster.Record{cluster.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, Fenced: 1}}, cluster.LeaveISRs(img, c.rules, b.ID)...)
	if _, _, err := c.s.applyLocal(5*time.Second, recs...); err != nil {
		c.logger.Warn("cluster: fencing a broker whose process is gone", "broker", id, "err", err)
		return
	}
	c.logger.Warn("cluster: fenced a broker whose process is gone ("+why+" and its raft port refuses connections)", "broker", id, "epoch", b.Epoch)
	c.warnUnclean(recs)
}

// raftAddr is node id's raft address in the quorum's configuration.
func (s *RaftStore) raftAddr(id cluster.NodeID) (string, bool) {
	f := s.r.GetConfiguration()
	if f.Error() != nil {
		return "", false
	}
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == strconv.Itoa(int(id)) {
			return string(srv.Address), true
		}
	}
	return "", false
}

// gone reports whether nothing listens at addr any more: a connection
// to it is refused (an RST to the SYN: the host answers, no process
// listens). A process in the middle of dying may still complete a
// connection — its listening socket closes a moment after the others,
// and the kernel accepts for it meanwhile — but then resets it without a
// word, so a connection that ends before probeTimeout is tried again. A
// live node (or a hung one) leaves a silent connection open, and a timeout
// or any other failure proves nothing: how says what the probe saw.
func (s *RaftStore) gone(addr string) (bool, string) {
	how := ""
	for range 3 {
		conn, err := s.nw.Dial(s.node, addr, probeTimeout)
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return true, "refused"
		case err != nil:
			how = err.Error() // a handshake cut short, or a timeout: look again
			if isTimeout(err) {
				return false, how
			}
			continue
		}
		_ = conn.SetReadDeadline(time.Now().Add(probeTimeout))
		_, err = conn.Read(make([]byte, 1))
		conn.Close()
		if isTimeout(err) {
			return false, "connected, and it stays open"
		}
		how = fmt.Sprintf("connected, then %v", err)
	}
	return false, how
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// startWatch starts this process's session watch, once, after it
// registered as incarnation.
func (s *RaftStore) startWatch(incarnation string) {
	s.watchOnce.Do(func() { go s.keepWatch(incarnation) })
}

// keepWatch holds a session watch open on whichever node leads the quorum
// (none while this node leads it: its own death ends that leadership, and
// the next controller probes it), until Close.
func (s *RaftStore) keepWatch(incarnation string) {
	for {
		wait := watchRedial
		if id, addr, ok := s.Leader(); ok && cluster.NodeID(id) != s.self {
			endedThere, unknown := s.watch(cluster.NodeID(id), addr, incarnation)
			if endedThere {
				s.maybeHastenElection(cluster.NodeID(id), addr)
			}
			if unknown {
				wait = watchUnknownRedial // a controller of an older version
			}
		}
		select {
		case <-s.done:
			return
		case <-time.After(wait):
		}
	}
}

// watch opens a session watch on controller id at addr and returns when
// it ends: the controller closed it, or it stopped leading, or Close
// closed it — after the raft listener, as a process's exit leaves the
// controller a closed watch and a refusing port. It reports whether an
// open watch ended from the controller's side while it still led, as far
// as this node knows; unknown, that the controller answered the request
// with an error other than "not the controller" (an older version, which
// does not know it).
func (s *RaftStore) watch(id cluster.NodeID, addr, incarnation string) (endedThere, unknown bool) {
	conn, err := s.peers.Dial(s.node, addr, maxControllerDial)
	if err != nil {
		return false, false
	}
	if !s.conns.add(conn) {
		return false, false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var resp rpcResponse
	if _, err = conn.Write([]byte{rpcMagic}); err == nil {
		if err = writeFrame(conn, rpcRequest{Watch: &SessionWatch{ID: s.self, IncarnationID: incarnation}}); err == nil {
			err = readFrame(conn, &resp)
		}
	}
	if err != nil || resp.Code != "" {
		return false, err == nil && resp.Code != "not_controller"
	}
	_ = conn.SetDeadline(time.Time{})
	ended := make(chan struct{})
	defer close(ended)
	var moved atomic.Bool
	go func() {
		tick := time.NewTicker(watchRedial)
		defer tick.Stop()
		for {
			select {
			case <-ended:
				return
			case <-tick.C:
				if now, _, ok := s.Leader(); ok && cluster.NodeID(now) != id {
					moved.Store(true)
					conn.Close() // follow the new controller
					return
				}
			}
		}
	}()
	_, _ = io.Copy(io.Discard, conn)
	select {
	case <-s.done:
		return false, false
	default:
	}
	return !moved.Load(), false
}

// maybeHastenElection: the controller's end of this node's watch closed.
// If its raft port now refuses connections, the controller's process is
// gone and raft will not hear from it again; rather than wait out its
// heartbeat timeout (one to two of them, 1–2 s by default) before
// standing for election, this node shortens that timeout to the leader
// lease (the shortest raft accepts) until a new leader is known. Raft's
// safety does not rest on timeouts, only its liveness: a shorter one at a
// moment when the leader is known to be gone costs nothing.
func (s *RaftStore) maybeHastenElection(dead cluster.NodeID, addr string) {
	if voters, err := s.suffrages(); err != nil || !voters[s.self] {
		return // a broker-only node (a raft non-voter) never stands
	}
	if gone, _ := s.gone(addr); !gone || !s.hastening.CompareAndSwap(false, true) {
		return
	}
	orig := s.r.ReloadableConfig()
	fast := orig
	fast.HeartbeatTimeout = max(s.lease, 50*time.Millisecond)
	fast.ElectionTimeout = fast.HeartbeatTimeout
	if fast.HeartbeatTimeout >= orig.HeartbeatTimeout {
		s.hastening.Store(false)
		return
	}
	if err := s.r.ReloadConfig(fast); err != nil {
		s.hastening.Store(false)
		s.ctl.logger.Info("cluster: could not shorten raft's heartbeat timeout after the controller died", "err", err)
		return
	}
	s.ctl.logger.Info("cluster: the controller's process is gone; standing for election without waiting out its heartbeat timeout", "controller", dead)
	go s.restoreTimeouts(dead, orig)
}

// restoreTimeouts puts raft's timeouts back once a leader other than
// dead is known (or after ten heartbeat timeouts).
func (s *RaftStore) restoreTimeouts(dead cluster.NodeID, orig raft.ReloadableConfig) {
	defer s.hastening.Store(false)
	tick := time.NewTicker(watchRedial)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * orig.HeartbeatTimeout); time.Now().Before(deadline); {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		if id, _, ok := s.Leader(); ok && cluster.NodeID(id) != dead {
			break
		}
	}
	if err := s.r.ReloadConfig(orig); err != nil {
		s.ctl.logger.Warn("cluster: could not restore raft's heartbeat timeout", "err", err)
	}
}
