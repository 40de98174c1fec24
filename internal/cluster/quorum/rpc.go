package quorum

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/nodetls"
)

// Controller RPCs — forwarded metadata changes, broker registration and
// heartbeats — travel on the raft port: every node already knows the
// leader's raft address (raft.LeaderWithID), so no other address has to be
// configured or discovered. A connection's first byte tells the two
// apart: raft's own RPC types are small integers (0–4), a controller RPC
// starts with rpcMagic. One request per connection, then it closes:
// controller RPCs are rare (admin changes, one heartbeat per broker per
// interval) and a fresh connection cannot carry a stale stream.
const rpcMagic byte = 'S'

// maxRPCBytes bounds one controller RPC frame.
const maxRPCBytes = 64 << 20

type rpcRequest struct {
	Apply     json.RawMessage       `json:"apply,omitempty"` // an encoded batch (EncodeRecords)
	Register  *cluster.Registration `json:"register,omitempty"`
	Heartbeat *cluster.Heartbeat    `json:"heartbeat,omitempty"`
	Voter     *VoterChange          `json:"voter,omitempty"`
	// Observer adds the sender as a raft non-voter (a broker-only node,
	// roles.go); a controller older than roles refuses it as empty.
	Observer  *VoterChange `json:"observer,omitempty"`
	ReadIndex bool         `json:"readIndex,omitempty"` // the controller's applied index
	// AlterPartition is a leader's ISR change.
	AlterPartition *cluster.AlterPartition `json:"alterPartition,omitempty"`
	// ElectLeaders is an operator's election request.
	ElectLeaders *cluster.ElectLeaders `json:"electLeaders,omitempty"`
	// Reassign starts or cancels partition reassignments.
	Reassign *cluster.AlterReassignments `json:"reassign,omitempty"`
	// Watch opens a broker's session watch: the connection stays open
	// until the broker's process or the controller's leadership ends
	// (session.go).
	Watch *SessionWatch `json:"watch,omitempty"`
}

type rpcResponse struct {
	Index     uint64                    `json:"index,omitempty"` // the entry that committed an Apply or Register
	Code      string                    `json:"code,omitempty"`  // rpcCodes key; "" is success
	Err       string                    `json:"err,omitempty"`
	Epoch     int64                     `json:"epoch,omitempty"` // a registration's broker epoch
	Heartbeat *cluster.HeartbeatReply   `json:"heartbeat,omitempty"`
	Partition *cluster.PartitionReg     `json:"partition,omitempty"` // after an AlterPartition
	Results   []cluster.PartitionResult `json:"results,omitempty"`   // per partition: ElectLeaders, Reassign
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

func readFrame(r io.Reader, v any) error {
	b, err := readFrameBytes(r)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func readFrameBytes(r io.Reader) ([]byte, error) { return readFrameWithin(r, maxRPCBytes) }

// readFrameWithin reads one frame of at most limit bytes.
func readFrameWithin(r io.Reader, limit uint32) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > limit {
		return nil, fmt.Errorf("cluster: raft-port frame of %d bytes, the limit is %d", size, limit)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// call sends one controller RPC to the raft address addr. gone, polled
// while the call waits, reports that the callee no longer leads the
// quorum: the call then ends at once with errNotLeading. A leader cut off
// from the network (not crashed: nothing resets the connection) answers
// nothing until the timeout, while a new leader would answer now.
func call(nw Network, from, addr string, req rpcRequest, timeout time.Duration, gone func() bool) (rpcResponse, error) {
	var resp rpcResponse
	c, err := nw.Dial(from, addr, min(timeout, maxControllerDial))
	if err != nil {
		return resp, err
	}
	defer c.Close()
	var abandoned atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if gone() {
				abandoned.Store(true)
				c.Close()
				return
			}
		}
	}()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err = c.Write([]byte{rpcMagic}); err == nil {
		if err = writeFrame(c, req); err == nil {
			err = readFrame(c, &resp)
		}
	}
	if err != nil && abandoned.Load() {
		err = fmt.Errorf("%w: %w", errNotLeading, err)
	}
	return resp, err
}

// errNotLeading ends a call to a node that stopped leading meanwhile.
var errNotLeading = errors.New("cluster: the node asked stopped leading the quorum")

// maxControllerDial bounds connecting to the controller: a leader whose
// host stopped answering (packets dropped) would otherwise hold the call
// for its whole timeout before a new leader is tried.
const maxControllerDial = time.Second

// connSet holds a node's raft connections, both ways, so Close can end
// them: raft's transport leaves inbound connections to their dialer and
// keeps its outbound pool, and a stopped node must not leave goroutines
// reading either.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (s *connSet) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// muxListener splits the raft port: raft's connections go to Accept,
// controller RPCs to handle.
type muxListener struct {
	net.Listener
	handle  func(peer cluster.NodeID, req rpcRequest) rpcResponse
	hold    func(peer cluster.NodeID, c net.Conn, r io.Reader, w SessionWatch) // serves a session watch
	conns   chan net.Conn
	done    chan struct{}
	closeMu sync.Once
	all     *connSet
	// id checks each connection's cluster-id hello (hello.go); nil: no
	// check (tests of the mux alone).
	id *identity
}

func newMuxListener(ln net.Listener, id *identity, handle func(cluster.NodeID, rpcRequest) rpcResponse, hold func(cluster.NodeID, net.Conn, io.Reader, SessionWatch), all *connSet) *muxListener {
	m := &muxListener{Listener: ln, id: id, handle: handle, hold: hold, conns: make(chan net.Conn), done: make(chan struct{}), all: all}
	go m.acceptLoop()
	return m
}

func (m *muxListener) acceptLoop() {
	for {
		c, err := m.Listener.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and friends: back off
			continue
		}
		if m.all.add(c) {
			go m.route(c)
		}
	}
}

// route reads a connection's first byte, off the accept loop so a silent
// dialer holds up nobody.
func (m *muxListener) route(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	if m.id != nil {
		if first, err = m.checkHello(c, br, first[0]); err != nil {
			c.Close()
			return
		}
	}
	if first[0] == rpcMagic {
		_, _ = br.Discard(1)
		m.serveRPC(c, br)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	select {
	case m.conns <- &peekedConn{Conn: c, r: br}:
	case <-m.done:
		c.Close()
	}
}

// checkHello takes a connection's cluster-id hello (hello.go), if it
// opens with one, and returns the first byte of what follows; an error
// refuses the connection. A controller RPC refused for sending no hello
// is answered first, so its caller (an older build) can say why.
func (m *muxListener) checkHello(c net.Conn, br *bufio.Reader, first byte) ([]byte, error) {
	if first != helloMagic {
		err := m.id.refuseSilent(c)
		if err != nil && first == rpcMagic {
			_, _ = br.Discard(1)
			if _, rerr := readFrameBytes(br); rerr == nil {
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				_ = writeFrame(c, rpcFailure(err))
			}
		}
		return []byte{first}, err
	}
	_, _ = br.Discard(1)
	hi, err := m.id.accept(c, br)
	if err != nil {
		return nil, err
	}
	next, err := br.Peek(1)
	if err == nil && hi.RPC != (next[0] == rpcMagic) {
		// The hello said one kind and the connection is the other: the
		// rules for an unnamed node differ between them.
		return nil, fmt.Errorf("cluster: a raft-port connection said rpc=%v in its hello and sent %#x", hi.RPC, next[0])
	}
	return next, err
}

func (m *muxListener) serveRPC(c net.Conn, r io.Reader) {
	defer c.Close()
	b, err := readFrameBytes(r)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	// Requests decode strictly (answers leniently: a newer controller may
	// add what an older caller can ignore).
	var req rpcRequest
	if err := cluster.UnmarshalStrict(b, &req); err != nil {
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_ = writeFrame(c, rpcFailure(fmt.Errorf("%w: %v", cluster.ErrUnsupportedRequest, err)))
		return
	}
	if req.Watch != nil && m.hold != nil {
		m.hold(peerNode(c), c, r, *req.Watch)
		return
	}
	resp := m.handle(peerNode(c), req)
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = writeFrame(c, resp)
}

// Accept returns the next raft connection.
func (m *muxListener) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *muxListener) Close() error {
	var err error
	m.closeMu.Do(func() {
		close(m.done)
		err = m.Listener.Close()
	})
	return err
}

// peerNode is the node an authenticated connection's certificate names,
// or nodetls.AnyNode on a network without inter-node TLS (where every peer
// is trusted as the node it says it is).
func peerNode(c net.Conn) cluster.NodeID {
	if pc, ok := c.(interface{ PeerNode() int32 }); ok {
		return pc.PeerNode()
	}
	return nodetls.AnyNode
}

// peekedConn replays the byte route peeked.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TCPNetwork is Network over TCP, the default: plain, or mutual TLS
// between nodes when TLS is set.
type TCPNetwork struct {
	// LocalIP, if set, is the address this node's raft and controller
	// connections leave from (see wire.Dialer.LocalIP).
	LocalIP net.IP
	// TLS, if set, wraps every raft and controller connection, both ways:
	// a peer must present a certificate of the cluster CA naming a node,
	// and it is refused before raft or a controller RPC reads a byte.
	TLS *nodetls.Source
	// Voters maps the raft addresses this node knows to their node ids: a
	// connection dialled to one of them must reach that node (its
	// certificate must name it). Addresses not in it (voters added later)
	// must reach some node.
	Voters map[string]cluster.NodeID
}

func (n TCPNetwork) Listen(_, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil || n.TLS == nil {
		return ln, err
	}
	return n.TLS.Listener(ln), nil
}

func (n TCPNetwork) Dial(_, addr string, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if n.LocalIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: n.LocalIP}
	}
	if n.TLS == nil {
		return d.Dial("tcp", addr)
	}
	expect, ok := n.Voters[addr]
	if !ok {
		expect = nodetls.AnyNode
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return n.TLS.Dial(ctx, &d, addr, expect)
}

// rpcFailure is err as an RPC answer (cluster.RPCFailure's wire code).
func rpcFailure(err error) rpcResponse {
	f := cluster.RPCFailure(err)
	return rpcResponse{Code: f.Code, Err: f.Err}
}
