package partlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
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
	var b []byte
	err := l.locate(from, limit, func(s *segment, pos int64, h record.Header) (err error) {
		b, err = s.readBatches(buf, pos, h, maxBytes, limit)
		return err
	})
	return b, err
}

// Span is a run of whole batches in a segment file, as ReadSpan finds it:
// bytes to hand the kernel (sendfile) rather than read.
type Span struct {
	// File is a duplicate descriptor of the segment's log file, owned by
	// the caller, who closes it. It reads the same bytes after the segment
	// is deleted, compacted away or its descriptor cached out.
	File *os.File
	Pos  int64 // where the first batch starts in File
	Len  int   // bytes, whole batches only
	// First and Last are the first batch's base offset and the last
	// batch's last offset.
	First, Last record.Offset
}

// ReadSpan is ReadInto without reading: it finds the same batches (the one
// holding from, then whole batches below limit within maxBytes) and
// returns where they lie, reading only batch headers at its two ends. A
// Span with Len 0 means nothing to read; vfs.ErrNoDescriptor means the
// log's files cannot be sent from (the caller reads them instead).
//
// The batches between the ends are not parsed, so damage inside a span is
// sent as it is (as Kafka's sendfile does); a client's CRC check catches it,
// and the next read that starts there finds it.
func (l *Log) ReadSpan(from record.Offset, maxBytes int, limit record.Offset) (Span, error) {
	var sp Span
	err := l.locate(from, limit, func(s *segment, pos int64, h record.Header) (err error) {
		sp, err = s.span(pos, h, maxBytes, limit)
		return err
	})
	return sp, err
}

// locate finds the first batch holding offsets at or after from in the
// segments, and calls read with its segment, position and header while the
// segment list is held (so no segment is closed under it). It returns
// without calling read when there is nothing below limit to read.
func (l *Log) locate(from, limit record.Offset, read func(s *segment, pos int64, h record.Header) error) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.Damaged(); err != nil {
		return err
	}
	l.segs.RLock()
	defer l.segs.RUnlock()
	start, end := record.Offset(l.start.Load()), record.Offset(l.end.Load())
	if from < start || from > end {
		return &OutOfRangeError{Offset: from, Start: start, End: end}
	}
	if from >= limit {
		return nil
	}
	list := l.segs.list
	i := sort.Search(len(list), func(i int) bool { return list[i].base > from }) - 1
	for i = max(i, 0); i < len(list); i++ {
		s := list[i]
		pos, h, ok, err := l.find(s, from, i == len(list)-1)
		if err != nil {
			return err
		}
		if !ok {
			continue // from lies in a gap after this segment's last batch
		}
		if h.BaseOffset >= limit {
			return nil
		}
		return l.readFailed(read(s, pos, h))
	}
	return nil
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

// span finds the batches readBatches would read, from the headers at the
// far end only: it starts at the last index entry before the byte budget
// runs out (or at first) and walks headers forward from there.
func (s *segment) span(pos int64, first record.Header, maxBytes int, limit record.Offset) (Span, error) {
	size := s.size.Load()
	bound := min(pos+int64(max(maxBytes, first.Size())), size)
	start, last := pos, first.BaseOffset-1
	if !s.indexBad.Load() {
		limitRel := uint32(min(max(int64(limit-s.base), 0), 1<<32-1))
		if e, ok := s.index.floor(uint32(min(bound, 1<<32-1)), limitRel); ok && int64(e.pos) > pos {
			// Every batch before the entry's lies whole below bound and
			// below limit (the entry's batch starts below limit).
			start, last = int64(e.pos), s.base+record.Offset(e.rel)-1
		}
	}
	buf := findBufs.Get().(*[]byte)
	defer findBufs.Put(buf)
	sc := scanner{f: s.log, name: s.logName(), limit: size, pos: start, chunk: findChunk, buf: (*buf)[:0]}
	for {
		err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Span{}, err
		}
		if sc.hdr.BaseOffset >= limit || sc.pos+int64(sc.hdr.Size()) > bound {
			break
		}
		last = sc.hdr.LastOffset()
		sc.advance()
	}
	if sc.pos == pos {
		return Span{}, &CorruptionError{File: s.logName(), Pos: pos, Err: record.ErrShortBatch}
	}
	f, err := vfs.Dup(s.log)
	if err != nil {
		return Span{}, err
	}
	return Span{File: f, Pos: pos, Len: int(sc.pos - pos), First: first.BaseOffset, Last: last}, nil
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
