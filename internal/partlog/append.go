package partlog

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Append writes one v2 record batch at the end of the log and returns the base
// offset it assigned. It checks the batch's CRC, then rewrites the batch's base
// offset (and, once AssignEpoch was called, its leader epoch) in place: both lie
// outside the CRC, so the stored batch is the producer's byte for byte
// otherwise.
//
// When Append returns an error nothing was appended: a failed write is cut
// back off the file. When the flush policy asks for an fsync, Append returns
// once the batch is on disk, and only then do readers see it; the fsync is
// shared with concurrent appends (group commit, groupsync.go). If it fails,
// the log refuses further appends (ErrFailed) and the unsynced tail is cut
// off when no reader saw it.
func (l *Log) Append(batch []byte) (record.Offset, error) {
	base, pending, err := l.AppendAsync(batch)
	if err != nil {
		return base, err
	}
	if err := pending.Wait(); err != nil {
		return record.NoOffset, err
	}
	return base, nil
}

// AppendAsync is Append without the wait for the fsync: the batch is
// written and has its offset, and pending.Wait returns once it is durable
// (at once if the flush policy asked for no fsync). A caller that holds its
// own lock around the append waits after releasing it, so that concurrent
// appends can share the fsync.
func (l *Log) AppendAsync(batch []byte) (record.Offset, Pending, error) {
	base, wait, err := l.appendLocked(batch, false)
	if err != nil {
		return base, Pending{}, err
	}
	return base, Pending{l: l, writes: wait}, nil
}

// AppendAsFollower appends batches fetched from a partition's leader (one
// or more, concatenated, as a Fetch response carries them) as they are:
// each keeps the leader's base offset and partition leader epoch, and the
// epoch cache learns each new epoch from the batches. A batch below the end
// offset is refused (ErrOffsetsOutOfOrder): the follower truncates first.
// Gaps are kept (a compacted leader's log has them). Every batch's CRC is
// checked. The returned Pending covers the last batch's fsync, if the flush
// policy asks for one.
func (l *Log) AppendAsFollower(batches []byte) (Pending, error) {
	var wait uint64
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil || h.Size() > len(batches) {
			return Pending{l: l, writes: wait}, fmt.Errorf("partlog: follower append: %w", record.ErrShortBatch)
		}
		w, err := l.appendAt(batches[:h.Size()])
		if err != nil {
			return Pending{l: l, writes: wait}, err
		}
		wait = max(wait, w)
		batches = batches[h.Size():]
	}
	return Pending{l: l, writes: wait}, nil
}

func (l *Log) appendAt(batch []byte) (uint64, error) {
	_, wait, err := l.appendLocked(batch, true)
	return wait, err
}

// Pending is an appended batch's fsync, if the flush policy asked for one.
type Pending struct {
	l      *Log
	writes uint64 // zero: nothing to wait for
}

// Waits reports whether Wait has an fsync to wait for.
func (p Pending) Waits() bool { return p.writes != 0 }

// Wait returns once the batch is on disk, or the fsync's error (the log
// then refuses appends: Failed).
func (p Pending) Wait() error {
	if p.writes == 0 {
		return nil
	}
	return p.l.waitDurable(p.writes)
}

// appendLocked writes the batch under the log lock. wait, when not zero, is
// the write count an fsync must cover before the batch is acknowledged. A
// leader's append (follower unset) gives the batch the end offset and the
// log's epoch; a follower's keeps both as the leader wrote them.
func (l *Log) appendLocked(batch []byte, follower bool) (base record.Offset, wait uint64, err error) {
	h, err := record.Check(batch)
	if err != nil {
		return record.NoOffset, 0, fmt.Errorf("partlog: append: %w", err)
	}
	if h.Size() != len(batch) {
		return record.NoOffset, 0, fmt.Errorf("partlog: append: %d bytes after the batch", len(batch)-h.Size())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return record.NoOffset, 0, ErrClosed
	}
	if l.mu.failed != nil || l.damage.Load() != nil {
		return record.NoOffset, 0, l.refusal()
	}
	cfg := &l.mu.cfg
	if int64(len(batch)) > cfg.SegmentBytes {
		return record.NoOffset, 0, fmt.Errorf("%w: %d > %d bytes", ErrBatchTooLarge, len(batch), cfg.SegmentBytes)
	}
	now := cfg.Now().UnixMilli()
	seg := l.active()
	if l.shouldRollLocked(seg, len(batch), now) {
		if seg, err = l.rollLocked(); err != nil {
			return record.NoOffset, 0, err
		}
	}

	epoch := l.mu.epoch
	if follower {
		base, epoch = h.BaseOffset, h.LeaderEpoch
		if end := record.Offset(l.end.Load()); base < end {
			return record.NoOffset, 0, fmt.Errorf("%w: a batch at offset %d, the log ends at %d", ErrOffsetsOutOfOrder, base, end)
		}
	} else {
		base = record.Offset(l.end.Load())
		record.SetBaseOffset(batch, base)
		if epoch != record.NoEpoch {
			record.SetLeaderEpoch(batch, epoch)
		}
		h.BaseOffset = base
	}
	pos := seg.size.Load()
	if err := l.writeLocked(seg, batch, &h, pos, now); err != nil {
		return record.NoOffset, 0, err
	}
	l.mu.writes++

	next := h.NextOffset()
	seg.size.Store(pos + int64(len(batch)))
	seg.next.Store(int64(next))
	l.end.Store(int64(next))
	l.ends.wake(false) // followers' long polls: the end moved
	if epoch >= 0 {
		if err := l.epochs.assign(epoch, base); err != nil {
			cfg.Logger.Warn("partlog: persist leader epoch", "dir", l.dir, "err", err)
		}
	}
	if l.flushDueLocked(h.NumRecords, now) {
		l.mu.syncWanted = next
		wait = l.mu.writes
	}
	if !l.mu.manualHWM && l.mu.syncWanted <= l.mu.durable.end {
		l.publishHWM(next) // no append waits for an fsync: publish at once
	}
	l.applyCountRetentionLocked() // after the publish: it stops at the high watermark
	return base, wait, nil
}

// writeLocked writes the batch and its index entries and applies the flush
// policy; on any failure it cuts the segment back to pos.
func (l *Log) writeLocked(seg *segment, batch []byte, h *record.Header, pos, now int64) error {
	savedTS, savedTSOffset := seg.maxTS.Load(), seg.maxTSOffset.Load()
	undo := func(cause error) error {
		seg.maxTS.Store(savedTS)
		seg.maxTSOffset.Store(savedTSOffset)
		if err := l.cutLocked(seg, pos, h.BaseOffset); err != nil {
			l.setFailedLocked(errors.Join(cause, err))
		}
		return cause
	}
	l.preallocateLocked(seg, pos+int64(len(batch)))
	gate := l.mu.cfg.WriteGate
	gate.enter()
	_, err := seg.log.Write(batch)
	gate.leave()
	if err != nil {
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
	l.cacheWindowLocked(seg, pos+int64(len(batch)))
	return nil
}

// preallocateLocked reserves, under Config.Preallocate, the active
// segment's blocks PreallocateStep past end (not past segment.bytes) once
// end passes the reserve. The write then lands in allocated blocks, and
// ext4 skips its per-page delayed allocation (docs/BENCHMARKS.md, "O_DIRECT
// and the other write modes, measured").
func (l *Log) preallocateLocked(seg *segment, end int64) {
	if !l.mu.cfg.Preallocate || end <= seg.allocated {
		return
	}
	to := max(min(end+PreallocateStep, l.mu.cfg.SegmentBytes), end)
	vfs.Preallocate(seg.log, seg.allocated, to-seg.allocated)
	seg.allocated = to
}

// releaseReserveLocked gives back what Preallocate reserved past a sealed
// segment's end: truncating it to its own size frees the blocks past the
// end and changes no byte.
func (l *Log) releaseReserveLocked(seg *segment) {
	if seg.allocated > seg.size.Load() {
		if err := seg.log.Truncate(seg.size.Load()); err != nil {
			l.logger.Warn("partlog: releasing a sealed segment's preallocated blocks", "segment", seg.logName(), "err", err)
		}
		seg.allocated = 0
	}
}

// cacheWindowLocked keeps the active segment's page-cache footprint near
// Config.CacheWindow: each time the segment's end passes a chunk (a
// quarter of the window) boundary, the chunks completed since the last
// time start their write to the disk, and the chunks a window further back
// (whose write-back started a window ago, so they are normally on the disk
// by now) leave the cache. Written pages are freed while the log writes,
// and the allocator hands the same pages back for the next chunks, rather
// than fresh memory that a virtual machine must first back (a page the
// guest freed long enough ago was returned to the host; touching it again
// costs a hypervisor fault per page, which was most of a produced byte's
// cost here). The hints change neither durability nor what reads return.
func (l *Log) cacheWindowLocked(seg *segment, end int64) {
	w := l.mu.cfg.CacheWindow
	if w <= 0 {
		return
	}
	chunk := max(w/4, minCacheChunk)
	done := end / chunk * chunk // end of the last complete chunk
	if done <= seg.cached {
		return
	}
	from := seg.cached
	seg.cached = done
	vfs.Writeback(seg.log, from, done-from)
	if dropEnd := done - w; dropEnd > 0 {
		dropFrom := max(from-w, 0)
		vfs.DropCache(seg.log, dropFrom, dropEnd-dropFrom)
	}
}

// flushDueLocked counts an append's records against the flush policy and
// reports whether the policy now asks for an fsync (flush.messages records
// since the last, or flush.ms elapsed); it then restarts the count.
func (l *Log) flushDueLocked(records int32, now int64) bool {
	cfg := &l.mu.cfg
	l.mu.unflushed += int64(records)
	byCount := cfg.FlushMessages > 0 && l.mu.unflushed >= cfg.FlushMessages
	byTime := cfg.FlushInterval > 0 && now-l.mu.lastFlush >= cfg.FlushInterval.Milliseconds()
	if !byCount && !byTime {
		return false
	}
	l.mu.unflushed = 0
	l.mu.lastFlush = now
	return true
}

// cutLocked truncates the active segment back to pos, dropping index entries
// for anything at or after offset next.
func (l *Log) cutLocked(seg *segment, pos int64, next record.Offset) error {
	seg.cached = min(seg.cached, pos)
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
		l.setFailedLocked(err)
		return nil, err
	}
	if err := l.active().flushIndexes(); err != nil {
		return nil, err
	}
	l.releaseReserveLocked(l.active())
	// The new segment's directory entry is made durable by the next fsync
	// of the log (syncDirIfPending), before anything in it is durable: a
	// directory fsync here, under the log's lock, can take a hundred
	// milliseconds under heavy writeback, and every append would wait.
	s, err := createSegment(l.fs, l.dir, record.Offset(l.end.Load()), l.mu.cfg.IndexIntervalBytes, false)
	if err != nil {
		return nil, err
	}
	// Counted once the files exist, and before anything is written to them.
	l.dirGen.Add(1)
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
	if l.mu.failed != nil || l.damage.Load() != nil {
		return l.refusal()
	}
	if l.active().size.Load() == 0 {
		return nil
	}
	_, err := l.rollLocked()
	return err
}
