package kafka

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults of the listener's limits (Kafka's names).
const (
	// DefaultMaxIdle is connections.max.idle.ms (Kafka: 10 minutes).
	DefaultMaxIdle = 10 * time.Minute
	// DefaultQueuedMaxRequestBytes is queued.max.request.bytes. Kafka's
	// default is unbounded; a broker whose clients can make it buffer
	// gigabytes of half-sent requests is not one to run, so Strand bounds it.
	DefaultQueuedMaxRequestBytes = 256 << 20
	// budgetFreeFrame: frames up to this size skip the request-bytes budget,
	// so a flood of large, slow requests never starves small ones (their
	// memory is bounded by the connection count instead).
	budgetFreeFrame = 64 << 10
	// DefaultFailedAuthDelay is connection.failed.authentication.delay.ms.
	DefaultFailedAuthDelay = 100 * time.Millisecond
)

// Accept backoff, as net/http: 5 ms doubling to 1 s while Accept fails
// with a temporary error (out of file descriptors, most often).
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
)

// temporaryAcceptError reports an Accept error the listener outlives.
func temporaryAcceptError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// acceptState is what the listener reports about itself.
type acceptState struct {
	errors  atomic.Uint64 // Accept errors so far
	refused atomic.Uint64 // connections closed at once by a connection limit
	// rateWaits counts the times max.connection.creation.rate made the
	// accept loop wait.
	rateWaits atomic.Uint64
	lastErr   atomic.Pointer[error]
	lastAt    atomic.Int64  // unix nanos of the last Accept error; 0 once it accepts again
	burst     atomic.Uint64 // Accept errors since it last accepted
	logEvery  rateLimit     // refused-connection log lines
}

// AcceptErrors returns how many times Accept failed.
func (s *Server) AcceptErrors() uint64 { return s.accept.errors.Load() }

// RefusedConnections returns how many connections a connection limit
// (or the per-IP creation rate) closed at once.
func (s *Server) RefusedConnections() uint64 { return s.accept.refused.Load() }

// ConnectionRateWaits returns how many times the broker-wide connection
// creation rate held the accept loop back.
func (s *Server) ConnectionRateWaits() uint64 { return s.accept.rateWaits.Load() }

// AcceptHealth returns nil while the listener accepts, or the error that
// made Accept fail within the last few seconds (it fails at least once a
// second while the condition lasts).
func (s *Server) AcceptHealth() error {
	at := s.accept.lastAt.Load()
	if at == 0 || time.Since(time.Unix(0, at)) > 3*acceptDelayMax {
		return nil
	}
	if p := s.accept.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// acceptFailed records a temporary Accept error and returns how long to
// wait before the next try. The first error of a burst is logged; the rest
// are counted, and reported when Accept works again.
func (s *Server) acceptFailed(ln net.Listener, err error, delay time.Duration) time.Duration {
	s.accept.errors.Add(1)
	s.accept.burst.Add(1)
	s.accept.lastErr.Store(&err)
	s.accept.lastAt.Store(time.Now().UnixNano())
	if delay == 0 {
		s.logger.Error("kafka: cannot accept connections; retrying with backoff",
			"listener", ln.Addr().String(), "err", err, "connections", s.Connections(),
			"hint", "raise the open-files limit (ulimit -n) or set --max-connections below it")
		return acceptDelayMin
	}
	return min(2*delay, acceptDelayMax)
}

// acceptRecovered ends a burst of Accept errors.
func (s *Server) acceptRecovered(ln net.Listener) {
	s.accept.lastAt.Store(0)
	s.logger.Warn("kafka: accepting connections again", "listener", ln.Addr().String(),
		"failed_accepts", s.accept.burst.Swap(0))
}

// admit applies max.connections and max.connections.per.ip to a new
// connection (s.mu held): false closes it at once. Kafka closes a
// connection past its per-IP limit the same way; past the broker-wide one
// it would stop accepting, which leaves clients hanging in the listen
// backlog, so Strand closes those too and says so.
//
// A connection past its IP's creation rate is closed later (closeAfter),
// the others at once.
func (s *Server) admit(nc net.Conn) (ip string, ok bool, closeAfter time.Duration) {
	ip = remoteIP(nc)
	why := ""
	switch {
	case s.cfg.MaxConnections > 0 && len(s.mu.conns) >= s.cfg.MaxConnections:
		why = "max.connections"
	case s.cfg.MaxConnectionsPerIP > 0 && s.mu.perIP[ip] >= s.cfg.MaxConnectionsPerIP:
		why = "max.connections.per.ip"
	default:
		var rateOK bool
		if rateOK, closeAfter = s.connRate.admitIP(ip, time.Now()); rateOK {
			s.mu.perIP[ip]++
			return ip, true, 0
		}
		// Closed after the wait its IP's rate needs, as Kafka's throttled
		// sockets: an immediate close would invite an immediate retry.
		why = "max.connection.creation.rate per ip"
	}
	s.accept.refused.Add(1)
	if ok, n := s.accept.logEvery.allow(10 * time.Second); ok {
		s.logger.Warn("kafka: refusing connection: limit reached", "limit", why, "remote", nc.RemoteAddr().String(),
			"connections", len(s.mu.conns), "close_after", closeAfter, "refused_since_last_line", n)
	}
	return ip, false, closeAfter
}

// forget undoes admit when a connection ends (s.mu held).
func (s *Server) forget(ip string) {
	if s.mu.perIP[ip]--; s.mu.perIP[ip] <= 0 {
		delete(s.mu.perIP, ip)
	}
}

func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// rateLimit lets one event through per interval and counts the rest.
type rateLimit struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now, and how many were suppressed since
// the last time it did.
func (r *rateLimit) allow(every time.Duration) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.last) >= every {
		n := r.suppressed
		r.last, r.suppressed = now, 0
		return true, n
	}
	r.suppressed++
	return false, 0
}

// keyedRateLimit is a rateLimit per message: a client retrying a request
// that fails the same way thousands of times a second gets one log line
// per interval, while other failures still get theirs.
type keyedRateLimit struct {
	mu     sync.Mutex
	limits map[string]*rateLimit
}

// keyedRateLimitMax bounds the messages tracked; past it they start over.
const keyedRateLimitMax = 1024

func (k *keyedRateLimit) allow(key string, every time.Duration) (bool, int) {
	k.mu.Lock()
	r := k.limits[key]
	if r == nil {
		if k.limits == nil || len(k.limits) >= keyedRateLimitMax {
			k.limits = make(map[string]*rateLimit)
		}
		r = &rateLimit{}
		k.limits[key] = r
	}
	k.mu.Unlock()
	return r.allow(every)
}

// byteBudget bounds the bytes of request frames read or queued across all
// connections (queued.max.request.bytes). A reader that finds it spent
// waits — it stops reading its socket — instead of allocating.
type byteBudget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int64
	used  int64
	peak  int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// cost is what a frame of n bytes takes from the budget.
func (b *byteBudget) cost(n int) int64 {
	if b == nil || n <= budgetFreeFrame {
		return 0
	}
	return min(int64(n), b.limit) // a frame above the whole budget runs alone
}

// acquire waits until n bytes fit, or done closes (false).
func (b *byteBudget) acquire(ctx context.Context, n int64) bool {
	if b == nil || n == 0 {
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used+n > b.limit {
		if ctx.Err() != nil {
			return false
		}
		b.cond.Wait()
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *byteBudget) release(n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

// QueuedRequestBytes returns the request bytes held now and at most so
// far, against queued.max.request.bytes.
func (s *Server) QueuedRequestBytes() (now, peak int64) {
	if s.budget == nil {
		return 0, 0
	}
	s.budget.mu.Lock()
	defer s.budget.mu.Unlock()
	return s.budget.used, s.budget.peak
}

// errIdle ends a connection idle for connections.max.idle.ms.
var errIdle = errors.New("kafka: connection idle")

// idleReader reads the connection under connections.max.idle.ms: a read
// that waits that long on a connection with no request in progress and no
// response unwritten ends it with errIdle.
type idleReader struct {
	c     *conn
	setAt time.Time // when the read deadline was last pushed out
}

func (c *conn) idleReader() io.Reader {
	if c.s.cfg.MaxIdle < 0 {
		return c.nc
	}
	return &idleReader{c: c}
}

func (r *idleReader) Read(p []byte) (int, error) {
	c, idle := r.c, r.c.s.cfg.MaxIdle
	for {
		// Pushing the deadline out on every read costs a timer update; a
		// sixteenth of the limit of slack saves most of them.
		if now := time.Now(); now.Sub(r.setAt) > idle/16 {
			c.nc.SetReadDeadline(now.Add(idle))
			r.setAt = now
		}
		n, err := c.nc.Read(p)
		var ne net.Error
		if n > 0 || err == nil || !errors.As(err, &ne) || !ne.Timeout() {
			return n, err
		}
		// The reader serves every request itself, so while it waits here
		// none is running: the connection is idle unless the writer still
		// has a response (a produce waiting for its commit, or a large
		// fetch being written).
		if c.unwritten.Load() == 0 {
			return 0, errIdle
		}
		r.setAt = time.Time{} // busy, not idle: wait again
	}
}
