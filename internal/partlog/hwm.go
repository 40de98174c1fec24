package partlog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// hwmFile is the high-watermark checkpoint of a log in manual mode (Kafka's
// replication-offset-checkpoint, one per partition here).
const hwmFile = "high-watermark"

// openHighWatermark sets the high watermark at Open: the end offset in
// automatic mode; in replicated mode the checkpoint, within [start, end] (a
// restarted replica must not expose records no quorum was known to have).
func (l *Log) openHighWatermark() {
	if !l.mu.cfg.ReplicatedHighWatermark {
		l.hwm.Store(l.end.Load())
		return
	}
	l.mu.manualHWM = true
	hw := l.start.Load()
	b, err := vfs.ReadFile(l.fs, filepath.Join(l.dir, hwmFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		l.logger.Warn("partlog: high-watermark checkpoint unreadable; starting at the log start", "dir", l.dir, "err", err)
	default:
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); perr == nil {
			hw = max(hw, min(n, l.end.Load()))
		} else {
			l.logger.Warn("partlog: high-watermark checkpoint unreadable; starting at the log start", "dir", l.dir, "err", perr)
		}
	}
	l.hwm.Store(hw)
	l.hwmSaved.Store(hw)
	l.mu.hwTarget = record.Offset(hw)
}

// publishManualLocked publishes the high watermark asked for, held at the
// fsync gate: never past a batch that waits for its fsync.
func (l *Log) publishManualLocked() {
	o := min(l.mu.hwTarget, record.Offset(l.end.Load()))
	if l.mu.syncWanted > l.mu.durable.end {
		o = min(o, l.mu.durable.end)
	}
	if int64(o) > l.hwm.Load() {
		l.publishHWM(o)
		l.applyCountRetentionLocked()
	}
}

// CheckpointHighWatermark persists the high watermark if it moved since
// the last checkpoint (replicated mode; Close does it too). The replica
// manager calls it periodically (Kafka: every 5 s).
func (l *Log) CheckpointHighWatermark() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	return l.checkpointHWM()
}

func (l *Log) checkpointHWM() error {
	hw := l.hwm.Load()
	if hw == l.hwmSaved.Load() {
		return nil
	}
	if err := vfs.WriteFileSync(l.fs, l.dir, filepath.Join(l.dir, hwmFile), []byte(strconv.FormatInt(hw, 10)+"\n")); err != nil {
		return err
	}
	l.hwmSaved.Store(hw)
	return nil
}

// endWake lets followers' long polls wait for the end offset to move (an
// append or a truncation), apart from consumers, who wait for the high
// watermark (Wait). The channel exists only while someone waits.
type endWake struct {
	mu     sync.Mutex
	ch     chan struct{}
	subs   notifiers // NotifyEnd's (notify.go)
	closed bool
}

// WaitEnd returns a channel closed the next time the end offset changes or
// the log closes: what a leader serving a follower's fetch waits on.
func (l *Log) WaitEnd() <-chan struct{} {
	w := &l.ends
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
		if w.closed {
			close(w.ch)
		}
	}
	return w.ch
}

// wake closes the channel waiters hold; final marks the log closed.
func (w *endWake) wake(final bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil && !w.closed {
		close(w.ch)
		w.ch = nil
	}
	w.subs.fire()
	w.closed = w.closed || final
}
