package partlog

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"

	"github.com/strandmq/strand/internal/vfs"
)

// Index files are append-only arrays of fixed-size big-endian entries, written
// without fsync: they are caches of facts the log itself holds, and recovery
// rebuilds any that fail validation.
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
)

type offsetEntry struct{ rel, pos uint32 }

type timeEntry struct {
	ts  int64
	rel uint32
}

// offsetIndex maps relative offsets to byte positions, sparsely. One writer
// appends; readers look up concurrently.
type offsetIndex struct {
	f  vfs.File
	mu struct {
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

func (x *offsetIndex) last() (offsetEntry, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.mu.entries) == 0 {
		return offsetEntry{}, false
	}
	return x.mu.entries[len(x.mu.entries)-1], true
}

func (x *offsetIndex) append(rel, pos uint32) error {
	var b [offsetEntrySize]byte
	binary.BigEndian.PutUint32(b[0:], rel)
	binary.BigEndian.PutUint32(b[4:], pos)
	if _, err := x.f.Write(b[:]); err != nil {
		return fmt.Errorf("partlog: write %s: %w", x.f.Name(), err)
	}
	x.mu.Lock()
	x.mu.entries = append(x.mu.entries, offsetEntry{rel, pos})
	x.mu.Unlock()
	return nil
}

// truncateFromPos drops entries at or after byte position pos.
func (x *offsetIndex) truncateFromPos(pos int64) error {
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return int64(e[i].pos) >= pos })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return x.f.Truncate(int64(i) * offsetEntrySize)
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
	f  vfs.File
	mu struct {
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
	var b [timeEntrySize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(ts))
	binary.BigEndian.PutUint32(b[8:], rel)
	if _, err := x.f.Write(b[:]); err != nil {
		return fmt.Errorf("partlog: write %s: %w", x.f.Name(), err)
	}
	x.mu.Lock()
	x.mu.entries = append(x.mu.entries, timeEntry{ts, rel})
	x.mu.Unlock()
	return nil
}

// truncateFromRel drops entries for relative offsets >= rel.
func (x *timeIndex) truncateFromRel(rel uint32) error {
	x.mu.Lock()
	e := x.mu.entries
	i := sort.Search(len(e), func(i int) bool { return e[i].rel >= rel })
	x.mu.entries = e[:i]
	x.mu.Unlock()
	return x.f.Truncate(int64(i) * timeEntrySize)
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
