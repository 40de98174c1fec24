package kafka

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
)

// outQueue is how many encoded responses may wait for the write goroutine.
// It bounds a connection's memory at about outQueue fetch responses (each at
// most the client's MaxBytes, plus one batch); Kafka itself holds one.
const outQueue = 4

// conn is one client connection, served by two goroutines: the reader
// (read a frame, decode it, run its request and encode the response, one
// request at a time and in order) and the writer (write responses in
// order). Requests of one connection never run concurrently; only a
// produce's wait for its commit, and the writing of a large response,
// overlap the next request (deferred.go, send).
type conn struct {
	s      *Server
	nc     net.Conn
	ctx    context.Context // cancelled when the connection or the server closes
	cancel context.CancelFunc
	out    chan outbound
	// unwritten counts responses queued for the writer and not yet
	// written; while it is zero the writer is idle.
	unwritten atomic.Int32
	// auth is the connection's SASL state (sasl.go); only the reader
	// touches it, and requests are served one at a time.
	auth authState
	// ip is the remote address's IP, counted for max.connections.per.ip
	// and the host ACLs are matched against.
	ip string
	// authUser is the SASL user once authenticated, for other goroutines
	// (closeSessionsOfDeletedUsers).
	authUser atomic.Pointer[string]
	// tokenAuth is set when authUser came from an OAUTHBEARER token: not
	// a SCRAM user, so not closed when SCRAM users change.
	tokenAuth atomic.Bool
	// mute is how long to stop reading after the response being sent
	// (a client over its quota); only the reader touches it.
	mute time.Duration
	// tlsPrincipal is the mapped subject of a verified client
	// certificate, once principal has looked.
	tlsPrincipal acl.Principal
	// coalesce buffers the writes of a connection without writev (TLS):
	// see coalescer.
	coalesce *bufio.Writer
	// node is set on an internal listener once the peer is admitted as a
	// cluster node (node.go), nodeID to the node its certificate names
	// (-1: trusted without one). Set before the first request is read.
	node   bool
	nodeID int32
}

// inbound is a decoded request and the pooled frame its fields point into.
type inbound struct {
	req   *request
	frame []byte
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	ip, ok, closeAfter := s.admit(nc)
	if !ok {
		s.mu.Unlock()
		if closeAfter > 0 {
			time.AfterFunc(closeAfter, func() { nc.Close() })
		} else {
			nc.Close()
		}
		return
	}
	c := &conn{s: s, nc: nc, ip: ip, out: make(chan outbound, outQueue), nodeID: -1}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	if zeroCopyTo(nc) {
		c.ctx = context.WithValue(c.ctx, zeroCopyKey{}, true)
	}
	s.mu.conns[c] = struct{}{}
	// The goroutines are counted before the lock is released: Close sets
	// closed under it and then waits, so a WaitGroup.Add after that
	// would race its Wait.
	s.goTracked(c.readLoop)
	s.goTracked(c.writeLoop)
	s.mu.Unlock()
}

// readLoop reads, decodes and serves requests until the peer closes, a
// frame is malformed, a handler fails, or the connection closes. Closing out
// lets the writer flush what was answered and close the socket.
//
// Each request is served right here, before the next frame is read, as
// Kafka serves a connection's requests one at a time. A goroutine between
// reading and handling (this package had one) would let the next frame's
// read overlap the last one's append, but on this machine it cost more in
// wake-ups than it gained: produce cost 12-45% more CPU per byte with it at
// 1-8 connections, the same at 16, and was no faster (docs/BENCHMARKS.md,
// "One goroutine per request"). What
// overlaps is what waits: a produce's commit and a large response's
// write, both on the writer.
func (c *conn) readLoop() {
	defer close(c.out)
	if c.s.cfg.Internal {
		if err := c.admitPeer(); err != nil {
			if c.ctx.Err() == nil && !errors.Is(err, errRefusalLogged) { // not the server closing, nor logged
				c.s.logRefusedPeer(c, err)
			}
			return // the writer closes the socket
		}
	}
	br := bufio.NewReaderSize(c.idleReader(), 32<<10)
	var clientID string
	var held int64 // budget bytes reserved for the frame being read
	reserve := func(n int) (int64, bool) {
		if !c.s.budget.acquire(c.ctx, c.s.budget.cost(n)) {
			return 0, false
		}
		held = c.s.budget.cost(n)
		return held, true
	}
	for {
		if c.auth.raw {
			// After a SaslHandshake v0, SASL tokens come as bare frames.
			if !c.rawAuthStep(br) {
				return
			}
			continue
		}
		held = 0
		frame, err := readFrameMin(br, minFrameSize, c.maxFrame(), &c.s.frames, reserve)
		if err != nil {
			c.s.budget.release(held) // the frame never came whole
			c.logEnd(err, clientID)
			return
		}
		req, err := parseRequest(frame)
		if req != nil && req.clientID != nil {
			clientID = *req.clientID
		}
		if err != nil {
			c.putFrame(frame)
			c.logEnd(err, clientID)
			return
		}
		// Served before the next frame is read, so a v0 SaslHandshake's
		// switch to bare tokens applies to the very next frame.
		if !c.serve(inbound{req, frame}) {
			return
		}
	}
}

// serve handles one request, queues its response and frees its frame. It
// returns false when the connection must stop: a handler failed (the
// responses already queued are still written) or the connection closed.
func (c *conn) serve(in inbound) bool {
	b, err := c.handle(in.req, len(in.frame))
	c.putFrame(in.frame) // responses never point into the request
	if err != nil {
		clientID := ""
		if in.req.clientID != nil {
			clientID = *in.req.clientID
		}
		c.logEnd(err, clientID)
		return false
	}
	if b.bufs == nil && b.later == nil {
		return true // acks=0: no response
	}
	// A failed authentication's answer is the connection's last.
	if !c.send(b) || c.auth.failed {
		return false
	}
	if d := c.mute; d > 0 {
		// Over a client quota: read nothing more from this client until
		// its throttle time has passed (Kafka mutes the channel).
		c.mute = 0
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return false
		}
	}
	return true
}

// directWrite is the largest response the serving goroutine writes itself
// when the writer is idle.
const directWrite = 64 << 10

// send writes b in its turn. A small response with nothing ahead of it is
// written right here: waking the writer would only add a goroutine hop to
// the request's latency. Larger ones go to the writer, so that writing a
// big fetch response overlaps reading and handling the next request. Only
// the reader serves requests, and unwritten counts what the writer still
// has, so a direct write never races the writer.
func (c *conn) send(b outbound) bool {
	if c.unwritten.Load() == 0 && b.later == nil && b.len() <= directWrite {
		return c.write(b) == nil
	}
	c.unwritten.Add(1)
	select {
	case c.out <- b:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// write writes one response; a failure closes the connection.
func (c *conn) write(b outbound) error {
	var err error
	if w := c.coalescer(); w != nil {
		if err = b.writeTo(w); err == nil {
			err = w.Flush()
		}
	} else {
		err = b.writeTo(c.nc)
	}
	if b.recycle != nil {
		b.recycle.recycle() // written (or failed): the log bytes are free
	}
	if err != nil {
		c.s.logger.Debug("kafka: write failed; closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
		c.cancel()
		c.nc.Close()
	}
	return err
}

// coalescer is the buffer a connection without writev (TLS) writes its
// responses through, or nil for a TCP connection. net.Buffers falls back
// to one Write per piece where there is no writev, and over TLS each Write
// is a record and a syscall of its own: a replica fetch's response of many
// batches became hundreds of small records. Only the one goroutine that
// writes uses it (see send).
func (c *conn) coalescer() *bufio.Writer {
	if c.coalesce == nil {
		if _, plain := c.nc.(*net.TCPConn); plain {
			return nil
		}
		c.coalesce = bufio.NewWriterSize(c.nc, coalesceBytes)
	}
	return c.coalesce
}

// coalesceBytes is a little more than a TLS record's payload (16 KiB)
// times four: pieces are gathered into few, full records.
const coalesceBytes = 64 << 10

// handle runs the request's handler and encodes its response (nil: none to
// send), turning a panic in either into an error that closes this
// connection only.
func (c *conn) handle(req *request, frameLen int) (out outbound, err error) {
	start := time.Now()
	defer func() { // after the recover below; a deferred answer is observed once complete
		if out.later == nil {
			c.s.observe(req.key, start, err)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			c.s.logger.Error("kafka: handler panicked", "api", kmsg.NameForKey(req.key), "version", req.version,
				"remote", c.nc.RemoteAddr().String(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("kafka: %s handler panicked: %v", kmsg.NameForKey(req.key), r)
		}
	}()
	if err := c.checkAuthenticated(req.key); err != nil {
		return outbound{}, err
	}
	var resp kmsg.Response
	if req.unsupportedApiVersions {
		return encodeResponse(req.correlationID, c.s.apiVersionsUnsupported()), nil
	}
	if !c.s.serves(req.key) {
		// Before authorization: Kafka closes the connection whoever asks,
		// rather than answer CLUSTER_AUTHORIZATION_FAILED.
		return outbound{}, fmt.Errorf("kafka: %s is not served on this listener", kmsg.NameForKey(req.key))
	}
	var post func(kmsg.Response)
	if c.s.cfg.Authorizer != nil && !c.node {
		if resp, post, err = c.authorize(req); err != nil {
			return outbound{}, err
		}
		if _, none := resp.(noResponse); none {
			return outbound{}, nil
		}
	}
	if resp == nil {
		handle := func() { resp, err = apis[req.key].handle(c.s, c.handlerContext(req), req.kreq) }
		var cpu time.Duration
		if c.metersCPU(req) {
			cpu = cpuOf(handle) // request_percentage (quota.go)
		} else {
			handle()
		}
		if err != nil || resp == nil {
			return outbound{}, err
		}
		if d, ok := resp.(*deferred); ok {
			if c.s.quotas != nil {
				c.mute = c.throttle(req, frameLen, d.Response, cpu)
			}
			return c.deferredOutbound(req, d, post, start), nil
		}
		if post != nil {
			post(resp)
		}
		c.fillAuthorizedOps(req.kreq, resp) // KIP-430 (authz_ops.go)
		if c.s.quotas != nil {
			c.mute = c.throttle(req, frameLen, resp, cpu)
		}
	}
	return encodeResponse(req.correlationID, resp), nil
}

func (c *conn) writeLoop() {
	defer func() {
		c.cancel()
		c.nc.Close()
		c.s.closeShareSessions(c)
		c.s.mu.Lock()
		delete(c.s.mu.conns, c)
		c.s.forget(c.ip)
		c.s.mu.Unlock()
	}()
	for b := range c.out {
		if b.later != nil {
			b = b.later() // its turn: wait for it to complete
		}
		err := c.write(b)
		c.unwritten.Add(-1)
		if err != nil {
			for b := range c.out { // let the reader finish
				if b.recycle != nil {
					b.recycle.recycle()
				}
			}
			return
		}
	}
}

// putFrame frees a request frame: its buffer back to the pool, its bytes
// back to the request budget.
func (c *conn) putFrame(frame []byte) {
	c.s.frames.put(frame)
	c.s.budget.release(c.s.budget.cost(len(frame)))
}

// logEnd logs why the read loop stopped: quietly for a peer that hung up or
// a server shutdown, loudly for a malformed request.
func (c *conn) logEnd(err error, clientID string) {
	remote := c.nc.RemoteAddr().String()
	switch {
	case errors.Is(err, errIdle):
		c.s.logger.Debug("kafka: closing idle connection", "remote", remote, "client_id", clientID, "idle", c.s.cfg.MaxIdle)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
		c.s.logger.Debug("kafka: connection closed", "remote", remote, "client_id", clientID)
	case errors.Is(err, ErrMalformed):
		c.s.logger.Warn("kafka: closing connection", "remote", remote, "client_id", clientID, "reason", err)
	default:
		c.s.logger.Info("kafka: connection ended", "remote", remote, "client_id", clientID, "err", err)
	}
}

// clientKey carries a request's client to the handlers that record it
// (JoinGroup and ConsumerGroupHeartbeat: DescribeGroups and
// ConsumerGroupDescribe report id and host per member) or pass it on (the
// requests a node forwards to the controller: principal and IP).
type clientKey struct{}

type clientInfo struct {
	id, host string
	// ip is the client's address as the authorizer matches hosts
	// ("127.0.0.1"), and principal who it authenticated as ("" when
	// that failed); both set for the forwardable requests only.
	ip        string
	principal acl.Principal
}

// handlerContext is the connection's context, with the client's id and host
// for the API keys that need them.
func (c *conn) handlerContext(req *request) context.Context {
	switch req.key {
	case apiKeySaslHandshake, apiKeySaslAuthenticate:
		ctx := context.WithValue(c.ctx, remoteKey{}, c.nc.RemoteAddr().String())
		ctx = context.WithValue(ctx, connKey{}, c)
		return context.WithValue(ctx, authKey{}, &c.auth)
	case apiKeyShareFetch, apiKeyShareAcknowledge: // a share session belongs to its connection
		return context.WithValue(c.ctx, connKey{}, c)
	case apiKeyJoinGroup, apiKeyConsumerGroupHeartbeat, apiKeyShareGroupHeartbeat:
	default:
		if !forwardable[req.key] {
			return c.ctx
		}
	}
	// Kafka reports the host as Java's InetAddress.toString: "/127.0.0.1".
	ci := clientInfo{host: c.nc.RemoteAddr().String(), ip: c.ip}
	if h, _, err := net.SplitHostPort(ci.host); err == nil {
		ci.host = "/" + h
	}
	if req.clientID != nil {
		ci.id = *req.clientID
	}
	if forwardable[req.key] {
		ci.principal, _ = c.principal() // a failure: the controller refuses the empty principal
	}
	return context.WithValue(c.ctx, clientKey{}, ci)
}

// clientFrom returns the client handlerContext stored.
func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientKey{}).(clientInfo)
	return ci
}
