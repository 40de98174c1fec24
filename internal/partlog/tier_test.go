package partlog

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/vfs"
)

// TestOpenSealedBesideRetention: the uploader opening sealed segments
// while retention deletes the oldest must not deadlock (OpenSealed once
// took the log's lock inside the segment list's, the reverse of
// ApplyRetention's order, and a tiered cluster test hung on it).
func TestOpenSealedBesideRetention(t *testing.T) {
	l := mustOpen(t, vfs.OS{}, t.TempDir(), Config{SegmentBytes: 300, RetentionBytes: 1200, RetentionTime: -1})
	for i := range 20 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("%02d%s", i, pad(100))))
	}
	var stop atomic.Bool
	opened := make(chan int)
	go func() {
		n := 0
		for !stop.Load() {
			for _, s := range l.segmentsSnapshot() {
				sf, err := l.OpenSealed(s.base)
				if err == nil {
					sf.Log.Close()
					n++
				} else if !errors.Is(err, os.ErrNotExist) {
					t.Error(err)
				}
			}
		}
		opened <- n
	}()
	done := make(chan error)
	go func() {
		for i := range 400 {
			if _, err := l.Append(batch(t, 1, fmt.Sprintf("%03d%s", i, pad(100)))); err != nil {
				done <- err
				return
			}
			if _, err := l.ApplyRetention(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("appends and retention stalled for 60 s beside OpenSealed: a lock-order deadlock")
	}
	stop.Store(true)
	t.Logf("%d sealed segments opened beside 400 appends and retention passes", <-opened)
}
