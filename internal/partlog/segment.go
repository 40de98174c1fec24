package partlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted" // a segment's file retention took out of the log, not yet removed
)

// segmentSuffixes are the suffixes of a segment's files.
var segmentSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix}

// segmentName is the zero-padded base offset every file of a segment is named by.
func segmentName(base record.Offset) string { return fmt.Sprintf("%020d", base) }

// parseSegmentName returns the base offset of a "<base>.log" file name.
func parseSegmentName(name string) (record.Offset, bool) {
	stem, ok := strings.CutSuffix(name, logSuffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return record.Offset(n), true
}

// segment is one log file and its two indexes. Sealed segments never change;
// the active one is appended to by the single writer, which publishes size and
// next only after the bytes are written, so readers never see a partial batch.
type segment struct {
	dir   string
	base  record.Offset
	log   vfs.File
	index offsetIndex
	times timeIndex

	size atomic.Int64 // bytes of whole batches
	next atomic.Int64 // offset after the last batch (base when empty)

	indexEvery int64 // index.interval.bytes
	// indexRebuilt says why open found the indexes unusable and rebuilt
	// them ("" when they were used).
	indexRebuilt string
	// indexBad is set while the offset index is known wrong: lookups scan
	// from the segment's start instead (repairIndex).
	indexBad atomic.Bool

	dirty       atomic.Bool  // bytes written since the last fsync
	maxTS       atomic.Int64 // largest batch MaxTimestamp, -1 when empty
	maxTSOffset atomic.Int64 // base offset of the batch holding maxTS

	// Writer-owned (guarded by Log.mu).
	firstTS    int64 // when the segment took its first batch (for segment.ms)
	sinceIndex int64 // bytes appended since the last offset-index entry
	// cached is where the cache window's last hint ended: bytes before it
	// were handed to the disk (Log.cacheWindowLocked).
	cached int64
	// allocated is where Preallocate's reserve ends (Log.preallocateLocked).
	allocated int64
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

func (s *segment) logName() string { return segmentName(s.base) + logSuffix }

// createSegment makes a new empty segment, and makes its existence durable
// when syncDir is set (otherwise the caller must, before anything in it is
// called durable: Log.dirGen).
func createSegment(fs vfs.FS, dir string, base record.Offset, indexEvery int64, syncDir bool) (*segment, error) {
	s := &segment{dir: dir, base: base, indexEvery: indexEvery, firstTS: -1}
	s.maxTS.Store(-1)
	s.maxTSOffset.Store(-1)
	s.next.Store(int64(base))
	var err error
	flags := os.O_RDWR | os.O_CREATE | os.O_TRUNC | os.O_APPEND
	if s.log, err = fs.OpenFile(s.path(logSuffix), flags, 0o644); err != nil {
		return nil, fmt.Errorf("partlog: create segment: %w", err)
	}
	if s.index.f, err = fs.OpenFile(s.path(indexSuffix), flags, 0o644); err != nil {
		s.close()
		return nil, fmt.Errorf("partlog: create index: %w", err)
	}
	if s.times.f, err = fs.OpenFile(s.path(timeIndexSuffix), flags, 0o644); err != nil {
		s.close()
		return nil, fmt.Errorf("partlog: create time index: %w", err)
	}
	if !syncDir {
		return s, nil
	}
	if err := fs.SyncDir(dir); err != nil {
		s.close()
		return nil, fmt.Errorf("partlog: sync dir after creating segment: %w", err)
	}
	return s, nil
}

func (s *segment) close() error {
	var errs []error
	if s.index.f != nil {
		errs = append(errs, s.index.flush())
	}
	if s.times.f != nil {
		errs = append(errs, s.times.flush())
	}
	for _, f := range []vfs.File{s.log, s.index.f, s.times.f} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// remove closes the segment and deletes its files, under their names or
// renamed .deleted. Removal is made durable by the caller's SyncDir.
func (s *segment) remove(fs vfs.FS) error {
	s.close()
	var errs []error
	for _, suf := range segmentSuffixes {
		for _, p := range []string{s.path(suf), s.path(suf) + deletedSuffix} {
			if err := fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// renameDeleted renames the segment's files with the .deleted suffix: no
// longer the log's, whatever happens before they are removed. Open removes
// any it finds.
func (s *segment) renameDeleted(fs vfs.FS) error {
	for _, suf := range segmentSuffixes {
		if err := fs.Rename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// flushIndexes writes buffered index entries. Only the writer calls it (the
// buffers are writer-owned): at roll, Sync and close.
func (s *segment) flushIndexes() error {
	return errors.Join(s.index.flush(), s.times.flush())
}

// sync fsyncs the segment's files; the background flusher calls it on sealed
// segments, whose index buffers were flushed when they were sealed.
func (s *segment) sync() error {
	s.dirty.Store(false)
	if err := s.log.Sync(); err != nil {
		s.dirty.Store(true)
		return fmt.Errorf("partlog: fsync %s: %w", s.logName(), err)
	}
	// Indexes are rebuilt when invalid, so their fsync failing loses nothing;
	// still, report it: the disk is in trouble.
	if err := errors.Join(s.index.f.Sync(), s.times.f.Sync()); err != nil {
		return fmt.Errorf("partlog: fsync indexes of %s: %w", s.logName(), err)
	}
	return nil
}

// scanner reads batch headers (and optionally whole batches) sequentially from
// a segment file through one reusable buffer.
type scanner struct {
	f      vfs.File
	name   string
	limit  int64 // file size
	pos    int64 // position of the next batch
	verify bool  // read whole batches and check their CRCs
	chunk  int   // bytes read ahead per read; 0 means scanChunk

	buf    []byte
	bufPos int64 // file position of buf[0]
	hdr    record.Header
	batch  []byte // the current batch when verify is set
}

const scanChunk = 256 << 10

// fill makes buf cover [pos, pos+n) if the file has those bytes.
func (sc *scanner) fill(pos int64, n int) ([]byte, error) {
	if pos >= sc.bufPos && pos+int64(n) <= sc.bufPos+int64(len(sc.buf)) {
		off := pos - sc.bufPos
		return sc.buf[off : off+int64(n)], nil
	}
	chunk := sc.chunk
	if chunk == 0 {
		chunk = scanChunk
	}
	want := max(n, chunk)
	if rest := sc.limit - pos; int64(want) > rest {
		want = int(rest)
	}
	if want < n {
		return nil, record.ErrShortBatch
	}
	if cap(sc.buf) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	m, err := sc.f.ReadAt(sc.buf, pos)
	if m < want {
		if err == nil || err == io.EOF {
			err = record.ErrShortBatch
		}
		sc.buf = sc.buf[:0]
		return nil, err
	}
	sc.bufPos = pos
	return sc.buf[:n], nil
}

// next advances to the following batch. It returns io.EOF at a clean end, and a
// *CorruptionError at a torn, malformed or (when verifying) CRC-failing batch.
func (sc *scanner) next() error {
	if sc.pos >= sc.limit {
		return io.EOF
	}
	corrupt := func(err error) error { return &CorruptionError{File: sc.name, Pos: sc.pos, Err: err} }
	n := record.HeaderSize
	if rest := sc.limit - sc.pos; rest < int64(n) {
		return corrupt(record.ErrShortBatch)
	}
	b, err := sc.fill(sc.pos, n)
	if err != nil {
		return corrupt(err)
	}
	h, err := record.ParseHeader(b)
	if err != nil {
		return corrupt(err)
	}
	if sc.pos+int64(h.Size()) > sc.limit {
		return corrupt(record.ErrShortBatch)
	}
	if sc.verify {
		whole, err := sc.fill(sc.pos, h.Size())
		if err != nil {
			return corrupt(err)
		}
		if _, err := record.Check(whole); err != nil {
			return corrupt(err)
		}
		sc.batch = whole
	}
	sc.hdr = h
	return nil
}

func (sc *scanner) advance() { sc.pos += int64(sc.hdr.Size()) }

// openSegment opens an existing segment. It walks the log from the last
// offset-index entry (or from the start when verify is set, or when an index
// is unusable) to learn where the last whole batch ends, truncating anything
// after it; a truncation is reported through the returned *CorruptionError
// while the segment itself is still usable.
func openSegment(fs vfs.FS, dir string, base record.Offset, verify, truncate bool, indexEvery int64) (*segment, *CorruptionError, error) {
	s := &segment{dir: dir, base: base, indexEvery: indexEvery, firstTS: -1}
	s.maxTS.Store(-1)
	s.maxTSOffset.Store(-1)
	var err error
	if s.log, err = fs.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_APPEND, 0); err != nil {
		return nil, nil, fmt.Errorf("partlog: open segment: %w", err)
	}
	logSize, err := s.log.Size()
	if err != nil {
		s.close()
		return nil, nil, fmt.Errorf("partlog: stat %s: %w", s.logName(), err)
	}
	idxOK, err := s.loadIndexes(fs, logSize)
	if err != nil {
		s.close()
		return nil, nil, err
	}
	start := int64(0)
	switch {
	case !verify && idxOK:
		if e, ok := s.index.last(); ok {
			start = int64(e.pos)
		}
	case idxOK:
		// Verifying walks every batch and indexes it again: start the
		// indexes empty, or every entry would be there twice.
		if err := s.resetIndexes(); err != nil {
			s.close()
			return nil, nil, err
		}
		idxOK = false
	}
	sc := &scanner{f: s.log, name: s.logName(), limit: logSize, pos: start, verify: verify}
	expect := s.base
	if start > 0 {
		e, _ := s.index.last()
		expect = s.base + record.Offset(e.rel)
	}
	var bad *CorruptionError
	for {
		err := sc.next()
		if err == io.EOF {
			break
		}
		if err == nil && sc.hdr.BaseOffset < expect {
			err = &CorruptionError{File: sc.name, Pos: sc.pos, Err: fmt.Errorf("offset %d goes backwards (expected >= %d)", sc.hdr.BaseOffset, expect)}
		}
		if err == nil && int64(sc.hdr.BaseOffset-s.base)+int64(sc.hdr.LastOffsetDelta) >= 1<<31-1 {
			err = &CorruptionError{File: sc.name, Pos: sc.pos, Err: fmt.Errorf("offset %d too far from segment base %d", sc.hdr.BaseOffset, s.base)}
		}
		if err != nil {
			errors.As(err, &bad)
			if bad == nil {
				s.close()
				return nil, nil, err
			}
			break
		}
		if !idxOK {
			if err := s.indexBatch(&sc.hdr, sc.pos); err != nil {
				s.close()
				return nil, nil, err
			}
		} else {
			s.noteTimestamp(&sc.hdr)
		}
		expect = sc.hdr.NextOffset()
		sc.advance()
	}
	if bad != nil && truncate {
		if err := s.log.Truncate(sc.pos); err != nil {
			s.close()
			return nil, nil, fmt.Errorf("partlog: truncate %s after corruption: %w", s.logName(), err)
		}
		if err := s.truncateIndexes(sc.pos, expect); err != nil {
			s.close()
			return nil, nil, err
		}
	}
	s.size.Store(sc.pos)
	s.next.Store(int64(expect))
	if idxOK {
		s.restoreMaxTimestamp()
	}
	return s, bad, nil
}

// loadIndexes opens both index files and validates them; when either is missing
// or invalid it recreates both empty and reports false, so the caller rebuilds.
// Each file is read through the descriptor it stays open with: at start-up
// with thousands of partitions, opens are much of the cost.
func (s *segment) loadIndexes(fs vfs.FS, logSize int64) (bool, error) {
	ok := true
	var err error
	s.index.f, err = fs.OpenFile(s.path(indexSuffix), os.O_RDWR|os.O_APPEND, 0)
	var entries []offsetEntry
	if err == nil {
		var idx []byte
		if idx, err = readWhole(s.index.f); err == nil {
			entries, err = decodeOffsetIndex(idx, logSize)
		}
	}
	if err == nil && len(entries) > 0 {
		err = s.checkEntry(entries[len(entries)-1], logSize)
	}
	if err != nil {
		ok = false
		s.indexRebuilt = err.Error()
	}
	var times []timeEntry
	if ok {
		maxRel := uint32(0)
		if len(entries) > 0 {
			maxRel = entries[len(entries)-1].rel
		}
		s.times.f, err = fs.OpenFile(s.path(timeIndexSuffix), os.O_RDWR|os.O_APPEND, 0)
		if err == nil {
			var tb []byte
			if tb, err = readWhole(s.times.f); err == nil {
				// Time entries may point past the last offset entry (entries
				// are sparse), so bound them loosely by the log size in offsets.
				times, err = decodeTimeIndex(tb, maxRel+uint32(min(logSize, 1<<31)))
			}
		}
		if err != nil {
			ok = false
			s.indexRebuilt = "time index: " + err.Error()
		}
	}
	if !ok {
		for _, f := range []vfs.File{s.index.f, s.times.f} {
			if f != nil {
				f.Close()
			}
		}
		s.index.f, s.times.f = nil, nil
		entries, times = nil, nil
		mode := os.O_RDWR | os.O_CREATE | os.O_APPEND | os.O_TRUNC
		s.index.f, err = fs.OpenFile(s.path(indexSuffix), mode, 0o644)
		if err == nil {
			s.times.f, err = fs.OpenFile(s.path(timeIndexSuffix), mode, 0o644)
		}
		if err != nil {
			return false, fmt.Errorf("partlog: open indexes of %s: %w", s.logName(), err)
		}
	}
	s.index.mu.entries = entries
	s.times.mu.entries = times
	return ok, nil
}

// readWhole reads all of f.
func readWhole(f vfs.File) ([]byte, error) {
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if m, err := f.ReadAt(b, 0); int64(m) < n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}

// resetIndexes empties both indexes, in memory and on disk, for a walk
// that rebuilds them.
func (s *segment) resetIndexes() error {
	if err := errors.Join(s.index.f.Truncate(0), s.times.f.Truncate(0)); err != nil {
		return fmt.Errorf("partlog: reset indexes of %s: %w", s.logName(), err)
	}
	s.index.pending, s.times.pending = s.index.pending[:0], s.times.pending[:0]
	s.index.mu.entries, s.times.mu.entries = nil, nil
	return nil
}

// checkEntry verifies that an offset index entry points at the batch it
// names (Kafka checks its indexes' last entries the same way at open): a
// wrong entry would send every read below it to the wrong place, and
// recovery's walk from it would take good bytes for a torn tail.
func (s *segment) checkEntry(e offsetEntry, logSize int64) error {
	sc := scanner{f: s.log, name: s.logName(), limit: logSize, pos: int64(e.pos), chunk: record.HeaderSize}
	if err := sc.next(); err != nil {
		return fmt.Errorf("last entry (+%d at position %d) points at no batch: %w", e.rel, e.pos, err)
	}
	if sc.hdr.BaseOffset != s.base+record.Offset(e.rel) {
		return fmt.Errorf("last entry (+%d at position %d) points at the batch of offset %d", e.rel, e.pos, sc.hdr.BaseOffset)
	}
	return nil
}

// restoreMaxTimestamp takes the segment's newest timestamp from its time index
// when the walk did not visit every batch.
func (s *segment) restoreMaxTimestamp() {
	s.times.mu.RLock()
	defer s.times.mu.RUnlock()
	if n := len(s.times.mu.entries); n > 0 {
		if e := s.times.mu.entries[n-1]; e.ts > s.maxTS.Load() {
			s.maxTS.Store(e.ts)
			s.maxTSOffset.Store(int64(s.base) + int64(e.rel))
		}
	}
}

// noteTimestamp tracks the segment's newest timestamp.
func (s *segment) noteTimestamp(h *record.Header) bool {
	if h.MaxTimestamp > s.maxTS.Load() {
		s.maxTS.Store(h.MaxTimestamp)
		s.maxTSOffset.Store(int64(h.BaseOffset))
		return true
	}
	return false
}

// indexBatch records the batch at pos in the indexes, as the writer does.
func (s *segment) indexBatch(h *record.Header, pos int64) error {
	rel := uint32(h.BaseOffset - s.base)
	if pos == 0 || s.sinceIndex >= s.indexEvery {
		if err := s.index.append(rel, uint32(pos)); err != nil {
			return err
		}
		s.sinceIndex = 0
	}
	s.sinceIndex += int64(h.Size())
	if s.noteTimestamp(h) {
		if err := s.times.append(h.MaxTimestamp, rel); err != nil {
			return err
		}
	}
	return nil
}

func (s *segment) truncateIndexes(pos int64, next record.Offset) error {
	if err := s.index.truncateFromPos(pos); err != nil {
		return fmt.Errorf("partlog: truncate index of %s: %w", s.logName(), err)
	}
	if err := s.times.truncateFromRel(uint32(next - s.base)); err != nil {
		return fmt.Errorf("partlog: truncate time index of %s: %w", s.logName(), err)
	}
	return nil
}
