package partlog

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Index files are append-only arrays of fixed-size big-endian entries, written
// without fsync: they are caches of facts the log itself holds, and recovery
// rebuilds any that fail validation. New entries are buffered and written in
// bulk (at indexFlushBytes, and whenever the segment is synced or closed), which
// saves a syscall per batch on the append path; after an unclean shutdown the
// segments that could have lost buffered entries are re-scanned in full anyway.
//
//	offset index (.index), 8 bytes an entry:
//	+-----------------------+-----------------------+
//	| relative offset (u32) | byte position (u32)   |   batch at base+rel starts at position
//	+-----------------------+-----------------------+
//
//	time index (.timeindex), 12 bytes an entry:
//	+-----------------------------------------------+-----------------------+
//	| max timestamp so far (i64, ms)                | relative offset (u32) |
//	+-----------------------------------------------+-----------------------+
//	every batch up to and including the one at base+rel has timestamps <= ts
const (
	offsetEntrySize = 8
	timeEntrySize   = 12
	indexFlushBytes = 4096
)

type offsetEntry struct{ rel, pos uint32 }

type timeEntry struct {
	ts  int64
	rel uint32
}

// offsetIndex maps relative offsets to byte positions, sparsely. One writer
// appends; readers look up concurrently.
type offsetIndex struct {
	f       vfs.File
	pending []byte // entries not yet written to f (writer-owned)
	mu      struct {
		sync.RWMutex
		entries []offsetEntry
	}
}

// lookup returns the position of the last indexed batch whose relative offset
// is <= rel, or 0.
func (x *offsetIndex) lookup(rel uint32) (uint32, uint32) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].rel > rel })
	if i == 0 {
		return 0, 0
	}
	return e[i-1].rel, e[i-1].pos
}

// floor returns the last entry at or before byte position pos whose
// relative offset is below rel; ok is false when there is none. Entries
// rise in both offset and position, so both bounds cut the same prefix.
func (x *offsetIndex) floor(pos, rel uint32) (offsetEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].pos > pos || e[i].rel >= rel })
	if i == 0 {
		return offsetEntry{}, false
	}
	return e[i-1], true
}

func (x *offsetIndex) last() (offsetEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.mu.entries) == 0 {
		return offsetEntry{}, false
	}
	return x.mu.entries[len(x.mu.entries)-1], true
}

func (x *offsetIndex) append(rel, pos uint32) error {
	x.pending = binary.BigEndian.AppendUint32(x.pending, rel)
	x.pending = binary.BigEndian.AppendUint32(x.pending, pos)
	x.mu.Lock()
	x.mu.entries = append(x.mu.entries, offsetEntry{rel, pos})
	x.mu.Unlock()
	if len(x.pending) >= indexFlushBytes {
		return x.flush()
	}
	return nil
}

// flush writes buffered entries to the file.
func (x *offsetIndex) flush() error { return flushPending(x.f, &x.pending) }

func flushPending(f vfs.File, pending *[]byte) error {
	if len(*pending) == 0 {
		return nil
	}
	if _, err := f.Write(*pending); err != nil {
		return fmt.Errorf("partlog: write %s: %w", f.Name(), err)
	}
	*pending = (*pending)[:0]
	return nil
}

// truncateFromPos drops entries at or after byte position pos.
func (x *offsetIndex) truncateFromPos(pos int64) error {
	x.pending = x.pending[:0] // the file is rewritten from the entries below
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return int64(e[i].pos) >= pos })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return rewriteIndex(x.f, i*offsetEntrySize, func(b []byte) []byte {
		for _, en := range x.mu.entries {
			b = binary.BigEndian.AppendUint32(b, en.rel)
			b = binary.BigEndian.AppendUint32(b, en.pos)
		}
		return b
	})
}

// rewriteIndex makes an index file hold exactly the first n bytes of its
// entries: the file may lack buffered entries that were never written, so it
// is truncated to what it holds and the missing tail is written out.
func rewriteIndex(f vfs.File, n int, encode func([]byte) []byte) error {
	size, err := f.Size()
	if err != nil {
		return err
	}
	if size >= int64(n) {
		return f.Truncate(int64(n))
	}
	all := encode(make([]byte, 0, n))
	if _, err := f.Write(all[size:n]); err != nil {
		return fmt.Errorf("partlog: write %s: %w", f.Name(), err)
	}
	return nil
}

// decodeOffsetIndex parses and validates an offset index against the size of
// its log: entries strictly increasing in both fields, positions inside the log.
func decodeOffsetIndex(b []byte, logSize int64) ([]offsetEntry, error) {
	if len(b)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("size %d not a multiple of %d", len(b), offsetEntrySize)
	}
	out := make([]offsetEntry, 0, len(b)/offsetEntrySize)
	for i := 0; i < len(b); i += offsetEntrySize {
		e := offsetEntry{binary.BigEndian.Uint32(b[i:]), binary.BigEndian.Uint32(b[i+4:])}
		if int64(e.pos) >= logSize {
			return nil, fmt.Errorf("entry %d: position %d beyond log size %d", i/offsetEntrySize, e.pos, logSize)
		}
		if n := len(out); n > 0 && (e.rel <= out[n-1].rel || e.pos <= out[n-1].pos) {
			return nil, fmt.Errorf("entry %d: not increasing", i/offsetEntrySize)
		}
		out = append(out, e)
	}
	return out, nil
}

// timeIndex maps timestamps to relative offsets, sparsely and monotonically.
type timeIndex struct {
	f       vfs.File
	pending []byte // entries not yet written to f (writer-owned)
	mu      struct {
		sync.RWMutex
		entries []timeEntry
	}
}

// lookup returns the relative offset of the last entry whose timestamp is < ts:
// every batch before it is older than ts. ok is false when none is.
func (x *timeIndex) lookup(ts int64) (rel uint32, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].ts >= ts })
	if i == 0 {
		return 0, false
	}
	return e[i-1].rel, true
}

func (x *timeIndex) append(ts int64, rel uint32) error {
	x.pending = binary.BigEndian.AppendUint64(x.pending, uint64(ts))
	x.pending = binary.BigEndian.AppendUint32(x.pending, rel)
	x.mu.Lock()
	x.mu.entries = append(x.mu.entries, timeEntry{ts, rel})
	x.mu.Unlock()
	if len(x.pending) >= indexFlushBytes {
		return x.flush()
	}
	return nil
}

func (x *timeIndex) flush() error { return flushPending(x.f, &x.pending) }

// truncateFromRel drops entries for relative offsets >= rel.
func (x *timeIndex) truncateFromRel(rel uint32) error {
	x.pending = x.pending[:0]
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].rel >= rel })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return rewriteIndex(x.f, i*timeEntrySize, func(b []byte) []byte {
		for _, en := range x.mu.entries {
			b = binary.BigEndian.AppendUint64(b, uint64(en.ts))
			b = binary.BigEndian.AppendUint32(b, en.rel)
		}
		return b
	})
}

func decodeTimeIndex(b []byte, maxRel uint32) ([]timeEntry, error) {
	if len(b)%timeEntrySize != 0 {
		return nil, fmt.Errorf("size %d not a multiple of %d", len(b), timeEntrySize)
	}
	out := make([]timeEntry, 0, len(b)/timeEntrySize)
	for i := 0; i < len(b); i += timeEntrySize {
		e := timeEntry{int64(binary.BigEndian.Uint64(b[i:])), binary.BigEndian.Uint32(b[i+8:])}
		if e.rel > maxRel {
			return nil, fmt.Errorf("entry %d: offset %d beyond the log", i/timeEntrySize, e.rel)
		}
		if n := len(out); n > 0 && (e.rel <= out[n-1].rel || e.ts <= out[n-1].ts) {
			return nil, fmt.Errorf("entry %d: not increasing", i/timeEntrySize)
		}
		out = append(out, e)
	}
	return out, nil
}

// indexMismatchError: an offset index entry does not point at the batch it
// names. The index is a cache of the log; a wrong entry is repaired, never
// served from.
type indexMismatchError struct {
	rel, pos uint32
	got      record.Offset // base offset of what is at pos (when it parsed)
	err      error         // why nothing parsed at pos
}

func (e *indexMismatchError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("entry (+%d at position %d) points at no batch: %v", e.rel, e.pos, e.err)
	}
	return fmt.Sprintf("entry (+%d at position %d) points at the batch of offset %d", e.rel, e.pos, e.got)
}

// repairIndex answers a wrong offset index entry: reads of the segment
// stop using its index, and a sealed segment's index is rebuilt from the
// log (the active one's is rebuilt when the log next opens: its writer
// owns the file). Concurrent readers that find the same entry leave the
// repair to the first.
func (l *Log) repairIndex(s *segment, active bool, mis *indexMismatchError) {
	if !s.indexBad.CompareAndSwap(false, true) {
		return
	}
	l.logger.Warn("partlog: offset index does not match its log; reading without it and rebuilding it",
		"dir", l.dir, "file", segmentName(s.base)+indexSuffix, "reason", mis.Error())
	if active {
		return
	}
	if err := s.rebuildIndex(); err != nil {
		if l.readFailed(err) != err {
			return // the log itself is damaged: it went offline
		}
		l.logger.Warn("partlog: rebuilding offset index failed; reads scan the segment", "dir", l.dir,
			"file", segmentName(s.base)+indexSuffix, "err", err)
		return
	}
	s.indexBad.Store(false)
}

// rebuildIndex recomputes a sealed segment's offset index from its log and
// rewrites the file.
func (s *segment) rebuildIndex() error {
	var entries []offsetEntry
	since := s.indexEvery // index the first batch
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), chunk: headerChunk}
	for {
		err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if since >= s.indexEvery {
			entries = append(entries, offsetEntry{uint32(sc.hdr.BaseOffset - s.base), uint32(sc.pos)})
			since = 0
		}
		since += int64(sc.hdr.Size())
		sc.advance()
	}
	b := make([]byte, 0, len(entries)*offsetEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	if err := s.index.f.Truncate(0); err != nil {
		return err
	}
	if _, err := s.index.f.Write(b); err != nil {
		return err
	}
	s.index.mu.Lock()
	s.index.mu.entries = entries
	s.index.mu.Unlock()
	return nil
}
