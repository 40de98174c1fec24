package partlog

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/strandmq/strand/internal/record"
)

// Read returns whole batches, concatenated, starting with the batch that holds
// offset from (so the first batch may begin before from; clients skip the
// records they did not ask for, as with Kafka). It returns at least one batch
// when any is readable, even one larger than maxBytes, so a consumer always
// makes progress (KIP-74); otherwise it stops before exceeding maxBytes. It
// never returns a batch at or past the high watermark, and returns (nil, nil)
// when from is at or past it. Offsets below the log start offset or past the
// log end offset give an *OutOfRangeError.
func (l *Log) Read(from record.Offset, maxBytes int) ([]byte, error) {
	return l.ReadUpTo(from, maxBytes, l.HighWatermark())
}

// ReadUpTo is Read bounded by limit instead of the high watermark: a leader
// serving a follower reads up to its log end offset.
func (l *Log) ReadUpTo(from record.Offset, maxBytes int, limit record.Offset) ([]byte, error) {
	return l.ReadInto(nil, from, maxBytes, limit)
}

// ReadInto is ReadUpTo reading into buf when it is large enough, so a caller
// serving many fetches can reuse its buffers instead of allocating one per
// read. The result aliases buf (or a new slice when buf was too small).
func (l *Log) ReadInto(buf []byte, from record.Offset, maxBytes int, limit record.Offset) ([]byte, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if err := l.Damaged(); err != nil {
		return nil, err
	}
	l.segs.RLock()
	defer l.segs.RUnlock()
	start, end := record.Offset(l.start.Load()), record.Offset(l.end.Load())
	if from < start || from > end {
		return nil, &OutOfRangeError{Offset: from, Start: start, End: end}
	}
	if from >= limit {
		return nil, nil
	}
	list := l.segs.list
	i := sort.Search(len(list), func(i int) bool { return list[i].base > from }) - 1
	for i = max(i, 0); i < len(list); i++ {
		s := list[i]
		pos, h, ok, err := l.find(s, from, i == len(list)-1)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // from lies in a gap after this segment's last batch
		}
		if h.BaseOffset >= limit {
			return nil, nil
		}
		b, err := s.readBatches(buf, pos, h, maxBytes, limit)
		return b, l.readFailed(err)
	}
	return nil, nil
}

// find is segment.find with a wrong index entry repaired (index.go) and
// damage found on the way taking the log offline.
func (l *Log) find(s *segment, from record.Offset, active bool) (int64, record.Header, bool, error) {
	pos, h, ok, err := s.find(from)
	var mis *indexMismatchError
	if errors.As(err, &mis) {
		l.repairIndex(s, active, mis)
		pos, h, ok, err = s.find(from)
	}
	return pos, h, ok, l.readFailed(err)
}

// readFailed takes the log offline when a read met damaged bytes: every
// byte a reader can reach was written whole, so a batch that does not parse
// there is a storage fault, and serving around it would hand clients
// garbage (or the same error) forever.
func (l *Log) readFailed(err error) error {
	var c *CorruptionError
	if errors.As(err, &c) {
		l.MarkDamaged(c)
		return l.Damaged()
	}
	return err
}

// findChunk is what find reads ahead per read: the batch an index entry
// names lies at most an index interval (4 KiB by default) before the one
// wanted, and find needs only headers. The scanner's default (scanChunk,
// 256 KiB, for recovery's whole-batch reads) made every fetch — most of all
// a follower's, which fetches at each batch boundary — allocate, zero and
// read a quarter mebibyte it then threw away, and readBatches read the same
// bytes again.
const findChunk = 4 << 10

// findBufs recycles find's read-ahead: a fetch calls find once per
// partition, and the buffer never outlives the call.
var findBufs = sync.Pool{New: func() any { b := make([]byte, findChunk); return &b }}

// find returns the position and header of the first batch whose last offset is
// >= from; ok is false when the segment has none. It starts at the offset
// index's entry for from, and reports an entry that does not point at the
// batch it names as an *indexMismatchError.
func (s *segment) find(from record.Offset) (int64, record.Header, bool, error) {
	rel := uint32(0)
	if from > s.base {
		rel = uint32(min(int64(from-s.base), 1<<32-1))
	}
	entryRel, pos := uint32(0), uint32(0)
	if !s.indexBad.Load() {
		entryRel, pos = s.index.lookup(rel)
	}
	buf := findBufs.Get().(*[]byte)
	defer findBufs.Put(buf)
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), pos: int64(pos), chunk: findChunk, buf: (*buf)[:0]}
	for first := pos > 0; ; first = false {
		err := sc.next()
		// io.EOF: an entry the writer added before publishing its batch.
		if first && err != io.EOF && (err != nil || sc.hdr.BaseOffset != s.base+record.Offset(entryRel)) {
			return 0, record.Header{}, false, &indexMismatchError{rel: entryRel, pos: pos, got: sc.hdr.BaseOffset, err: err}
		}
		switch {
		case err == io.EOF:
			return 0, record.Header{}, false, nil
		case err != nil:
			return 0, record.Header{}, false, err
		}
		if sc.hdr.LastOffset() >= from {
			return sc.pos, sc.hdr, true, nil
		}
		sc.advance()
	}
}

// readBatches reads the batch first (at pos) and as many following whole
// batches below limit as fit in maxBytes.
func (s *segment) readBatches(buf []byte, pos int64, first record.Header, maxBytes int, limit record.Offset) ([]byte, error) {
	size := s.size.Load()
	n := int64(max(maxBytes, first.Size()))
	n = min(n, size-pos)
	if int64(cap(buf)) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if m, err := s.log.ReadAt(buf, pos); int64(m) < n {
		return nil, fmt.Errorf("partlog: read %s at %d: %w", s.logName(), pos, err)
	}
	// Keep whole batches below the limit.
	keep := 0
	for keep < len(buf) {
		h, err := record.ParseHeader(buf[keep:])
		if err != nil || keep+h.Size() > len(buf) || h.BaseOffset >= limit {
			break
		}
		keep += h.Size()
	}
	if keep == 0 {
		return nil, &CorruptionError{File: s.logName(), Pos: pos, Err: record.ErrShortBatch}
	}
	return buf[:keep], nil
}

// headerChunk is the read-ahead of a header-only scan: enough for a run of
// small batches' headers, little waste when batches are large.
const headerChunk = 16 << 10

// ScanHeaders calls fn with the header of every batch that holds offsets at
// or after from, in log order, up to the end offset when it started. It
// reads batch headers only (no payloads, no CRC checks): what rebuilding
// state kept in headers, such as producer sequences, needs. Retention and
// compaction wait while it runs.
func (l *Log) ScanHeaders(from record.Offset, fn func(h record.Header) error) error {
	return l.ScanHeadersControl(from, func(h record.Header, _ []byte) error { return fn(h) })
}

// ScanHeadersControl is ScanHeaders that also hands fn the whole batch of
// each control batch (nil for others): a transaction marker's type is in
// its record, and markers are small and few.
func (l *Log) ScanHeadersControl(from record.Offset, fn func(h record.Header, control []byte) error) error {
	if l.closed.Load() {
		return ErrClosed
	}
	end := record.Offset(l.end.Load())
	l.segs.RLock()
	defer l.segs.RUnlock()
	for i, s := range l.segs.list {
		if record.Offset(s.next.Load()) <= from {
			continue
		}
		pos, _, ok, err := l.find(s, from, i == len(l.segs.list)-1)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), pos: pos, chunk: headerChunk}
		for {
			err := sc.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return l.readFailed(err)
			}
			if sc.hdr.BaseOffset >= end {
				return nil
			}
			var control []byte
			if sc.hdr.IsControl() {
				if control, err = sc.fill(sc.pos, sc.hdr.Size()); err != nil {
					return l.readFailed(err)
				}
			}
			if err := fn(sc.hdr, control); err != nil {
				return err
			}
			sc.advance()
		}
	}
	return nil
}

// ActiveBase is the base offset of the segment appends go to; it changes
// when the log rolls.
func (l *Log) ActiveBase() record.Offset { return l.active().base }
