package compact

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

var errCrash = errors.New("injected crash")

// crashSetup builds a log with several sealed segments of overwritten keys
// and tombstones, the same every time, and returns the expected view.
func crashSetup(t *testing.T, fs vfs.FS, c *clock) (*partlog.Log, map[string][]byte, record.Offset) {
	l := openLog(t, fs, "/p", c, 1<<20)
	ts := c.Now().UnixMilli()
	var all []record.Record
	for i := range 24 {
		r := rec(fmt.Sprint("k", i%5), fmt.Sprint("v", i))
		if i%7 == 6 {
			r.value = nil
		}
		o := appendBatch(t, l, ts, int64(i%2), int32(i/2), record.CodecNone, r)
		all = append(all, record.Record{Offset: o, Key: r.key, Value: r.value})
		if i%4 == 3 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The crashes are the clean's, not the appends': close and reopen, so
	// no background fsync of a rolled segment is still to come and every
	// run takes the same steps.
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return openLog(t, fs, "/p", c, 1<<20), View(all), end
}

// isMutation reports whether op changes the disk.
func isMutation(op vfs.Op) bool {
	switch op {
	case vfs.OpWrite, vfs.OpSync, vfs.OpSyncDir, vfs.OpCreate, vfs.OpRename, vfs.OpRemove, vfs.OpTruncate:
		return true
	}
	return false
}

// TestCrashDuringClean crashes the machine at every disk-changing step of a
// clean (group swaps and checkpoint write): after reopening, the log folds to
// the same view with every offset unchanged, and a second clean completes.
func TestCrashDuringClean(t *testing.T) {
	t.Parallel()
	p := policy()
	p.SegmentBytes = 300 // several groups
	// Count the steps of an undisturbed clean.
	var steps atomic.Int64
	{
		fs, c := vfs.NewMem(), newClock()
		l, _, _ := crashSetup(t, fs, c)
		fs.InjectError(func(op vfs.Op, _ string) error {
			if isMutation(op) {
				steps.Add(1)
			}
			return nil
		})
		if _, err := (&Cleaner{FS: fs, Now: c.Now}).Clean(l, p); err != nil {
			t.Fatal(err)
		}
		fs.InjectError(nil)
		l.Close()
	}
	if steps.Load() < 10 {
		t.Fatalf("only %d steps", steps.Load())
	}
	for k := int64(1); k <= steps.Load(); k++ {
		fs, c := vfs.NewMem(), newClock()
		l, want, end := crashSetup(t, fs, c)
		var (
			n    atomic.Int64
			down atomic.Pointer[vfs.MemFS]
		)
		fs.InjectError(func(op vfs.Op, _ string) error {
			if !isMutation(op) {
				return nil
			}
			if n.Add(1) == k {
				down.Store(fs.CrashClone(vfs.CrashOptions{}))
			}
			if down.Load() != nil {
				return errCrash // the machine is down
			}
			return nil
		})
		_, err := (&Cleaner{FS: fs, Now: c.Now}).Clean(l, p)
		disk := down.Load()
		if err == nil || disk == nil {
			t.Fatalf("step %d: Clean = %v without crashing", k, err)
		}
		l.Close()

		l = openLog(t, disk, "/p", c, 1<<20)
		check := func(when string) {
			_, rs := readAll(t, l)
			if got := View(rs); !maps.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("step %d, %s: view %q, want %q", k, when, got, want)
			}
			if l.LogEndOffset() != end {
				t.Fatalf("step %d, %s: end offset %d, want %d", k, when, l.LogEndOffset(), end)
			}
		}
		check("after the crash")
		if _, err := (&Cleaner{FS: disk, Now: c.Now}).Clean(l, p); err != nil {
			t.Fatalf("step %d: clean after the crash: %v", k, err)
		}
		check("after cleaning again")
		l.Close()
	}
}
