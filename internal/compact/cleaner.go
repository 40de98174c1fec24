package compact

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Log is what the cleaner needs of a partition log; *partlog.Log has it.
type Log interface {
	Dir() string
	LogEndOffset() record.Offset
	SealedSegments() []partlog.SegmentInfo
	ScanSegment(base record.Offset, fn func(batch []byte) error) error
	ReplaceSegments(bases []record.Offset, fill func(emit func(batch []byte) error) error) error
}

// Policy is one topic's compaction settings, with the Kafka topic configs
// they come from.
type Policy struct {
	// DeleteRetention is how long a tombstone is kept after the clean that
	// first kept it (delete.retention.ms).
	DeleteRetention time.Duration
	// MinDirtyRatio is the share of the sealed bytes that must be dirty
	// before a clean is worth it (min.cleanable.dirty.ratio).
	MinDirtyRatio float64
	// MinCompactionLag keeps a record out of cleaning until its segment's
	// newest record is this old (min.compaction.lag.ms).
	MinCompactionLag time.Duration
	// MaxCompactionLag forces a clean, whatever the dirty ratio, once the
	// oldest dirty segment's newest record is this old
	// (max.compaction.lag.ms); zero or negative: never.
	MaxCompactionLag time.Duration
	// SegmentBytes bounds the size of a cleaned segment: consecutive
	// segments are merged while their total fits (segment.bytes); zero:
	// partlog's default.
	SegmentBytes int64
	// Stable, when positive, is the log's last stable offset: a segment
	// reaching past it is not cleaned, since a transaction in it may still
	// abort (Kafka cleans only below the LSO). Zero: no bound.
	Stable record.Offset
	// Aborted lists the log's aborted transactions: their records never
	// supersede another and are removed.
	Aborted []AbortedTxn
}

// AbortedTxn is an aborted transaction of the log: producer ProducerID's
// batches from First to the abort marker at Last.
type AbortedTxn struct {
	ProducerID  int64
	First, Last record.Offset
}

// DefaultPolicy returns Kafka's defaults.
func DefaultPolicy() Policy {
	return Policy{
		DeleteRetention: 24 * time.Hour,
		MinDirtyRatio:   0.5,
		SegmentBytes:    partlog.DefaultSegmentBytes,
	}
}

// Cleaner compacts partition logs. The zero value is not usable: set FS.
type Cleaner struct {
	// FS holds the logs' directories (for the checkpoint file).
	FS vfs.FS
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives one line per clean; default slog.Default().
	Logger *slog.Logger
	// MapBytes bounds the offset map's memory (Kafka's
	// log.cleaner.dedupe.buffer.size); default DefaultMapBytes. A dirty
	// range with more keys than fit is cleaned over several Cleans.
	MapBytes int64
}

// DefaultMapBytes is Kafka's log.cleaner.dedupe.buffer.size default.
const DefaultMapBytes = 128 << 20

// Stats describes one Clean.
type Stats struct {
	// Cleaned is false when the log was not due (see the package doc).
	Cleaned bool
	// DirtyRatio is dirty bytes over sealed bytes in the cleanable range.
	DirtyRatio float64
	// Segments were read and Groups written.
	Segments, Groups int
	// BytesRead and BytesWritten count segment bytes.
	BytesRead, BytesWritten int64
	// Records read, kept, and dropped for each reason.
	RecordsRead, RecordsKept, Superseded, TombstonesDropped, KeylessDropped, AbortedDropped int64
	// MarkersDropped counts transaction markers removed: their
	// transactions' records were all gone and their delete horizon had
	// passed.
	MarkersDropped int64
	// Dirty is the checkpoint left: the first offset not yet cleaned.
	Dirty record.Offset
	// MapFull is set when the offset map could not hold the whole dirty
	// range: this Clean stopped early, the next one goes on.
	MapFull bool
}

// Clean cleans l once under policy p if it is due, and reports what it did.
// It never touches the active segment. On error, the segments already
// replaced stay replaced (each swap is atomic) and the checkpoint is not
// moved, so the next Clean redoes the rest.
func (c *Cleaner) Clean(l Log, p Policy) (Stats, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	nowMs := now().UnixMilli()
	ck, err := readCheckpoint(c.FS, l.Dir())
	if err != nil {
		c.logger().Warn("compact: ignoring checkpoint; cleaning from the log start", "dir", l.Dir(), "err", err)
	}
	if ck.dirty > l.LogEndOffset() { // the log was truncated under it
		ck = checkpoint{}
	}
	pl := makePlan(l.SealedSegments(), ck, p, nowMs)
	st := Stats{DirtyRatio: pl.ratio, Dirty: ck.dirty}
	if !pl.due {
		return st, nil
	}
	st.Cleaned = true
	w := &rewriter{
		now:     nowMs,
		horizon: nowMs + p.DeleteRetention.Milliseconds(),
		keys:    make(map[string]int),
		last:    make(map[int64]record.Offset),
		aborted: p.Aborted,
		inTxn:   make(map[int64]bool),
		stats:   &st,
	}
	mapBytes := c.MapBytes
	if mapBytes <= 0 {
		mapBytes = DefaultMapBytes
	}
	if pl, err = w.buildMap(l, pl, mapBytes); err != nil {
		return st, err
	}
	for _, g := range groupSegments(pl.segs, p.SegmentBytes) {
		if err := w.rewrite(l, g); err != nil {
			return st, err
		}
		st.Groups++
	}
	st.Dirty = pl.end
	if err := writeCheckpoint(c.FS, l.Dir(), checkpoint{dirty: pl.end, horizon: w.pending}); err != nil {
		return st, err
	}
	c.logger().Info("compact: cleaned", "dir", l.Dir(), "segments", st.Segments, "groups", st.Groups,
		"dirty_ratio", fmt.Sprintf("%.2f", st.DirtyRatio), "bytes_read", st.BytesRead,
		"bytes_written", st.BytesWritten, "records_read", st.RecordsRead, "records_kept", st.RecordsKept,
		"tombstones_dropped", st.TombstonesDropped, "keyless_dropped", st.KeylessDropped, "cleaned_to", st.Dirty,
		"map_full", st.MapFull)
	return st, nil
}

func (c *Cleaner) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// plan is the cleanable range of one Clean.
type plan struct {
	segs       []partlog.SegmentInfo // from the oldest sealed segment on
	firstDirty int                   // index in segs of the first dirty segment; len(segs) if none
	end        record.Offset         // the range's end: the next checkpoint
	ratio      float64
	due        bool
}

// makePlan picks the range (step 1 of the package doc) from the sealed
// segments, oldest first.
func makePlan(sealed []partlog.SegmentInfo, ck checkpoint, p Policy, now int64) plan {
	lagCut := now - p.MinCompactionLag.Milliseconds()
	var clean, dirty int64
	n, firstDirty := 0, -1
	for i, s := range sealed {
		if s.Next <= ck.dirty {
			clean += s.Size
			n = i + 1
			continue
		}
		if s.MaxTimestamp > lagCut || p.Stable > 0 && s.Next > p.Stable {
			break // too young (or undecided), and so is everything after it
		}
		if firstDirty < 0 {
			firstDirty = i
		}
		dirty += s.Size
		n = i + 1
	}
	pl := plan{segs: sealed[:n], firstDirty: n, end: ck.dirty}
	if n > 0 {
		pl.end = max(ck.dirty, sealed[n-1].Next)
	}
	if firstDirty >= 0 {
		pl.firstDirty = firstDirty
	}
	if clean+dirty > 0 {
		pl.ratio = float64(dirty) / float64(clean+dirty)
	}
	switch {
	case n == 0:
	case dirty > 0 && pl.ratio >= p.MinDirtyRatio:
		pl.due = true
	case dirty > 0 && p.MaxCompactionLag > 0 && sealed[firstDirty].MaxTimestamp <= now-p.MaxCompactionLag.Milliseconds():
		pl.due = true
	case ck.horizon > 0 && now >= ck.horizon:
		pl.due = true
	}
	return pl
}

// groupSegments splits segs into runs of consecutive segments whose total
// size fits segmentBytes (and whose offsets fit a segment's 32-bit relative
// offsets); each run becomes one segment.
func groupSegments(segs []partlog.SegmentInfo, segmentBytes int64) [][]partlog.SegmentInfo {
	if segmentBytes <= 0 {
		segmentBytes = partlog.DefaultSegmentBytes
	}
	var out [][]partlog.SegmentInfo
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].Size
		for j < len(segs) && size+segs[j].Size <= segmentBytes && segs[j].Next-segs[i].Base <= math.MaxInt32 {
			size += segs[j].Size
			j++
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}
