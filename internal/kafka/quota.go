package kafka

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
)

// Client quotas, Kafka's way (KIP-13, KIP-55, KIP-124, KIP-219):
//
//   - producer_byte_rate counts the bytes of each Produce request,
//     consumer_byte_rate the record bytes of each consumer Fetch response,
//     each per second over a window of 11 one-second samples.
//     request_percentage is Kafka's share of request-handler thread time;
//     Strand has no handler thread pool, so it counts what such a pool
//     would spend: the CPU time (user + system, the OS thread's clock) of
//     handling each of the client's requests, as a percentage of one core
//     over the same window — 100 is one core's worth, 200 two, 5 a
//     twentieth. Time a request spends waiting (a Fetch long poll, acks
//     from followers, a lock) costs nothing, as in Kafka, where a delayed
//     request leaves its thread. The handler runs locked to its OS thread
//     for the measurement, and only for clients a request_percentage
//     quota applies to (cpuOf). Without a per-thread CPU clock (not
//     Linux) it counts the handler's wall time.
//   - The quota of a connection is the first entity that sets the value,
//     in Kafka's order: user+client-id, user+default client, user,
//     default user+client-id, default user+default client, default user,
//     client-id, default client. Each user / client id that a matched
//     entity covers has its own meter (two users under the default user
//     quota each get the whole quota).
//   - Over quota, the response says for how long the client should back
//     off (ThrottleMillis: (rate − quota) / quota × window, at most the
//     window), and the connection is muted that long after the response
//     is sent: its next request is not read, so a client that ignores
//     the hint is held back anyway.
//
// Quotas live in the cluster metadata (AlterClientQuota records); every
// server reloads them on each new image.

// quotaKinds are the quota values Strand enforces.
const (
	quotaProduce = "producer_byte_rate"
	quotaFetch   = "consumer_byte_rate"
	quotaRequest = "request_percentage"
)

const (
	quotaSamples  = 11
	quotaSample   = time.Second
	quotaMaxDelay = (quotaSamples - 1) * quotaSample
)

// quotas is a server's quota state: the configured values (replaced on
// each metadata image) and a meter per (kind, user, client id).
type quotas struct {
	config atomic.Pointer[map[cluster.QuotaEntity]map[string]float64]
	mu     sync.Mutex
	meters map[meterKey]*meter
	now    func() time.Time
}

type meterKey struct {
	kind, user, client string
}

func newQuotas() *quotas {
	q := &quotas{meters: map[meterKey]*meter{}, now: time.Now}
	q.config.Store(&map[cluster.QuotaEntity]map[string]float64{})
	return q
}

func (q *quotas) set(cfg map[cluster.QuotaEntity]map[string]float64) {
	q.config.Store(&cfg)
}

// limit resolves the quota of kind for (user, client) and the meter key it
// is measured under; ok is false when no entity sets it.
func (q *quotas) limit(kind, user, client string) (float64, meterKey, bool) {
	cfg := *q.config.Load()
	if len(cfg) == 0 {
		return 0, meterKey{}, false
	}
	d := cluster.QuotaDefault
	for _, e := range []cluster.QuotaEntity{
		{User: user, ClientID: client}, {User: user, ClientID: d}, {User: user},
		{User: d, ClientID: client}, {User: d, ClientID: d}, {User: d},
		{ClientID: client}, {ClientID: d},
	} {
		if v, ok := cfg[e][kind]; ok && v > 0 {
			k := meterKey{kind: kind}
			if e.User != "" {
				k.user = user
			}
			if e.ClientID != "" {
				k.client = client
			}
			return v, k, true
		}
	}
	return 0, meterKey{}, false
}

// record adds amount to the meter of kind for (user, client) and returns
// how long the client must back off (0: within quota).
func (q *quotas) record(kind, user, client string, amount float64) time.Duration {
	limit, key, ok := q.limit(kind, user, client)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.meters[key]
	if m == nil {
		if len(q.meters) > 100_000 {
			q.meters = map[meterKey]*meter{} // bounded: meters restart, as Kafka's expire
		}
		m = &meter{}
		q.meters[key] = m
	}
	return m.record(q.now(), amount, limit)
}

// meter is a rate over quotaSamples samples of quotaSample each.
type meter struct {
	start   time.Time // start of samples[0]
	samples [quotaSamples]float64
}

func (m *meter) record(now time.Time, amount, limit float64) time.Duration {
	if m.start.IsZero() {
		m.start = now.Truncate(quotaSample)
	}
	// Roll the window forward so that now falls in the last sample.
	for now.Sub(m.start) >= quotaSamples*quotaSample {
		copy(m.samples[:], m.samples[1:])
		m.samples[quotaSamples-1] = 0
		m.start = m.start.Add(quotaSample)
	}
	idx := int(now.Sub(m.start) / quotaSample)
	m.samples[idx] += amount
	total := 0.0
	for _, s := range m.samples[:idx+1] {
		total += s
	}
	// Kafka's window: the full samples before this one, plus the time
	// into this one; at least one sample, so a first burst is not read as
	// an infinite rate.
	elapsed := max(now.Sub(m.start), quotaSample)
	rate := total / elapsed.Seconds()
	if rate <= limit {
		return 0
	}
	return min(time.Duration((rate-limit)/limit*float64(elapsed)), quotaMaxDelay)
}

// quotaUser is the user a connection's quotas are resolved for: the
// principal's name ("ANONYMOUS" without authentication).
func (c *conn) quotaUser() string {
	p, err := c.principal()
	if err != nil {
		return ""
	}
	_, name, _ := strings.Cut(string(p), ":")
	return name
}

// quotaClient is the (user, client id) a request's quotas are resolved
// for.
func (c *conn) quotaClient(req *request) (user, client string) {
	if req.clientID != nil {
		client = *req.clientID
	}
	return c.quotaUser(), client
}

// metersCPU reports whether a request_percentage quota applies to req's
// client, so its handling is to be measured.
func (c *conn) metersCPU(req *request) bool {
	q := c.s.quotas
	if q == nil || len(*q.config.Load()) == 0 {
		return false
	}
	user, client := c.quotaClient(req)
	_, _, ok := q.limit(quotaRequest, user, client)
	return ok
}

// cpuOf runs fn locked to its OS thread and returns the CPU time that
// thread spent in it (its wall time where there is no thread clock).
func cpuOf(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	before, ok := threadCPU()
	fn()
	if after, ok2 := threadCPU(); ok && ok2 {
		return after - before
	}
	return time.Since(start)
}

// throttle records a handled request against the client's quotas
// (produce request bytes, fetch response record bytes, the CPU time cpu
// of handling it), sets the response's ThrottleMillis, and returns how
// long to mute the connection. frameLen is the request's size.
func (c *conn) throttle(req *request, frameLen int, resp kmsg.Response, cpu time.Duration) time.Duration {
	q := c.s.quotas
	if len(*q.config.Load()) == 0 {
		return 0
	}
	user, client := c.quotaClient(req)
	var d time.Duration
	if cpu > 0 {
		// Percent-seconds: the meter's rate is then a percentage of a core.
		d = q.record(quotaRequest, user, client, cpu.Seconds()*100)
	}
	var fetched *fetchResponse
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		d = max(d, q.record(quotaProduce, user, client, float64(frameLen)))
	case *fetchResponse:
		fetched = r
	case *kmsg.FetchResponse:
		fetched = &fetchResponse{FetchResponse: r}
	}
	if f, ok := req.kreq.(*kmsg.FetchRequest); ok && fetched != nil && f.ReplicaID < 0 && (f.Version < 15 || f.ReplicaState.ID < 0) {
		d = max(d, q.record(quotaFetch, user, client, float64(fetched.recordBytes())))
	}
	if d > 0 {
		setThrottle(resp, d)
	}
	return d
}

// setThrottle puts d into a response's ThrottleMillis, if it has one and
// does not already ask for longer.
func setThrottle(resp kmsg.Response, d time.Duration) {
	t, ok := resp.(interface {
		Throttle() (int32, bool)
		SetThrottle(int32)
	})
	if !ok {
		return
	}
	if cur, _ := t.Throttle(); int64(cur) < d.Milliseconds() {
		t.SetThrottle(int32(d.Milliseconds()))
	}
}
