package partlog

import (
	"testing"

	"github.com/strandmq/strand/internal/vfs"
)

// closed (hwm_test.go) reports a notification as well as a close: it
// receives whichever is there.

// TestNotify: one channel registered with two logs hears the first change
// of either (an append for NotifyEnd, a high watermark for
// NotifyHighWatermark) once, even when both change; each registration is
// used once; StopNotify forgets a registration; a closed log notifies at
// once.
func TestNotify(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{ReplicatedHighWatermark: true}
		a, b := mustOpen(t, fs, dir+"/a", cfg), mustOpen(t, fs, dir+"/b", cfg)
		c := make(chan struct{}, 1)

		a.NotifyEnd(c)
		b.NotifyEnd(c)
		mustAppend(t, a, batch(t, 1, "a0"))
		mustAppend(t, b, batch(t, 1, "b0"))
		if !closed(c) {
			t.Fatal("appends did not notify an end waiter")
		}
		if closed(c) {
			t.Fatal("a buffered notification was sent twice")
		}
		mustAppend(t, a, batch(t, 1, "a1"))
		if closed(c) {
			t.Fatal("a registration was used twice")
		}

		a.NotifyHighWatermark(c)
		a.NotifyEnd(c)
		a.StopNotify(c)
		mustAppend(t, a, batch(t, 1, "a2"))
		a.SetHighWatermark(3)
		if closed(c) {
			t.Fatal("StopNotify did not forget the channel")
		}

		b.NotifyHighWatermark(c)
		mustAppend(t, b, batch(t, 1, "b1"))
		if closed(c) {
			t.Fatal("an append notified a high-watermark waiter in replicated mode")
		}
		b.SetHighWatermark(1)
		if !closed(c) {
			t.Fatal("the high watermark's advance did not notify its waiter")
		}

		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		a.NotifyEnd(c)
		if !closed(c) {
			t.Fatal("a closed log did not notify an end waiter at once")
		}
		a.NotifyHighWatermark(c)
		if !closed(c) {
			t.Fatal("a closed log did not notify a high-watermark waiter at once")
		}
	})
}
