package partlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// SegmentInfo describes one sealed segment, for the compaction cleaner.
type SegmentInfo struct {
	Base         record.Offset // offset of the segment's first batch (its name)
	Next         record.Offset // offset after its last batch
	Size         int64         // bytes
	MaxTimestamp int64         // newest batch max timestamp, -1 when empty
}

// SealedSegments lists every segment but the active one wholly below the
// high watermark, oldest first. Sealed segments never change except
// through ReplaceSegments and retention.
func (l *Log) SealedSegments() []SegmentInfo {
	l.segs.RLock()
	defer l.segs.RUnlock()
	list := l.segs.list
	hw := l.hwm.Load()
	out := make([]SegmentInfo, 0, len(list)-1)
	for _, s := range list[:len(list)-1] {
		if s.next.Load() > hw {
			break // the cleaner works below the high watermark only
		}
		out = append(out, SegmentInfo{
			Base:         s.base,
			Next:         record.Offset(s.next.Load()),
			Size:         s.size.Load(),
			MaxTimestamp: s.maxTS.Load(),
		})
	}
	return out
}

// ScanSegment calls fn with every batch of the sealed segment named base, in
// order, each CRC-checked. The batch is valid only during fn. Retention and
// ReplaceSegments wait while a scan runs.
func (l *Log) ScanSegment(base record.Offset, fn func(batch []byte) error) error {
	if l.closed.Load() {
		return ErrClosed
	}
	l.segs.RLock()
	defer l.segs.RUnlock()
	s := l.sealedLocked(base)
	if s == nil {
		return fmt.Errorf("%w: %s", ErrNoSegment, segmentName(base))
	}
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), verify: true}
	for {
		switch err := sc.next(); {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
		if err := fn(sc.batch); err != nil {
			return err
		}
		sc.advance()
	}
}

// sealedLocked finds the sealed segment named base; segs must be held.
func (l *Log) sealedLocked(base record.Offset) *segment {
	list := l.segs.list
	for _, s := range list[:len(list)-1] {
		if s.base == base {
			return s
		}
	}
	return nil
}

// ErrNoSegment is returned when a sealed segment named by the caller does not
// exist (any more): retention or truncation removed it, or it is active.
var ErrNoSegment = errors.New("partlog: no such sealed segment")

// Files of a segment swap (see ReplaceSegments).
const (
	cleanedSuffix = ".cleaned" // a replacement segment being written: <base>.log.cleaned
	swapSuffix    = ".swap"    // the commit record: <base>.swap lists the replaced bases
)

// ReplaceSegments replaces the consecutive sealed segments named by bases with
// one segment named bases[0] holding exactly the batches fill emits. Every
// emitted batch keeps its own base offset, and batches must increase and stay
// within [bases[0], the old segments' next offset): compaction leaves gaps,
// never moves a record. The log's start and end offsets do not change.
//
// The swap is atomic across crashes (the old set or the new set survives,
// never a mix):
//
//  1. the new segment is written to <base>.log.cleaned and fsynced;
//  2. <base>.swap, listing the old bases, is written atomically: the commit;
//  3. the old segments' files are removed and .cleaned is renamed into place;
//  4. <base>.swap is removed.
//
// Open finishes a swap whose .swap file exists and discards a .cleaned file
// without one. Readers see the old segments until step 3, then the new one;
// the segment list is switched under its exclusive lock. fill runs without
// blocking appends or reads.
func (l *Log) ReplaceSegments(bases []record.Offset, fill func(emit func(batch []byte) error) error) error {
	if len(bases) == 0 {
		return errors.New("partlog: ReplaceSegments needs at least one segment")
	}
	l.clean.Lock()
	defer l.clean.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if err := l.Damaged(); err != nil {
		return err
	}
	// Segments at or past the recovery point are verified after a crash, and
	// a compacted segment would look torn there: make them durable first.
	if err := l.flushSealed(); err != nil {
		return err
	}
	old, err := l.consecutiveSealed(bases)
	if err != nil {
		return err
	}
	cleaned := filepath.Join(l.dir, segmentName(bases[0])+logSuffix+cleanedSuffix)
	last := record.Offset(old[len(old)-1].next.Load())
	if err := l.writeCleaned(cleaned, bases[0], last, fill); err != nil {
		l.fs.Remove(cleaned)
		return err
	}
	l.hook("cleaned")
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segs.Lock()
	defer l.segs.Unlock()
	if !l.stillSealedLocked(old) {
		l.fs.Remove(cleaned)
		return fmt.Errorf("%w: the segments changed while they were cleaned", ErrNoSegment)
	}
	manifest := filepath.Join(l.dir, segmentName(bases[0])+swapSuffix)
	if err := vfs.WriteFileSync(l.fs, l.dir, manifest, encodeBases(bases)); err != nil {
		l.fs.Remove(cleaned)
		return fmt.Errorf("partlog: commit segment swap: %w", err)
	}
	l.hook("committed")
	for _, s := range old {
		s.close()
	}
	if err := l.finishSwap(bases); err != nil {
		// The swap is committed on disk; the next Open completes it. Until
		// then this log cannot serve the replaced range.
		l.setFailedLocked(err)
		return err
	}
	fresh, bad, err := openSegment(l.fs, l.dir, bases[0], false, true, l.mu.cfg.IndexIntervalBytes)
	if err == nil && bad != nil {
		err = bad
	}
	if err != nil {
		l.setFailedLocked(err)
		return fmt.Errorf("partlog: open cleaned segment: %w", err)
	}
	fresh.next.Store(int64(last)) // the gap after the last kept batch stays in this segment
	l.replaceLocked(old, fresh)
	return nil
}

// consecutiveSealed resolves bases to consecutive sealed segments.
func (l *Log) consecutiveSealed(bases []record.Offset) ([]*segment, error) {
	l.segs.RLock()
	defer l.segs.RUnlock()
	list := l.segs.list
	for i, s := range list[:len(list)-1] {
		if s.base != bases[0] {
			continue
		}
		if i+len(bases) > len(list)-1 {
			break
		}
		out := list[i : i+len(bases)]
		for j, o := range out {
			if o.base != bases[j] {
				return nil, fmt.Errorf("%w: %s is not followed by %s", ErrNoSegment, segmentName(bases[max(j-1, 0)]), segmentName(bases[j]))
			}
		}
		return append([]*segment(nil), out...), nil
	}
	return nil, fmt.Errorf("%w: %s (and %d after it)", ErrNoSegment, segmentName(bases[0]), len(bases)-1)
}

func (l *Log) stillSealedLocked(old []*segment) bool {
	list := l.segs.list
	for i, s := range list[:len(list)-1] {
		if s == old[0] {
			return i+len(old) <= len(list)-1 && slices.Equal(list[i:i+len(old)], old)
		}
	}
	return false
}

func (l *Log) replaceLocked(old []*segment, fresh *segment) {
	list := l.segs.list
	i := slices.Index(list, old[0])
	next := make([]*segment, 0, len(list)-len(old)+1)
	next = append(next, list[:i]...)
	next = append(next, fresh)
	next = append(next, list[i+len(old):]...)
	l.segs.list = next
}

// writeCleaned writes the emitted batches to path and fsyncs it.
func (l *Log) writeCleaned(path string, base, next record.Offset, fill func(emit func([]byte) error) error) error {
	f, err := vfs.Create(l.fs, path)
	if err != nil {
		return fmt.Errorf("partlog: create %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	want := base
	emit := func(b []byte) error {
		h, err := record.Check(b)
		if err != nil {
			return fmt.Errorf("partlog: cleaned batch: %w", err)
		}
		if h.Size() != len(b) || h.BaseOffset < want || h.NextOffset() > next {
			return fmt.Errorf("partlog: cleaned batch [%d, %d] outside [%d, %d)", h.BaseOffset, h.LastOffset(), want, next)
		}
		want = h.NextOffset()
		_, err = w.Write(b)
		return err
	}
	if err := fill(emit); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("partlog: write %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("partlog: fsync %s: %w", filepath.Base(path), err)
	}
	return l.fs.SyncDir(l.dir)
}

// finishSwap carries out a committed swap: idempotent, so Open can redo it.
// Index files of every replaced segment go first: a stale index next to the
// new log could pass validation and point into the middle of a batch.
func (l *Log) finishSwap(bases []record.Offset) error {
	remove := func(p string) error {
		if err := l.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var errs []error
	for _, b := range bases {
		errs = append(errs, remove(filepath.Join(l.dir, segmentName(b)+indexSuffix)),
			remove(filepath.Join(l.dir, segmentName(b)+timeIndexSuffix)))
	}
	for _, b := range bases[1:] {
		errs = append(errs, remove(filepath.Join(l.dir, segmentName(b)+logSuffix)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("partlog: swap segments: %w", err)
	}
	l.hook("removed")
	final := filepath.Join(l.dir, segmentName(bases[0])+logSuffix)
	if err := l.fs.Rename(final+cleanedSuffix, final); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("partlog: swap segments: %w", err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.hook("renamed")
	if err := remove(filepath.Join(l.dir, segmentName(bases[0])+swapSuffix)); err != nil {
		return err
	}
	return l.fs.SyncDir(l.dir)
}

// recoverSwaps completes committed swaps and discards uncommitted ones; Open
// runs it before listing segments.
func (l *Log) recoverSwaps(names []string) error {
	for _, n := range names {
		stem, ok := strings.CutSuffix(n, swapSuffix)
		if !ok {
			continue
		}
		b, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, n))
		if err != nil {
			return fmt.Errorf("partlog: read %s: %w", n, err)
		}
		bases, err := decodeBases(b)
		if err != nil || len(bases) == 0 || segmentName(bases[0]) != stem {
			return &CorruptionError{File: n, Err: fmt.Errorf("bad segment swap record: %v", err)}
		}
		if err := l.finishSwap(bases); err != nil {
			return err
		}
		l.logger.Info("partlog: completed an interrupted segment swap", "dir", l.dir, "segment", stem)
	}
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) {
			if _, err := l.fs.Stat(filepath.Join(l.dir, n)); err == nil {
				l.fs.Remove(filepath.Join(l.dir, n)) // never committed
			}
		}
	}
	return nil
}

func encodeBases(bases []record.Offset) []byte {
	var b []byte
	for _, o := range bases {
		b = strconv.AppendInt(b, int64(o), 10)
		b = append(b, '\n')
	}
	return b
}

func decodeBases(b []byte) ([]record.Offset, error) {
	var out []record.Offset
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, record.Offset(n))
	}
	return out, nil
}

// hook lets tests crash the file system between the steps of a swap.
func (l *Log) hook(step string) {
	if l.testHook != nil {
		l.testHook(step)
	}
}
