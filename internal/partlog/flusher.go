package partlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// recoveryPointFile holds the base offset of the oldest segment that may hold
// unsynced bytes: every segment below it was fsynced whole. After an unclean
// shutdown, Open verifies every batch from there on.
const recoveryPointFile = "recovery-point"

// The flusher is one goroutine per log that fsyncs sealed segments after a
// roll, so the writer never waits for the disk when it rolls (Kafka flushes
// rolled segments asynchronously too). Then it advances the recovery point.
func (l *Log) startFlusher() {
	l.flush.kick = make(chan struct{}, 1)
	l.flush.done = make(chan struct{})
	go l.runFlusher()
}

func (l *Log) kickFlusher() {
	select {
	case l.flush.kick <- struct{}{}:
	default:
	}
}

// stopFlusher ends the flusher goroutine; called once, with l.mu held.
func (l *Log) stopFlusher() {
	close(l.flush.kick)
	<-l.flush.done
}

func (l *Log) runFlusher() {
	defer close(l.flush.done)
	for range l.flush.kick {
		if err := l.flushSealed(); err != nil {
			l.flush.err.CompareAndSwap(nil, &err)
			l.cfgLogger().Error("partlog: background fsync failed; log refuses appends until reopened",
				"dir", l.dir, "err", err)
		}
		if err := l.removeDeleted(); err != nil {
			l.cfgLogger().Warn("partlog: removing deleted segments failed; the next open removes what is left",
				"dir", l.dir, "err", err)
		}
	}
}

// flushErr is the background flusher's failure, if any.
func (l *Log) flushErr() error {
	if p := l.flush.err.Load(); p != nil {
		return errors.Join(ErrFailed, *p)
	}
	return nil
}

// flushSealed fsyncs every dirty sealed segment, then records the active
// segment's base as the recovery point. The shared lock on the segment list
// keeps retention from closing a file under the fsync.
func (l *Log) flushSealed() error {
	if err := l.syncDirIfPending(); err != nil {
		return err
	}
	l.segs.RLock()
	list := l.segs.list
	var err error
	for _, s := range list[:len(list)-1] {
		if s.dirty.Load() {
			if err = s.sync(); err != nil {
				break
			}
		}
	}
	point := list[len(list)-1].base
	l.segs.RUnlock()
	if err != nil {
		return err
	}
	return l.advanceRecoveryPoint(point)
}

func (l *Log) advanceRecoveryPoint(point record.Offset) error {
	return l.setRecoveryPoint(point, false)
}

// setRecoveryPoint persists a new recovery point. Only truncation may lower it:
// a truncated segment is written again and must be verified after a crash.
func (l *Log) setRecoveryPoint(point record.Offset, lower bool) error {
	l.flush.pointMu.Lock()
	defer l.flush.pointMu.Unlock()
	if point == l.flush.point || (point < l.flush.point && !lower) {
		return nil
	}
	data := []byte(strconv.FormatInt(int64(point), 10) + "\n")
	if err := vfs.WriteFileSync(l.fs, l.dir, filepath.Join(l.dir, recoveryPointFile), data); err != nil {
		return fmt.Errorf("partlog: persist recovery point: %w", err)
	}
	l.flush.point = point
	return nil
}

// loadRecoveryPoint reads the recovery point; a missing or unreadable one is
// 0, which makes recovery verify everything.
func loadRecoveryPoint(fs vfs.FS, dir string) record.Offset {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, recoveryPointFile))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return 0
		}
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return record.Offset(n)
}
