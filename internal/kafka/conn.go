package kafka

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxKeptFrame is the largest frame buffer a connection keeps for reuse
// between requests (a producer's requests tend to be alike in size); larger
// ones are dropped after use.
const maxKeptFrame = 16 << 20

// outQueue is how many encoded responses may wait for the write goroutine.
// It bounds a connection's memory at about outQueue fetch responses (each at
// most the client's MaxBytes, plus one batch); Kafka itself holds one.
const outQueue = 4

// conn is one client connection: a read goroutine (read, decode, handle,
// encode) and a write goroutine (write responses in order).
type conn struct {
	s      *Server
	nc     net.Conn
	ctx    context.Context // cancelled when the connection or the server closes
	cancel context.CancelFunc
	out    chan outbound
}

func (s *Server) startConn(nc net.Conn) {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		nc.Close()
		return
	}
	c := &conn{s: s, nc: nc, out: make(chan outbound, outQueue)}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	s.mu.conns[c] = struct{}{}
	s.mu.Unlock()
	s.goTracked(c.readLoop)
	s.goTracked(c.writeLoop)
}

// readLoop reads and handles requests one at a time until the peer closes,
// a frame is malformed, or the server closes. Closing out lets the writer
// flush what is queued and then close the socket.
func (c *conn) readLoop() {
	defer close(c.out)
	br := bufio.NewReaderSize(c.nc, 32<<10)
	var buf []byte
	var clientID string
	for {
		frame, err := readFrame(br, c.s.cfg.MaxRequestBytes, buf)
		if err != nil {
			c.logEnd(err, clientID)
			return
		}
		req, err := parseRequest(frame)
		if req != nil && req.clientID != nil {
			clientID = *req.clientID
		}
		if err != nil {
			c.logEnd(err, clientID)
			return
		}
		b, err := c.handle(req)
		if err != nil {
			c.logEnd(err, clientID)
			return
		}
		if b.bufs != nil {
			select {
			case c.out <- b:
			case <-c.ctx.Done():
				return
			}
		}
		if cap(frame) <= maxKeptFrame {
			buf = frame[:0]
		} else {
			buf = nil
		}
	}
}

// handle runs the request's handler and encodes its response (nil: none to
// send), turning a panic in either into an error that closes this
// connection only.
func (c *conn) handle(req *request) (out outbound, err error) {
	defer func(start time.Time) { c.s.observe(req.key, start, err) }(time.Now()) // after the recover below
	defer func() {
		if r := recover(); r != nil {
			c.s.logger.Error("kafka: handler panicked", "api", kmsg.NameForKey(req.key), "version", req.version,
				"remote", c.nc.RemoteAddr().String(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("kafka: %s handler panicked: %v", kmsg.NameForKey(req.key), r)
		}
	}()
	var resp kmsg.Response
	if req.unsupportedApiVersions {
		resp = c.s.apiVersionsUnsupported()
	} else if resp, err = apis[req.key].handle(c.s, c.handlerContext(req), req.kreq); err != nil || resp == nil {
		return outbound{}, err
	}
	return encodeResponse(req.correlationID, resp), nil
}

func (c *conn) writeLoop() {
	defer func() {
		c.cancel()
		c.nc.Close()
		c.s.mu.Lock()
		delete(c.s.mu.conns, c)
		c.s.mu.Unlock()
	}()
	for b := range c.out {
		_, err := b.bufs.WriteTo(c.nc)
		if b.recycle != nil {
			b.recycle.recycle() // written (or failed): the log bytes are free
		}
		if err != nil {
			c.s.logger.Debug("kafka: write failed; closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			c.cancel()
			c.nc.Close()
			for range c.out { // let the reader finish
			}
			return
		}
	}
}

// logEnd logs why the read loop stopped: quietly for a peer that hung up or
// a server shutdown, loudly for a malformed request.
func (c *conn) logEnd(err error, clientID string) {
	remote := c.nc.RemoteAddr().String()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
		c.s.logger.Debug("kafka: connection closed", "remote", remote, "client_id", clientID)
	case errors.Is(err, ErrMalformed):
		c.s.logger.Warn("kafka: closing connection", "remote", remote, "client_id", clientID, "reason", err)
	default:
		c.s.logger.Info("kafka: connection ended", "remote", remote, "client_id", clientID, "err", err)
	}
}

// clientKey carries a request's client id and host to the handlers that
// record them (JoinGroup: DescribeGroups reports them per member).
type clientKey struct{}

type clientInfo struct{ id, host string }

// handlerContext is the connection's context, with the client's id and host
// for the API keys that need them.
func (c *conn) handlerContext(req *request) context.Context {
	if req.key != apiKeyJoinGroup {
		return c.ctx
	}
	// Kafka reports the host as Java's InetAddress.toString: "/127.0.0.1".
	ci := clientInfo{host: c.nc.RemoteAddr().String()}
	if h, _, err := net.SplitHostPort(ci.host); err == nil {
		ci.host = "/" + h
	}
	if req.clientID != nil {
		ci.id = *req.clientID
	}
	return context.WithValue(c.ctx, clientKey{}, ci)
}

// clientFrom returns the client id and host handlerContext stored.
func clientFrom(ctx context.Context) clientInfo {
	ci, _ := ctx.Value(clientKey{}).(clientInfo)
	return ci
}
