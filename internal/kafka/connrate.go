package kafka

import (
	"sync"
	"time"
)

// Connection-creation rate (KIP-612), in two forms as in Kafka:
//
//   - broker-wide, max.connection.creation.rate (Config.MaxConnectionRate):
//     past it the accept loop waits before accepting the next connection,
//     so new clients queue in the listen backlog (Kafka's acceptor thread
//     blocks the same way) and every one is served eventually;
//   - per IP (Config.MaxConnectionRatePerIP, Kafka's connection_creation_rate
//     quota on the default ip entity): a connection past its IP's rate is
//     accepted and closed after the time its IP's rate needs to allow one
//     more (at most a second), so a client in a reconnect loop cannot spin;
//     other IPs are not held back. It counts in RefusedConnections.
//
// Both are token buckets refilled at the rate, holding at most one second
// of connections (at least one): up to rate connections may arrive at
// once, and over any longer span at most rate per second on average.
// Kafka measures the rate over quota.window.num one-second samples; a
// bucket refuses the same sustained rate without keeping samples.

// connBucket is one token bucket; the caller serializes its use.
type connBucket struct {
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since last, up to burst.
func (b *connBucket) refill(now time.Time, rate float64) {
	burst := max(rate, 1)
	if b.last.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	}
	b.last = now
}

// connRateLimiter holds the broker-wide bucket and one per IP.
type connRateLimiter struct {
	rate, perIP float64 // connections per second; 0: no limit

	mu     sync.Mutex
	broker connBucket
	ips    map[string]*connBucket
}

// maxTrackedIPs bounds the per-IP buckets; past it, the full ones (IPs
// that have not connected for a second or more) are dropped.
const maxTrackedIPs = 4096

// reserve takes a broker-wide token for a connection just accepted and
// returns how long to wait before accepting another (0 while a token is
// left for it).
func (l *connRateLimiter) reserve(now time.Time) time.Duration {
	if l.rate <= 0 {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.broker.refill(now, l.rate)
	l.broker.tokens--
	if l.broker.tokens >= 1 {
		return 0
	}
	// The next connection waits for its token.
	return time.Duration((1 - l.broker.tokens) / l.rate * float64(time.Second))
}

// admitIP takes a token of ip's bucket; when there is none it returns false
// and how long until there will be one.
func (l *connRateLimiter) admitIP(ip string, now time.Time) (bool, time.Duration) {
	if l.perIP <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.ips[ip]
	if b == nil {
		if len(l.ips) >= maxTrackedIPs {
			l.prune(now)
		}
		if l.ips == nil {
			l.ips = make(map[string]*connBucket)
		}
		b = &connBucket{}
		l.ips[ip] = b
	}
	b.refill(now, l.perIP)
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, min(time.Second, time.Duration((1-b.tokens)/l.perIP*float64(time.Second)))
}

// prune drops the buckets that are full again (l.mu held).
func (l *connRateLimiter) prune(now time.Time) {
	for ip, b := range l.ips {
		if b.refill(now, l.perIP); b.tokens >= max(l.perIP, 1) {
			delete(l.ips, ip)
		}
	}
}
