package partlog

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/vfs"
)

// mostConcurrentAppends appends from four goroutines, one log each, all in
// one MemFS, with gate in their configs, and returns the most segment
// writes seen in progress at once. Each write dwells a little, so that
// unbounded writers overlap.
func mostConcurrentAppends(t *testing.T, gate *WriteGate) int64 {
	fs := vfs.NewMem()
	var inFlight, most atomic.Int64
	fs.InjectError(func(op vfs.Op, path string) error {
		if op != vfs.OpWrite || !strings.HasSuffix(path, ".log") {
			return nil
		}
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Microsecond)
		inFlight.Add(-1)
		return nil
	})
	var wg sync.WaitGroup
	for p := range 4 {
		l := mustOpen(t, fs, fmt.Sprintf("/data/t-%d", p), Config{WriteGate: gate})
		wg.Go(func() {
			for i := range 50 {
				if _, err := l.Append(batch(t, 1, fmt.Sprint(i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if most.Load() == 0 {
		t.Fatal("no segment write seen in 200 appends")
	}
	return most.Load()
}

func TestWriteGateBoundsConcurrentWrites(t *testing.T) {
	if got := mostConcurrentAppends(t, NewWriteGate(1)); got != 1 {
		t.Errorf("one-writer gate: %d segment writes at once, want 1", got)
	}
	if got := mostConcurrentAppends(t, NewWriteGate(2)); got > 2 {
		t.Errorf("two-writer gate: %d segment writes at once, want at most 2", got)
	}
	// Without a gate the same appends overlap; otherwise the checks above
	// prove nothing.
	if got := mostConcurrentAppends(t, nil); got < 2 {
		t.Errorf("no gate: at most %d segment write at once; the test cannot see overlap", got)
	}
}

func TestNewWriteGateUnbounded(t *testing.T) {
	for _, n := range []int{0, -1} {
		if g := NewWriteGate(n); g != nil {
			t.Errorf("NewWriteGate(%d) = %v, want nil (no bound)", n, g)
		}
	}
}
