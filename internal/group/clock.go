package group

import "time"

// Clock is the coordinator's source of time. Session, rebalance and initial
// rebalance delays are all timers from it, so tests drive them with a fake
// clock instead of sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a fake clock, in the
	// goroutine advancing time) once d has elapsed. f must not block for
	// long; the coordinator's f only hands an event to a group's actor.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call if it has not started; it reports whether it did.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
