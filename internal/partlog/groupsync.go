package partlog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/strandmq/strand/internal/record"
)

// Group commit. When the flush policy asks an append for an fsync, the append
// writes its batch under the log lock as usual, then waits outside the lock
// for an fsync that started after its write. One waiter at a time runs the
// fsync; everyone whose batch it covers returns when it completes, so N
// concurrent producers on an fsync-per-batch topic pay about one fsync per
// round instead of N in a row under the lock.
//
// Visibility: a batch that waits for durability is not published to readers
// (the high watermark does not pass it) until its fsync succeeds, and while
// such a batch waits, later appends are not published either. So with
// flush.messages=1 a reader never sees a record that is not on disk. If the
// fsync fails, the log refuses appends from then on (ErrFailed), every
// waiter gets the error, and the unpublished tail is cut off the active
// segment when nothing past the last durable point was published: nothing
// unacknowledged and unsynced is ever served.
//
// Waiters count in writes (l.mu.writes, one per append, never reset), not
// offsets: offsets can go back (TruncateTo), writes cannot, so a stale
// fsync can never pass for a later write's.
type groupSync struct {
	mu      sync.Mutex
	cond    sync.Cond
	running bool   // a waiter is running the fsync
	synced  uint64 // writes the last successful group fsync covered
	err     error  // sticky: the first failed group fsync
}

// durable is where the log was last known to be on disk, guarded by l.mu.
type durable struct {
	end record.Offset // everything below it was fsynced
	seg *segment      // the active segment at that point
	pos int64         // its size at that point
}

// markDurableLocked records that everything written so far is on disk, so
// no append waits for durability any more.
func (l *Log) markDurableLocked() {
	seg := l.active()
	l.mu.durable = durable{end: record.Offset(l.end.Load()), seg: seg, pos: seg.size.Load()}
	l.mu.syncWanted = min(l.mu.syncWanted, l.mu.durable.end)
}

// waitDurable returns once an fsync covering the first target writes has
// completed, running it if no other waiter is.
func (l *Log) waitDurable(target uint64) error {
	g := &l.group
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.synced < target && g.err == nil {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.mu.Unlock()
		writes, err := l.syncGroup()
		g.mu.Lock()
		g.running = false
		if err != nil {
			g.err = err
		} else {
			g.synced = max(g.synced, writes)
		}
		g.cond.Broadcast()
	}
	return g.err
}

// syncGroup fsyncs every dirty segment's log file and returns how many
// writes the fsync covers (all those before it started). Index files are not
// fsynced here: recovery rebuilds the active segment's index, and the
// background flusher syncs sealed segments whole.
func (l *Log) syncGroup() (uint64, error) {
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return 0, ErrClosed
	}
	if l.mu.failed != nil || l.damage.Load() != nil {
		l.mu.Unlock()
		return 0, l.refusal()
	}
	writes := l.mu.writes
	seg := l.active()
	at := durable{end: record.Offset(l.end.Load()), seg: seg, pos: seg.size.Load()}
	l.mu.Unlock()

	// A roll before at was taken counted itself in dirGen before it.
	err := l.syncDirIfPending()
	// Readers' lock: no segment is closed or removed while it is fsynced.
	l.segs.RLock()
	for _, s := range l.segs.list {
		if err == nil && s.dirty.Swap(false) {
			if err = s.log.Sync(); err != nil {
				s.dirty.Store(true)
				err = fmt.Errorf("partlog: fsync %s: %w", s.logName(), err)
			}
		}
	}
	l.segs.RUnlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.closed.Load() {
			return 0, ErrClosed
		}
		l.failLocked(err)
		return 0, err
	}
	if at.end > l.mu.durable.end && at.end <= record.Offset(l.end.Load()) {
		l.mu.durable = at
	}
	l.publishDurableLocked()
	return writes, nil
}

// publishDurableLocked moves the high watermark after an fsync: to the end
// when no append waits for durability, else to the durable point.
func (l *Log) publishDurableLocked() {
	if l.mu.manualHWM {
		l.publishManualLocked()
		return
	}
	o := l.mu.durable.end
	if l.mu.syncWanted <= o {
		o = record.Offset(l.end.Load())
	}
	if int64(o) > l.hwm.Load() {
		l.publishHWM(o)
		l.applyCountRetentionLocked() // it waited for the high watermark
	}
}

// failLocked stops the log after a failed fsync and, when possible, cuts the
// unpublished tail written since the last durable point.
func (l *Log) failLocked(cause error) {
	l.setFailedLocked(cause)
	defer l.wake() // waiters for the high watermark learn it will not move
	d := l.mu.durable
	seg := l.active()
	if d.seg != seg || l.hwm.Load() > int64(d.end) || seg.size.Load() == d.pos {
		return // rolled since, or published past it, or nothing to cut
	}
	if err := l.cutLocked(seg, d.pos, d.end); err != nil {
		l.setFailedLocked(errors.Join(cause, err))
		return
	}
	seg.size.Store(d.pos)
	seg.next.Store(int64(d.end))
	l.end.Store(int64(d.end))
	l.recomputeMaxTimestamp(seg)
	l.epochs.truncateFromEnd(d.end)
	l.mu.syncWanted = d.end
}

// Failed reports ErrFailed once an fsync or a write failed in a way that
// leaves the log's tail unknown: it refuses appends until it is reopened
// (recovery then decides what the disk holds).
func (l *Log) Failed() error {
	if err := l.Damaged(); err != nil {
		return err
	}
	if l.failed.Load() {
		return ErrFailed
	}
	return nil
}

// setFailedLocked records why the log stopped taking appends.
func (l *Log) setFailedLocked(err error) {
	l.mu.failed = err
	l.failed.Store(err != nil)
}
