package replica

import (
	"testing"
	"time"
)

// TestThrottleRate: a throttled replica moves no more than the rate's
// bytes per second plus one second's burst and one fetch's overdraft,
// over any span, and an unthrottled one is never held back.
func TestThrottleRate(t *testing.T) {
	const rate, fetch = 1000, 300
	var th Throttle
	moved := 0
	for ms := 0; ms <= 10_000; ms += 10 {
		now := at(ms)
		if over, wait := th.Exceeded(now, rate); over {
			if wait <= 0 || wait > time.Duration(fetch)*time.Second/rate {
				t.Fatalf("at %d ms: wait %v, want in (0, %v]", ms, wait, time.Duration(fetch)*time.Second/rate)
			}
			continue
		}
		th.Record(now, rate, fetch)
		moved += fetch
	}
	if limit := rate*10 + rate + fetch; moved > limit {
		t.Fatalf("moved %d bytes in 10 s at %d B/s, more than %d", moved, rate, limit)
	}
	if moved < rate*10-fetch {
		t.Fatalf("moved only %d bytes in 10 s at %d B/s: the throttle holds back more than the rate", moved, rate)
	}
	if over, _ := th.Exceeded(at(10_000), 0); over {
		t.Fatal("rate 0 (no throttle) reported exceeded")
	}
}
