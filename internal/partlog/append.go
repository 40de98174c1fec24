package partlog

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

// Append writes one v2 record batch at the end of the log and returns the base
// offset it assigned. It checks the batch's CRC, then rewrites the batch's base
// offset (and, once AssignEpoch was called, its leader epoch) in place: both lie
// outside the CRC, so the stored batch is the producer's byte for byte
// otherwise.
//
// When Append returns an error nothing was appended: a failed write is cut
// back off the file. When the flush policy asks for an fsync and it fails, the
// batch is cut off too and the log refuses further appends (ErrFailed).
func (l *Log) Append(batch []byte) (record.Offset, error) {
	h, err := record.Check(batch)
	if err != nil {
		return record.NoOffset, fmt.Errorf("partlog: append: %w", err)
	}
	if h.Size() != len(batch) {
		return record.NoOffset, fmt.Errorf("partlog: append: %d bytes after the batch", len(batch)-h.Size())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return record.NoOffset, ErrClosed
	}
	if l.mu.failed != nil {
		return record.NoOffset, ErrFailed
	}
	cfg := &l.mu.cfg
	if int64(len(batch)) > cfg.SegmentBytes {
		return record.NoOffset, fmt.Errorf("%w: %d > %d bytes", ErrBatchTooLarge, len(batch), cfg.SegmentBytes)
	}
	now := cfg.Now().UnixMilli()
	seg := l.active()
	if l.shouldRollLocked(seg, len(batch), now) {
		if seg, err = l.rollLocked(); err != nil {
			return record.NoOffset, err
		}
	}

	base := record.Offset(l.end.Load())
	record.SetBaseOffset(batch, base)
	if l.mu.epoch != record.NoEpoch {
		record.SetLeaderEpoch(batch, l.mu.epoch)
	}
	h.BaseOffset = base
	pos := seg.size.Load()
	if err := l.writeLocked(seg, batch, &h, pos, now); err != nil {
		return record.NoOffset, err
	}

	next := h.NextOffset()
	seg.size.Store(pos + int64(len(batch)))
	seg.next.Store(int64(next))
	l.end.Store(int64(next))
	if l.mu.epoch != record.NoEpoch {
		if err := l.epochs.assign(l.mu.epoch, base); err != nil {
			cfg.Logger.Warn("partlog: persist leader epoch", "dir", l.dir, "err", err)
		}
	}
	l.applyCountRetentionLocked()
	if !l.mu.manualHWM {
		l.publishHWM(next)
	}
	return base, nil
}

// writeLocked writes the batch and its index entries and applies the flush
// policy; on any failure it cuts the segment back to pos.
func (l *Log) writeLocked(seg *segment, batch []byte, h *record.Header, pos, now int64) error {
	savedTS, savedTSOffset := seg.maxTS.Load(), seg.maxTSOffset.Load()
	undo := func(cause error) error {
		seg.maxTS.Store(savedTS)
		seg.maxTSOffset.Store(savedTSOffset)
		if err := l.cutLocked(seg, pos, h.BaseOffset); err != nil {
			l.mu.failed = errors.Join(cause, err)
		}
		return cause
	}
	if _, err := seg.log.Write(batch); err != nil {
		return undo(fmt.Errorf("partlog: write %s: %w", seg.logName(), err))
	}
	seg.dirty.Store(true)
	savedIndex := seg.sinceIndex
	if err := seg.indexBatch(h, pos); err != nil {
		seg.sinceIndex = savedIndex
		return undo(err)
	}
	if seg.firstTS < 0 {
		seg.firstTS = now
	}
	cfg := &l.mu.cfg
	l.mu.unflushed += int64(h.NumRecords)
	flushByCount := cfg.FlushMessages > 0 && l.mu.unflushed >= cfg.FlushMessages
	flushByTime := cfg.FlushInterval > 0 && now-l.mu.lastFlush >= cfg.FlushInterval.Milliseconds()
	if flushByCount || flushByTime {
		if err := errors.Join(seg.flushIndexes(), seg.sync()); err != nil {
			// The unsynced tail is in an unknown state: cut it and stop writing.
			undo(err)
			l.mu.failed = err
			return err
		}
		l.mu.unflushed = 0
		l.mu.lastFlush = now
	}
	return nil
}

// cutLocked truncates the active segment back to pos, dropping index entries
// for anything at or after offset next.
func (l *Log) cutLocked(seg *segment, pos int64, next record.Offset) error {
	if err := seg.log.Truncate(pos); err != nil {
		return fmt.Errorf("partlog: cut %s back to %d: %w", seg.logName(), pos, err)
	}
	return seg.truncateIndexes(pos, next)
}

func (l *Log) shouldRollLocked(seg *segment, n int, now int64) bool {
	size := seg.size.Load()
	if size == 0 {
		return false
	}
	cfg := &l.mu.cfg
	if size+int64(n) > cfg.SegmentBytes {
		return true
	}
	// A segment holds offsets as 32-bit deltas from its base, and positions as
	// 32-bit values in its index.
	if l.end.Load()-int64(seg.base) > 1<<31-1 || size+int64(n) > 1<<32-1 {
		return true
	}
	return seg.firstTS >= 0 && now-seg.firstTS >= cfg.SegmentTime.Milliseconds()
}

// rollLocked seals the active segment and starts a new one at the end offset.
// The sealed segment is fsynced by the background flusher, which then moves
// the recovery point past it, so rolling never waits on the disk.
func (l *Log) rollLocked() (*segment, error) {
	if err := l.flushErr(); err != nil {
		l.mu.failed = err
		return nil, err
	}
	if err := l.active().flushIndexes(); err != nil {
		return nil, err
	}
	s, err := createSegment(l.fs, l.dir, record.Offset(l.end.Load()), l.mu.cfg.IndexIntervalBytes)
	if err != nil {
		return nil, err
	}
	l.segs.Lock()
	l.segs.list = append(l.segs.list, s)
	l.segs.Unlock()
	l.kickFlusher()
	return s, nil
}

// Roll seals the active segment and starts a new one, if the active segment
// holds anything. Compaction and tests use it; appends roll by themselves.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.mu.failed != nil {
		return ErrFailed
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked()
	return err
}
