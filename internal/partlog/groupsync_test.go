package partlog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// slowLogSyncs makes every fsync of a segment file take d and counts them.
func slowLogSyncs(fs *vfs.MemFS, d time.Duration) *atomic.Int64 {
	var n atomic.Int64
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			n.Add(1)
			time.Sleep(d)
		}
		return nil
	})
	return &n
}

// TestGroupCommit: with flush.messages=1 and concurrent producers, appends
// share fsyncs (far fewer fsyncs than appends), every append still gets its
// own offset, and every append acknowledged before a crash survives it.
func TestGroupCommit(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, "/d", Config{FlushMessages: 1})
	syncs := slowLogSyncs(fs, time.Millisecond)

	const writers, each = 8, 25
	var (
		mu    sync.Mutex
		acked = map[record.Offset]string{}
		crash *vfs.MemFS
		want  map[record.Offset]string
		wg    sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				v := fmt.Sprintf("w%d-%d", w, i)
				o, err := l.Append(batch(t, 1000, v))
				if err != nil {
					t.Errorf("append %s: %v", v, err)
					return
				}
				mu.Lock()
				if _, dup := acked[o]; dup {
					t.Errorf("offset %d handed out twice", o)
				}
				acked[o] = v
				if w == 0 && i == each/2 { // crash mid-run: what was acknowledged must be on disk
					want = make(map[record.Offset]string, len(acked))
					for k, v := range acked {
						want[k] = v
					}
					crash = fs.CrashClone(vfs.CrashOptions{TearRand: rand.New(rand.NewPCG(7, 7))})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := syncs.Load(); n >= writers*each {
		t.Fatalf("%d fsyncs for %d appends: not grouped", n, writers*each)
	} else {
		t.Logf("%d appends, %d segment fsyncs", writers*each, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	r := mustOpen(t, crash, "/d", Config{})
	defer r.Close()
	got := map[record.Offset]string{}
	for _, rec := range readAll(t, r, 0) {
		got[rec.Offset] = string(rec.Value)
	}
	for o, v := range want {
		if got[o] != v {
			t.Fatalf("acknowledged %q at offset %d; after the crash the log has %q", v, o, got[o])
		}
	}
}

// TestUnsyncedBatchInvisible: while an append waits for its fsync, readers
// do not see it (the high watermark stays put), and appends behind it are
// not published either; once the fsync completes, both are.
func TestUnsyncedBatchInvisible(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, "/d", Config{FlushMessages: 1})
	mustAppend(t, l, batch(t, 1000, "a"))

	entered, free := holdFirstLogSync(t, fs)
	done := make(chan error, 2)
	appendReachesSync(t, l, batch(t, 1000, "b"), entered, done)
	if hw := l.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d while offset 1 waits for its fsync", hw)
	}
	go func() { _, err := l.Append(batch(t, 1000, "c")); done <- err }()
	time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
	if hw := l.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d while an fsync is pending", hw)
	}
	free()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if hw := l.HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d after the fsyncs, want 3", hw)
	}
	if got := values(readAll(t, l, 0)); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("log holds %q", got)
	}
}

// holdFirstLogSync makes the first fsync of a .log file on fs wait until
// the returned free is called (also at cleanup, registered after any
// earlier mustOpen's Close so that it runs first: a failing assertion must
// not leave Close waiting on the held fsync). entered closes once that
// fsync has begun.
func holdFirstLogSync(t *testing.T, fs *vfs.MemFS) (entered <-chan struct{}, free func()) {
	t.Helper()
	in, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free = func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	var blocked atomic.Bool
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") && blocked.CompareAndSwap(false, true) {
			close(in)
			<-release
		}
		return nil
	})
	return in, free
}

// appendReachesSync appends b on its own goroutine (its error to done)
// and waits, bounded, until its fsync has begun.
func appendReachesSync(t *testing.T, l *Log, b []byte, entered <-chan struct{}, done chan<- error) {
	t.Helper()
	go func() { _, err := l.Append(b); done <- err }()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the append never reached its fsync")
	}
}

// TestGroupCommitAcrossRolls: a roll leaves the new segment's directory
// entry to the next fsync; with flush.messages=1 every acknowledged append
// in a rolled segment must still survive a crash right after it.
func TestGroupCommitAcrossRolls(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, "/d", Config{FlushMessages: 1, SegmentBytes: 200})
	acked := map[record.Offset]string{}
	var crashes []*vfs.MemFS
	var wants []map[record.Offset]string
	for i := range 12 {
		v := fmt.Sprintf("v%d", i)
		o, err := l.Append(batch(t, 1000, v))
		if err != nil {
			t.Fatalf("append %s: %v", v, err)
		}
		acked[o] = v
		want := make(map[record.Offset]string, len(acked))
		for k, v := range acked {
			want[k] = v
		}
		wants = append(wants, want)
		crashes = append(crashes, fs.CrashClone(vfs.CrashOptions{TearRand: rand.New(rand.NewPCG(uint64(i), 7))}))
	}
	if n := len(l.segmentsSnapshot()); n < 3 {
		t.Fatalf("%d segments: the test needs rolls", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, crash := range crashes {
		r := mustOpen(t, crash, "/d", Config{})
		got := map[record.Offset]string{}
		for _, rec := range readAll(t, r, 0) {
			got[rec.Offset] = string(rec.Value)
		}
		r.Close()
		for o, v := range wants[i] {
			if got[o] != v {
				t.Fatalf("crash after append %d: acknowledged %q at offset %d, the log has %q", i, v, o, got[o])
			}
		}
	}
}
