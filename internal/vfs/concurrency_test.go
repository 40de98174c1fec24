package vfs

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// patternByte is the byte at offset i of the file the writer builds.
func patternByte(i int64) byte { return byte(i % 251) }

func checkPattern(b []byte, off int64) error {
	for i, c := range b {
		if want := patternByte(off + int64(i)); c != want {
			return fmt.Errorf("byte %d = %d, want %d", off+int64(i), c, want)
		}
	}
	return nil
}

// TestConcurrentAppendAndReadAt runs one appending writer (syncing now and
// then) against several ReadAt readers sharing its handle, on both backends;
// on MemFS a crasher also clones the disk concurrently. Run with -race.
func TestConcurrentAppendAndReadAt(t *testing.T) {
	t.Parallel()
	const chunks, chunkSize, readers = 400, 97, 4
	forEachFS(t, func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "log")
		f := mustCreate(t, fs, name, "")
		defer f.Close()
		if err := fs.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, readers+2)

		wg.Go(func() {
			defer done.Store(true)
			buf := make([]byte, chunkSize)
			for c := range int64(chunks) {
				for i := range buf {
					buf[i] = patternByte(c*chunkSize + int64(i))
				}
				if _, err := f.Write(buf); err != nil {
					errs <- err
					return
				}
				if c%50 == 0 {
					if err := f.Sync(); err != nil {
						errs <- err
						return
					}
				}
			}
		})
		for r := range readers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(r), 0))
				buf := make([]byte, 3*chunkSize)
				for reads := 0; !done.Load() || reads < 10; reads++ {
					size, err := f.Size()
					if err != nil {
						errs <- err
						return
					}
					if size == 0 {
						continue
					}
					off := rng.Int64N(size)
					want := min(int64(len(buf)), size-off)
					n, err := f.ReadAt(buf[:want], off)
					if int64(n) != want || err != nil {
						errs <- fmt.Errorf("ReadAt(%d, %d) of %d = %d, %v", want, off, size, n, err)
						return
					}
					if err := checkPattern(buf[:n], off); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		if m, ok := fs.(*MemFS); ok {
			wg.Go(func() {
				for seed := uint64(0); !done.Load(); seed++ {
					c := m.CrashClone(CrashOptions{TearRand: rand.New(rand.NewPCG(seed, 0))})
					b, err := ReadFile(c, name)
					if err == nil {
						err = checkPattern(b, 0)
					}
					if err != nil {
						errs <- fmt.Errorf("crash clone: %w", err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		wantSize(t, f, chunks*chunkSize)
	})
}
