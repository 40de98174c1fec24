package partlog

import (
	"context"
	"errors"
	"io"
	"slices"
)

// scrubPaceBytes is how many verified bytes go between calls to a
// scrub's pace function.
const scrubPaceBytes = 1 << 20

// Scrub verifies the CRC of every batch in the log's sealed segments, as
// storage systems scrub their disks: sealed data is never rewritten in
// place, so a batch that fails is a storage fault (bit rot, a bad copy, a
// stray write), and the log goes offline (MarkDamaged) before a consumer
// is handed it. The active segment is left to crash recovery.
//
// It holds no lock while it reads: retention and compaction go on, and a
// segment they remove under it is skipped. pace is called every MiB or
// so with the bytes verified since its last call; it sleeps to bound the
// scrub's rate, and an error from it (or ctx ending) stops the scrub.
// Scrub returns the bytes it verified.
func (l *Log) Scrub(ctx context.Context, pace func(ctx context.Context, n int) error) (int64, error) {
	if l.Damaged() != nil || l.closed.Load() {
		return 0, nil
	}
	l.segs.RLock()
	sealed := slices.Clone(l.segs.list[:len(l.segs.list)-1])
	l.segs.RUnlock()
	var total int64
	for _, s := range sealed {
		n, err := l.scrubSegment(ctx, s, pace)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (l *Log) scrubSegment(ctx context.Context, s *segment, pace func(ctx context.Context, n int) error) (int64, error) {
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), verify: true}
	var total int64
	unpaced := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		err := sc.next()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			if !l.holds(s) {
				return total, nil // removed by retention or compaction meanwhile
			}
			var c *CorruptionError
			if errors.As(err, &c) {
				l.MarkDamaged(c)
				return total, l.Damaged()
			}
			return total, err
		}
		n := sc.hdr.Size()
		total += int64(n)
		sc.advance()
		if unpaced += n; unpaced >= scrubPaceBytes {
			if err := pace(ctx, unpaced); err != nil {
				return total, err
			}
			unpaced = 0
		}
	}
}

// holds reports whether s is still one of the open log's segments.
func (l *Log) holds(s *segment) bool {
	l.segs.RLock()
	defer l.segs.RUnlock()
	return !l.closed.Load() && slices.Contains(l.segs.list, s)
}
