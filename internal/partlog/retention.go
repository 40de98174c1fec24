package partlog

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

// ApplyRetention enforces retention.ms and retention.bytes by deleting whole
// segments from the oldest end. When every segment has expired the active one
// is rolled first, so the log is emptied but its end offset stays: offsets
// keep climbing. It returns how many segments it deleted.
func (l *Log) ApplyRetention() (int, error) {
	n, err := l.applyRetention()
	return n, errors.Join(err, l.removeDeleted())
}

func (l *Log) applyRetention() (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	cfg := &l.mu.cfg
	list := l.segmentsSnapshot()
	n := 0
	retTime, retBytes, hw := l.retentionLimitsLocked()
	if retTime > 0 {
		cutoff := cfg.Now().UnixMilli() - retTime.Milliseconds()
		for n < len(list) && list[n].size.Load() > 0 && list[n].maxTS.Load() < cutoff {
			n++
		}
	}
	if retBytes >= 0 {
		var total int64
		for _, s := range list {
			total += s.size.Load()
		}
		for i := range list {
			total -= list[i].size.Load()
			if total < retBytes || i == len(list)-1 {
				break
			}
			n = max(n, i+1)
		}
	}
	// Never past the high watermark (Kafka bounds deletable segments by
	// it): a record not yet committed must not be deleted before a
	// consumer or a follower could read it. A tiered log's bound is also
	// what the object store holds (retentionLimitsLocked).
	for n > 0 && record.Offset(list[n-1].next.Load()) > hw {
		n--
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(list) {
		if l.mu.failed != nil || l.damage.Load() != nil {
			return 0, l.refusal()
		}
		if _, err := l.rollLocked(); err != nil {
			return 0, err
		}
	}
	if err := l.deleteOldestLocked(n); err != nil {
		return 0, err
	}
	cfg.Logger.Info("partlog: retention deleted segments", "dir", l.dir, "segments", n,
		"log_start_offset", l.start.Load())
	return n, nil
}

// applyCountRetentionLocked keeps only the newest RetentionRecords offsets (the
// seed's retain_count), moving the start offset inside a segment if need be.
func (l *Log) applyCountRetentionLocked() {
	keep := l.mu.cfg.RetentionRecords
	if keep < 0 {
		return
	}
	if target := min(l.end.Load()-keep, l.hwm.Load()); target > l.start.Load() {
		if err := l.advanceStartLocked(record.Offset(target)); err != nil {
			l.mu.cfg.Logger.Warn("partlog: count retention", "dir", l.dir, "err", err)
		}
		l.deleted.Lock()
		if len(l.deleted.list) > 0 {
			l.kickFlusher() // it removes them, without the lock
		}
		l.deleted.Unlock()
	}
}

// DeleteRecordsBefore makes o the new log start offset (Kafka's
// DeleteRecords), deleting the segments wholly below it, and persists it before
// returning. o may not pass the high watermark. It returns the start offset,
// which it never moves backwards.
func (l *Log) DeleteRecordsBefore(o record.Offset) (record.Offset, error) {
	start, err := l.deleteRecordsBefore(o)
	if err != nil {
		return start, err
	}
	return start, l.removeDeleted()
}

func (l *Log) deleteRecordsBefore(o record.Offset) (record.Offset, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return record.NoOffset, ErrClosed
	}
	start, hwm := record.Offset(l.start.Load()), record.Offset(l.hwm.Load())
	if o > hwm || o < 0 {
		return record.NoOffset, &OutOfRangeError{Offset: o, Start: start, End: hwm}
	}
	if o <= start {
		return start, nil
	}
	if err := l.advanceStartLocked(o); err != nil {
		return record.NoOffset, err
	}
	if err := l.storeStartOffsetLocked(); err != nil {
		return record.NoOffset, err
	}
	return o, nil
}

// advanceStartLocked moves the start offset to o and deletes segments that end
// at or before it (never the active one).
func (l *Log) advanceStartLocked(o record.Offset) error {
	l.start.Store(int64(o))
	list := l.segmentsSnapshot()
	n := 0
	for n < len(list)-1 && record.Offset(list[n].next.Load()) <= o && list[n+1].base <= o {
		n++
	}
	if l.epochs.truncateFromStart(o) {
		if err := l.epochs.store(); err != nil {
			return err
		}
	}
	if n > 0 {
		if err := l.deleteOldestLocked(n); err != nil {
			return err
		}
	}
	l.mu.startDirty = o > l.segmentsSnapshot()[0].base
	return nil
}

// deleteOldestLocked takes the n oldest segments, which must not include
// the active one, out of the log and advances the start offset to the new
// first segment. Their files are renamed with the .deleted suffix (Kafka
// does the same) and removed by removeDeleted once l.mu is released:
// closing and unlinking a segment frees its page cache, milliseconds a
// segment, and a retention pass deleting dozens of them under the lock
// held every append (a produce) still meanwhile. The rename is what lets
// the removal come later: a log restarted at a gone segment's base
// (TruncateTo below the start) creates files of the same names.
func (l *Log) deleteOldestLocked(n int) error {
	l.segs.Lock()
	gone := l.segs.list[:n]
	l.segs.list = append([]*segment(nil), l.segs.list[n:]...)
	first := l.segs.list[0].base
	l.segs.Unlock()
	if int64(first) > l.start.Load() {
		l.start.Store(int64(first))
		if l.epochs.truncateFromStart(first) {
			if err := l.epochs.store(); err != nil {
				return err
			}
		}
	}
	var errs []error
	for _, s := range gone {
		if err := s.renameDeleted(l.fs); err != nil {
			errs = append(errs, s.remove(l.fs)) // removed here and now instead
			continue
		}
		l.deleted.Lock()
		l.deleted.list = append(l.deleted.list, s)
		l.deleted.Unlock()
	}
	// The renames are made durable before the start offset is taken as
	// moved, as the removals were: a crash must not bring a deleted
	// segment back (the model test, TestModel, caught it).
	errs = append(errs, l.fs.SyncDir(l.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("partlog: delete segments: %w", err)
	}
	return nil
}

// removeDeleted closes and removes the segments deleteOldestLocked took out
// of the log. It needs no l.mu: no reader can reach them (they left the
// segment list under its exclusive lock).
func (l *Log) removeDeleted() error {
	l.deleted.Lock()
	gone := l.deleted.list
	l.deleted.list = nil
	l.deleted.Unlock()
	if err := l.removeSegments(gone); err != nil {
		return fmt.Errorf("partlog: delete segments: %w", err)
	}
	return nil
}

// TruncateTo removes every batch at or after offset o, as a follower does after
// a leader change. Batches are atomic: when o falls inside a batch, that whole
// batch goes and the end offset becomes its base offset. Truncating to or
// below the log start offset empties the log and restarts it at o.
func (l *Log) TruncateTo(o record.Offset) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.mu.failed != nil || l.damage.Load() != nil {
		return l.refusal()
	}
	if end := record.Offset(l.end.Load()); o >= end {
		// Nothing to cut, but an epoch this node assigned as leader and
		// wrote nothing in must go (Kafka's truncateTo does the same): a
		// follower fetching with it as its last epoch would be told it
		// diverges, truncate to here, and be told so again, forever.
		if l.epochs.truncateFromEnd(end) {
			return l.epochs.store()
		}
		return nil
	}
	if int64(o) <= l.start.Load() {
		if err := l.resetToLocked(o); err != nil {
			return err
		}
		l.wake()
		return nil
	}
	list := l.segmentsSnapshot()
	k := len(list) - 1
	for k > 0 && list[k].base >= o {
		k--
	}
	s := list[k]
	pos, h, ok, err := l.find(s, o, k == len(list)-1)
	if err != nil {
		return err
	}
	newEnd := record.Offset(s.next.Load())
	// Readers are excluded while bytes go: one reading a segment as it is
	// cut would meet a short batch and take it for damage.
	l.segs.Lock()
	if ok {
		newEnd = h.BaseOffset
		if err := l.cutLocked(s, pos, newEnd); err != nil {
			l.segs.Unlock()
			l.setFailedLocked(err)
			return err
		}
		s.size.Store(pos)
	}
	s.next.Store(int64(newEnd))
	gone := l.segs.list[k+1:]
	l.segs.list = append([]*segment(nil), l.segs.list[:k+1]...)
	l.segs.Unlock()
	if err := l.removeSegments(gone); err != nil {
		return err
	}
	s.dirty.Store(true)
	l.recomputeMaxTimestamp(s)
	if err := l.afterTruncateLocked(newEnd); err != nil {
		return err
	}
	l.wake() // long-polls learn the end moved back
	return nil
}

// ResetTo deletes every batch and starts an empty log at o: a follower
// whose whole log lies below its leader's log start offset starts over
// there (Kafka's truncateFullyAndStartAt).
func (l *Log) ResetTo(o record.Offset) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	if l.mu.failed != nil || l.damage.Load() != nil {
		return l.refusal()
	}
	if err := l.resetToLocked(o); err != nil {
		return err
	}
	// Nothing below o exists here any more: no epoch is known, and the
	// high watermark cannot be below the start.
	l.epochs.entries = nil
	if err := l.epochs.store(); err != nil {
		return err
	}
	if l.hwm.Load() < int64(o) {
		l.hwm.Store(int64(o))
	}
	l.mu.hwTarget = max(l.mu.hwTarget, o)
	l.wake()
	return nil
}

// resetToLocked deletes every segment and starts an empty log at o.
func (l *Log) resetToLocked(o record.Offset) error {
	// createSegment truncates an existing segment file with base o; that
	// segment is only closed below, not removed.
	fresh, err := createSegment(l.fs, l.dir, o, l.mu.cfg.IndexIntervalBytes, true)
	if err != nil {
		return err
	}
	l.segs.Lock()
	old := l.segs.list
	l.segs.list = []*segment{fresh}
	l.segs.Unlock()
	var errs []error
	for _, s := range old {
		if s.base != o {
			errs = append(errs, s.remove(l.fs))
		} else {
			s.close()
		}
	}
	errs = append(errs, l.fs.SyncDir(l.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("partlog: reset to %d: %w", o, err)
	}
	l.start.Store(int64(o))
	l.mu.startDirty = false
	if err := l.storeStartOffsetLocked(); err != nil {
		return err
	}
	return l.afterTruncateLocked(o)
}

// removeSegments deletes the files of segments already taken out of the
// list.
func (l *Log) removeSegments(gone []*segment) error {
	if len(gone) == 0 {
		return nil
	}
	var errs []error
	for _, s := range gone {
		errs = append(errs, s.remove(l.fs))
	}
	errs = append(errs, l.fs.SyncDir(l.dir))
	return errors.Join(errs...)
}

func (l *Log) afterTruncateLocked(end record.Offset) error {
	if err := l.setRecoveryPoint(l.active().base, true); err != nil {
		return err
	}
	l.end.Store(int64(end))
	if l.hwm.Load() > int64(end) {
		l.hwm.Store(int64(end))
	}
	l.mu.hwTarget = min(l.mu.hwTarget, end)
	l.ends.wake(false)
	if l.start.Load() > int64(end) {
		l.start.Store(int64(end))
		if err := l.storeStartOffsetLocked(); err != nil {
			return err
		}
	}
	if l.epochs.truncateFromEnd(end) {
		if err := l.epochs.store(); err != nil {
			return err
		}
	}
	// Make the truncation durable now: a crash must not resurrect the tail.
	return l.syncLocked()
}
