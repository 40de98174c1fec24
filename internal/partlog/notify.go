package partlog

import "slices"

// A long-polling fetch reads several partitions and waits for any of them
// to change. Wait and WaitEnd give one channel per log, so such a fetch
// had to select over a channel per partition (reflect.Select, allocating
// on every wait); the notifications below let it wait on one channel of
// its own instead: each log it registers with sends on that channel,
// without blocking, at its next change, and forgets it. The channel needs
// a buffer of one: any number of logs then wake it at most once between
// two receives, and no send is lost while the waiter is not receiving.
//
// The alternative rejected is a goroutine per waited log forwarding into
// one channel: more goroutines and more wake-ups than the waits they
// replace.

// notifiers is a set of channels, each sent to once at the next change.
type notifiers []chan<- struct{}

func (n *notifiers) add(c chan<- struct{}) { *n = append(*n, c) }

func (n *notifiers) remove(c chan<- struct{}) {
	if i := slices.Index(*n, c); i >= 0 {
		last := len(*n) - 1
		(*n)[i] = (*n)[last]
		(*n)[last] = nil
		*n = (*n)[:last]
	}
}

// fire sends to every channel without blocking and forgets them all.
func (n *notifiers) fire() {
	for i, c := range *n {
		notify(c)
		(*n)[i] = nil
	}
	*n = (*n)[:0]
}

func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default: // already woken
	}
}

// NotifyHighWatermark has the log send on c (without blocking) the next
// time the high watermark advances or the log closes — at once if it is
// closed. c should have a buffer of one. StopNotify forgets c earlier.
func (l *Log) NotifyHighWatermark(c chan<- struct{}) {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	select {
	case <-l.waitCh: // closed for good: the log is closed
		notify(c)
	default:
		l.hwSubs.add(c)
	}
}

// NotifyEnd has the log send on c (without blocking) the next time the
// end offset changes or the log closes — at once if it is closed.
func (l *Log) NotifyEnd(c chan<- struct{}) {
	w := &l.ends
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		notify(c)
		return
	}
	w.subs.add(c)
}

// StopNotify forgets c, registered by NotifyHighWatermark or NotifyEnd, if
// the log has not sent on it yet: a wait that ended otherwise (its
// deadline) must not leave its channel behind on a log that stays quiet.
func (l *Log) StopNotify(c chan<- struct{}) {
	l.waitMu.Lock()
	l.hwSubs.remove(c)
	l.waitMu.Unlock()
	l.ends.mu.Lock()
	l.ends.subs.remove(c)
	l.ends.mu.Unlock()
}
