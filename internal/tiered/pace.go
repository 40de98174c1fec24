package tiered

import (
	"context"
	"io"
	"sync"
	"time"
)

// pacer spreads reads over time so that at most rate bytes a second pass,
// summed over every reader sharing it: each read reserves its bytes' share
// of time after the previous reservation and sleeps until then.
type pacer struct {
	rate  int64
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	mu    sync.Mutex
	next  time.Time // when the bytes reserved so far have all passed
}

// wait blocks until n more bytes may pass.
func (p *pacer) wait(ctx context.Context, n int) error {
	p.mu.Lock()
	now := p.now()
	start := p.next // this read's slot starts when the previous one's ends
	if start.Before(now) {
		start = now
	}
	p.next = start.Add(time.Duration(int64(n) * int64(time.Second) / p.rate))
	d := start.Sub(now)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return p.sleep(ctx, d)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// paced returns r limited by the tier's upload bandwidth, if it has one.
func (t *Tier) paced(ctx context.Context, r io.Reader) io.Reader {
	if t.pace == nil {
		return r
	}
	return &pacedReader{ctx: ctx, r: r, p: t.pace}
}

// pacedReader is a reader whose bytes pass through a pacer.
type pacedReader struct {
	ctx context.Context
	r   io.Reader
	p   *pacer
}

func (r *pacedReader) Read(b []byte) (int, error) {
	b = b[:min(len(b), 64<<10)] // small steps: a large read would burst
	if err := r.p.wait(r.ctx, len(b)); err != nil {
		return 0, err
	}
	return r.r.Read(b)
}
