package partlog

import (
	"fmt"
)

// Damage below the recovery point is a storage fault, not a torn write:
// those bytes were fsynced whole, so recovery may not cut them off (and with
// them every later offset). The log goes offline instead: appends and reads
// fail with ErrDamaged naming the file and position, the files stay as they
// are for the operator, and the rest of the broker carries on.

// Damaged returns nil, or an error matching ErrDamaged and wrapping the
// *CorruptionError that took the log offline.
func (l *Log) Damaged() error {
	if c := l.damage.Load(); c != nil {
		return fmt.Errorf("%w: %w (in %s)", ErrDamaged, c, l.dir)
	}
	return nil
}

// MarkDamaged takes the log offline for c. The first damage found is the
// one reported; it returns whether this call was it.
func (l *Log) MarkDamaged(c *CorruptionError) bool {
	if !l.damage.CompareAndSwap(nil, c) {
		return false
	}
	l.logger.Error("partlog: damaged data; the partition is offline until repaired (see docs/OPERATIONS.md)",
		"dir", l.dir, "file", c.File, "position", c.Pos, "reason", c.Err)
	l.wake() // long-polling readers learn at once
	return true
}

// refusal is the error of a write refused after Failed or damage.
func (l *Log) refusal() error {
	if err := l.Damaged(); err != nil {
		return err
	}
	return ErrFailed
}
