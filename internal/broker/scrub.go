package broker

import (
	"context"
	"time"
)

// Scrub defaults: a daily pass at a rate a disk serving clients barely
// notices.
const (
	DefaultScrubInterval       = 24 * time.Hour
	DefaultScrubBytesPerSecond = 32 << 20
)

// ScrubReport is what one scrub pass found.
type ScrubReport struct {
	Partitions int           // partitions verified
	Bytes      int64         // bytes of sealed segments verified
	Damaged    []string      // partitions the pass took offline
	Took       time.Duration // how long the pass ran
}

// Scrub verifies the CRC of every batch in every online partition's sealed
// segments, at most ScrubBytesPerSecond, and takes a partition whose data
// fails offline (KAFKA_STORAGE_ERROR, /healthz, strand_partitions_damaged)
// before a consumer is served its corrupt bytes. It stops when ctx ends.
func (b *Broker) Scrub(ctx context.Context) (ScrubReport, error) {
	start := time.Now()
	var rep ScrubReport
	pace := b.scrubPacer(start)
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if p.Failed() != nil || p.Closed() {
				continue
			}
			n, err := p.Log().Scrub(ctx, pace)
			rep.Bytes += n
			rep.Partitions++
			if p.Log().Damaged() != nil {
				rep.Damaged = append(rep.Damaged, partitionDirName(t.Name, p.ID()))
			} else if err != nil && ctx.Err() == nil && !p.Closed() {
				b.logger.Warn("broker: scrub could not read a partition", "topic", t.Name, "partition", p.ID(), "err", err)
			}
			if ctx.Err() != nil {
				rep.Took = time.Since(start)
				return rep, ctx.Err()
			}
		}
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// scrubPacer returns a pace function holding a pass to the configured
// rate: it sleeps until the bytes verified so far are due.
func (b *Broker) scrubPacer(start time.Time) func(context.Context, int) error {
	var done int64
	rate := float64(b.cfg.ScrubBytesPerSecond)
	return func(ctx context.Context, n int) error {
		done += int64(n)
		due := start.Add(time.Duration(float64(done) / rate * float64(time.Second)))
		wait := time.Until(due)
		if wait <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// scrubInBackground runs one pass, stopped by Close, and logs its outcome.
func (b *Broker) scrubInBackground() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	rep, err := b.Scrub(ctx)
	if err != nil {
		return // the broker is closing
	}
	attrs := []any{"partitions", rep.Partitions, "bytes", rep.Bytes, "took", rep.Took.Round(time.Millisecond)}
	if len(rep.Damaged) > 0 {
		b.logger.Error("broker: scrub found damaged data; those partitions are offline (see docs/OPERATIONS.md)",
			append(attrs, "damaged", rep.Damaged)...)
		return
	}
	b.logger.Info("broker: scrub verified every sealed segment", attrs...)
}
