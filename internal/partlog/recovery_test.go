package partlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestCrashKeepsSyncedRecords appends at random, syncs at random, crashes the
// in-memory disk at a random point (tearing the unsynced tail) and checks that
// every synced record survives, nothing after the torn point is served, and
// appends resume at the next offset without reusing one.
func TestCrashKeepsSyncedRecords(t *testing.T) {
	t.Parallel()
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			fs := vfs.NewMem()
			cfg := Config{SegmentBytes: int64(1100 + rng.IntN(2000)), IndexIntervalBytes: int64(1 + rng.IntN(500))}
			l, err := Open(fs, "/d", cfg)
			if err != nil {
				t.Fatal(err)
			}
			var all []string // value at each offset
			synced := 0      // offsets [0, synced) are durable
			for i := range 20 + rng.IntN(60) {
				vals := make([]string, 1+rng.IntN(4))
				for j := range vals {
					vals[j] = fmt.Sprintf("s%d-b%d-r%d-%s", seed, i, j, pad(rng.IntN(200)))
				}
				if _, err := l.Append(batch(t, int64(i), vals...)); err != nil {
					t.Fatal(err)
				}
				all = append(all, vals...)
				if rng.IntN(4) == 0 {
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					synced = len(all)
				}
			}
			crashed := fs.CrashClone(vfs.CrashOptions{TearRand: rng})
			l.Close()

			r, err := Open(crashed, "/d", cfg)
			if err != nil {
				t.Fatalf("reopen after crash: %v", err)
			}
			defer r.Close()
			got := readAll(t, r, 0)
			end := int(r.LogEndOffset())
			if end < synced || end > len(all) || len(got) != end {
				t.Fatalf("recovered end %d with %d records; synced %d, written %d", end, len(got), synced, len(all))
			}
			for i, rec := range got {
				if int(rec.Offset) != i || string(rec.Value) != all[i] {
					t.Fatalf("offset %d: got %d=%q, want %q", i, rec.Offset, rec.Value, all[i])
				}
			}
			o, err := r.Append(batch(t, 1, "after-crash"))
			if err != nil || int(o) != end {
				t.Fatalf("append after recovery = %d, %v; want %d", o, err, end)
			}
			// And once more after a clean close, to check recovery left a sound log.
			r.Close()
			r2, err := Open(crashed, "/d", cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			if r2.LogEndOffset() != o+1 {
				t.Fatalf("end after second reopen %d, want %d", r2.LogEndOffset(), o+1)
			}
		})
	}
}

// TestTruncatedRealFile cuts the newest segment of a real file at every kind of
// position and checks recovery keeps exactly the whole batches before the cut.
func TestTruncatedRealFile(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 25 {
		dir := filepath.Join(t.TempDir(), "p")
		l, err := Open(vfs.Default, dir, Config{})
		if err != nil {
			t.Fatal(err)
		}
		var ends []int64 // file size after each batch
		var size int64
		for i := range 20 {
			b := batch(t, 1, fmt.Sprintf("t%d-%d%s", trial, i, pad(rng.IntN(300))))
			mustAppend(t, l, b)
			size += int64(len(b))
			ends = append(ends, size)
		}
		segs := l.segmentsSnapshot()
		path := segs[len(segs)-1].path(logSuffix)
		// Simulate a crash: no clean-shutdown marker, file cut at a random byte.
		abandon(l)
		cut := rng.Int64N(size + 1)
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		r, err := Open(vfs.Default, dir, Config{})
		if err != nil {
			t.Fatalf("trial %d: reopen after cut at %d: %v", trial, cut, err)
		}
		wantN := 0
		for wantN < len(ends) && ends[wantN] <= cut {
			wantN++
		}
		if int(r.LogEndOffset()) != wantN || len(readAll(t, r, 0)) != wantN {
			t.Fatalf("trial %d: cut at %d of %d: end %d, want %d", trial, cut, size, r.LogEndOffset(), wantN)
		}
		r.Close()
	}
}

// TestCorruptTailTruncated flips a byte inside the last batch of an uncleanly
// closed log: the CRC check finds it and recovery drops that batch only.
func TestCorruptTailTruncated(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, "/d", Config{})
	for i := range 5 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("v%d", i)))
	}
	l.Sync()
	f, _ := fs.OpenFile("/d/00000000000000000000.log", os.O_RDWR, 0)
	size, _ := f.Size()
	b := make([]byte, size)
	f.ReadAt(b, 0)
	b[size-2] ^= 0x40
	f.Truncate(0)
	f.Write(b)
	f.Sync()
	f.Close()
	crashed := fs.CrashClone(vfs.CrashOptions{})
	r := mustOpen(t, crashed, "/d", Config{})
	if r.LogEndOffset() != 4 {
		t.Fatalf("end %d after corrupt last batch, want 4", r.LogEndOffset())
	}
}

// TestCorruptIndexRebuilt damages index files in every way validation knows
// and checks reads still find every offset.
func TestCorruptIndexRebuilt(t *testing.T) {
	damage := map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)-3] },
		"garbage":   func(b []byte) []byte { return slices.Repeat([]byte{0xff}, len(b)) },
		"missing":   nil,
		"reordered": func(b []byte) []byte { return slices.Concat(b[8:16], b[0:8], b[16:]) },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
				cfg := Config{IndexIntervalBytes: 1}
				l := mustOpen(t, fs, dir, cfg)
				for i := range 30 {
					mustAppend(t, l, batch(t, int64(i), fmt.Sprintf("v%d", i)))
				}
				l.Close()
				p := filepath.Join(dir, "00000000000000000000.index")
				if fn == nil {
					fs.Remove(p)
				} else {
					b, _ := vfs.ReadFile(fs, p)
					f, _ := vfs.Create(fs, p)
					f.Write(fn(b))
					f.Close()
				}
				l = mustOpen(t, fs, dir, cfg)
				for _, o := range []record.Offset{0, 13, 29} {
					got := readAll(t, l, o)
					if len(got) == 0 || got[0].Offset != o || string(got[0].Value) != fmt.Sprintf("v%d", o) {
						t.Fatalf("read(%d) after index damage: %v", o, offsets(got))
					}
				}
				if o, _, _ := l.OffsetForTimestamp(13); o != 13 {
					t.Fatalf("OffsetForTimestamp(13) = %d", o)
				}
			})
		})
	}
}

func TestMissingDirectoryIsCreated(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, filepath.Join(dir, "a", "b"), Config{})
		mustAppend(t, l, batch(t, 1, "x"))
	})
}

// TestWriteErrorLeavesNothing injects ENOSPC (a partial write) and EIO on
// fsync: the caller gets the error, and no half-written batch is ever served,
// now or after reopening.
func TestWriteErrorLeavesNothing(t *testing.T) {
	t.Run("enospc", func(t *testing.T) {
		fs := vfs.NewMem()
		l := mustOpen(t, fs, "/d", Config{})
		mustAppend(t, l, batch(t, 1, "ok-0"))
		fs.InjectError(vfs.ErrorOnce(vfs.OpWrite, ".log", vfs.PartialWrite(syscall.ENOSPC, -1)))
		if _, err := l.Append(batch(t, 1, "lost", "lost")); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append on full disk: %v", err)
		}
		if l.LogEndOffset() != 1 {
			t.Fatalf("end moved to %d on a failed write", l.LogEndOffset())
		}
		// Space frees up: appends resume at the next offset.
		if o := mustAppend(t, l, batch(t, 1, "ok-1")); o != 1 {
			t.Fatalf("next append at %d, want 1", o)
		}
		l.Sync()
		r := mustOpen(t, fs.CrashClone(vfs.CrashOptions{}), "/d", Config{})
		if got := values(readAll(t, r, 0)); !slices.Equal(got, []string{"ok-0", "ok-1"}) {
			t.Fatalf("after crash: %q", got)
		}
	})
	t.Run("eio-fsync", func(t *testing.T) {
		fs := vfs.NewMem()
		l := mustOpen(t, fs, "/d", Config{FlushMessages: 1})
		mustAppend(t, l, batch(t, 1, "ok-0"))
		fs.InjectError(vfs.ErrorOnce(vfs.OpSync, ".log", syscall.EIO))
		if _, err := l.Append(batch(t, 1, "unsure")); !errors.Is(err, syscall.EIO) {
			t.Fatalf("append with failing fsync: %v", err)
		}
		if _, err := l.Append(batch(t, 1, "refused")); !errors.Is(err, ErrFailed) {
			t.Fatalf("append after fsync failure: %v, want ErrFailed", err)
		}
		if got := values(readAll(t, l, 0)); !slices.Equal(got, []string{"ok-0"}) {
			t.Fatalf("failed batch visible: %q", got)
		}
		l.Close()
		r := mustOpen(t, fs.CrashClone(vfs.CrashOptions{}), "/d", Config{})
		if got := values(readAll(t, r, 0)); !slices.Equal(got, []string{"ok-0"}) {
			t.Fatalf("after reopen: %q", got)
		}
		if o := mustAppend(t, r, batch(t, 1, "ok-1")); o != 1 {
			t.Fatalf("append after recovery at %d", o)
		}
	})
}

// TestConcurrentReaders reads while one goroutine appends and retention runs;
// run with -race.
func TestConcurrentReaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 2000, RetentionRecords: 300})
		const n = 600
		var wg sync.WaitGroup
		stop := make(chan struct{})
		errs := make(chan error, 4)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				next := record.Offset(0)
				for {
					select {
					case <-stop:
						return
					default:
					}
					data, err := l.Read(next, 4096)
					if errors.Is(err, ErrOffsetOutOfRange) {
						next = l.LogStartOffset()
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					for len(data) > 0 {
						h, err := record.Check(data)
						if err != nil {
							errs <- fmt.Errorf("reader got a bad batch: %w", err)
							return
						}
						if h.NextOffset() > l.HighWatermark() {
							errs <- fmt.Errorf("reader saw offset %d past hwm", h.LastOffset())
							return
						}
						next = h.NextOffset()
						data = data[h.Size():]
					}
				}
			}()
		}
		for i := range n {
			mustAppend(t, l, batch(t, int64(i), fmt.Sprintf("v%d", i)))
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if l.LogStartOffset() != n-300 || l.LogEndOffset() != n {
			t.Fatalf("start/end %d/%d", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

// FuzzRecovery feeds arbitrary bytes as the newest segment of an uncleanly
// closed log: Open must never panic, must serve only whole valid batches, and
// appends must continue after them.
func FuzzRecovery(f *testing.F) {
	var seed []byte
	for i := range 4 {
		seed = append(seed, batchNoT(fmt.Sprintf("seed-%d", i))...)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-5])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		fs.MkdirAll("/d", 0o755)
		w, _ := vfs.Create(fs, "/d/00000000000000000000.log")
		w.Write(data)
		w.Sync()
		w.Close()
		fs.SyncDir("/d")
		l, err := Open(fs, "/d", Config{})
		if err != nil {
			// Only an untrustworthy layout may refuse to open.
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("open failed with a non-corruption error: %v", err)
			}
			return
		}
		defer l.Close()
		end := l.LogEndOffset()
		from := record.Offset(0)
		for from < end {
			b, err := l.Read(from, 1<<20)
			if err != nil || len(b) == 0 {
				t.Fatalf("read at %d of %d: %v", from, end, err)
			}
			for len(b) > 0 {
				h, err := record.Check(b)
				if err != nil {
					t.Fatalf("served a bad batch: %v", err)
				}
				from = h.NextOffset()
				b = b[h.Size():]
			}
		}
		if o, err := l.Append(batchNoT("next")); err != nil || o != end {
			t.Fatalf("append after recovery = %d, %v; want %d", o, err, end)
		}
	})
}

func batchNoT(v string) []byte {
	b, err := record.Encode(0, []record.Record{{Value: []byte(v)}}, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	if err != nil {
		panic(err)
	}
	return b
}

// TestTakenMarkerRemovalDurable: a marker taken by TakeCleanMarker and not
// yet made durable is made durable by OpenTaken, so a crash after the open
// returns cannot bring the marker back (and recovery is unclean); with
// Durable set by a caller that synced the directory itself, the same holds.
func TestTakenMarkerRemovalDurable(t *testing.T) {
	for _, durable := range []bool{false, true} {
		fs := vfs.NewMem()
		l := mustOpen(t, fs, "/d", Config{})
		mustAppend(t, l, batch(t, 0, "v0"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// The marker's entry durable, so that only a synced removal keeps
		// it from coming back after a crash.
		if err := fs.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		m, err := TakeCleanMarker(fs, "/d")
		if err != nil || !m.Clean || m.End != 1 {
			t.Fatalf("TakeCleanMarker = %+v, %v; want clean, end 1", m, err)
		}
		if durable {
			if err := fs.SyncDir("/d"); err != nil {
				t.Fatal(err)
			}
			m.Durable = true
		}
		l, err = OpenTaken(fs, "/d", Config{}, &m)
		if err != nil {
			t.Fatal(err)
		}
		crashed := fs.CrashClone(vfs.CrashOptions{})
		if _, err := crashed.Stat(filepath.Join("/d", cleanFile)); err == nil {
			t.Fatalf("durable=%v: clean-shutdown marker back after a crash following OpenTaken", durable)
		}
		if l.LogEndOffset() != 1 {
			t.Fatalf("end %d, want 1", l.LogEndOffset())
		}
		l.Close()
	}
}
