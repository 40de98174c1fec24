package replica

import "time"

// Throttle is a replication quota (Kafka's leader/follower
// replication.throttled.rate): the bytes a node serves to, or fetches
// for, throttled replicas, as a token bucket that refills at the rate and
// holds at most one second of it. Like Kafka's quota it does not block
// or cut a fetch short: a throttled replica is simply left out of fetches
// while the quota is exceeded (the bucket is below zero), and what a
// fetch brought is charged after it, so a fetch may overdraw the bucket
// by up to its size. Not safe for concurrent use; the zero value is
// ready (full on first use).
//
// A token bucket rather than Kafka's sampled rate over eleven one-second
// windows: Kafka's lets an idle quota burst to about ten seconds of its
// rate at once, which on a busy link is exactly the starvation the
// throttle is there to prevent.
type Throttle struct {
	last   time.Time
	tokens float64
}

// refill adds what rate bytes per second earned since the last call,
// capped at one second's worth.
func (t *Throttle) refill(now time.Time, rate int64) {
	if t.last.IsZero() {
		t.last, t.tokens = now, float64(rate)
		return
	}
	if d := now.Sub(t.last); d > 0 {
		t.tokens = min(t.tokens+d.Seconds()*float64(rate), float64(rate))
		t.last = now
	}
}

// Exceeded reports whether a throttled replica must sit this fetch out
// at rate (≤ 0: no throttle), and if so how long until it may fetch.
func (t *Throttle) Exceeded(now time.Time, rate int64) (bool, time.Duration) {
	if rate <= 0 {
		return false, 0
	}
	t.refill(now, rate)
	if t.tokens >= 0 {
		return false, 0
	}
	return true, time.Duration(-t.tokens / float64(rate) * float64(time.Second))
}

// Record charges n bytes a throttled replica moved.
func (t *Throttle) Record(now time.Time, rate int64, n int) {
	if rate <= 0 {
		return
	}
	t.refill(now, rate)
	t.tokens -= float64(n)
}
