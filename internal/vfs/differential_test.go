package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// outcome reduces an error to what must agree between OS and MemFS: nil, EOF,
// ErrClosed, or the errno; anything else is "other".
func outcome(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case err == io.EOF:
		return "EOF"
	case errors.Is(err, os.ErrClosed):
		return "closed"
	case errors.As(err, &errno):
		return errno.Error()
	default:
		return "other"
	}
}

// diffFS is one side of the differential test: an FS rooted at dir, and the
// handles opened on it so far.
type diffFS struct {
	fs      FS
	dir     string
	handles []File
}

func (d *diffFS) path(name string) string { return filepath.Join(d.dir, name) }

// TestDifferentialOSMem applies the same random operations to the OS and to
// MemFS and requires the same results, byte for byte and errno for errno.
func TestDifferentialOSMem(t *testing.T) {
	t.Parallel()
	for seed := range uint64(24) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			m := NewMem()
			if err := m.MkdirAll("/data", 0o755); err != nil {
				t.Fatal(err)
			}
			sides := []*diffFS{{fs: OS{}, dir: t.TempDir()}, {fs: m, dir: "/data"}}
			defer func() {
				for _, s := range sides {
					for _, h := range s.handles {
						h.Close()
					}
				}
			}()
			runDifferential(t, rand.New(rand.NewPCG(seed, 42)), sides, 1500)
		})
	}
}

func runDifferential(t *testing.T, rng *rand.Rand, sides []*diffFS, steps int) {
	names := []string{"a", "b", "c", "d", "d/x", "d/y", "d/e", "d/e/z"}
	flags := []int{
		os.O_RDONLY,
		os.O_WRONLY,
		os.O_RDWR,
		os.O_RDWR | os.O_CREATE,
		os.O_RDWR | os.O_CREATE | os.O_TRUNC,
		os.O_WRONLY | os.O_CREATE | os.O_APPEND,
		os.O_RDWR | os.O_APPEND,
		os.O_RDWR | os.O_CREATE | os.O_EXCL,
		os.O_RDONLY | os.O_TRUNC,
	}
	name := func() string { return names[rng.IntN(len(names))] }
	var log []string // the steps so far, for the failure message

	for step := range steps {
		// Each op returns a description of its result, per side.
		var op string
		var do func(s *diffFS) string
		nh := len(sides[0].handles)
		h := -1
		if nh > 0 {
			h = rng.IntN(nh)
		}
		switch k := rng.IntN(16); {
		case k < 3 || nh == 0:
			n, fl := name(), flags[rng.IntN(len(flags))]
			op = fmt.Sprintf("open %s %#x", n, fl)
			if fi, err := sides[0].fs.Stat(sides[0].path(n)); err == nil && fi.IsDir() && fl == os.O_RDONLY {
				// MemFS refuses to open directories; the OS allows it read-only.
				op, do = "skip "+op, func(*diffFS) string { return "" }
				break
			}
			do = func(s *diffFS) string {
				f, err := s.fs.OpenFile(s.path(n), fl, 0o644)
				if err == nil {
					s.handles = append(s.handles, f)
				}
				return outcome(err)
			}
		case k < 6:
			data := make([]byte, rng.IntN(24))
			for i := range data {
				data[i] = byte('a' + rng.IntN(26))
			}
			op = fmt.Sprintf("write h%d %q", h, data)
			do = func(s *diffFS) string {
				n, err := s.handles[h].Write(data)
				return fmt.Sprint(n, outcome(err))
			}
		case k < 8:
			size, off := rng.IntN(24), int64(rng.IntN(48))
			op = fmt.Sprintf("readat h%d %d@%d", h, size, off)
			do = func(s *diffFS) string {
				buf := make([]byte, size)
				n, err := s.handles[h].ReadAt(buf, off)
				return fmt.Sprintf("%q %s", buf[:n], outcome(err))
			}
		case k < 9:
			size := rng.IntN(24)
			op = fmt.Sprintf("read h%d %d", h, size)
			do = func(s *diffFS) string {
				buf := make([]byte, size)
				n, err := s.handles[h].Read(buf)
				return fmt.Sprintf("%q %s", buf[:n], outcome(err))
			}
		case k < 10:
			size := int64(rng.IntN(40))
			op = fmt.Sprintf("truncate h%d %d", h, size)
			do = func(s *diffFS) string { return outcome(s.handles[h].Truncate(size)) }
		case k < 11:
			op = fmt.Sprintf("close h%d", h)
			do = func(s *diffFS) string {
				err := s.handles[h].Close()
				if rng := step % 2; rng == 0 { // sometimes keep the closed handle around
					s.handles = slices.Delete(s.handles, h, h+1)
				}
				return outcome(err)
			}
		case k < 12:
			from, to := name(), name()
			op = fmt.Sprintf("rename %s %s", from, to)
			do = func(s *diffFS) string { return outcome(s.fs.Rename(s.path(from), s.path(to))) }
		case k < 13:
			n := name()
			op = "remove " + n
			do = func(s *diffFS) string { return outcome(s.fs.Remove(s.path(n))) }
		case k < 14:
			n := name()
			op = "mkdirall " + n
			do = func(s *diffFS) string { return outcome(s.fs.MkdirAll(s.path(n), 0o755)) }
		case k < 15:
			n := name()
			op = "stat " + n
			do = func(s *diffFS) string {
				fi, err := s.fs.Stat(s.path(n))
				if err != nil {
					return outcome(err)
				}
				if fi.IsDir() {
					return "dir"
				}
				return fmt.Sprint("file ", fi.Size())
			}
		default:
			n := []string{".", "d", "d/e", "a"}[rng.IntN(4)]
			op = "readdir " + n
			do = func(s *diffFS) string {
				names, err := s.fs.ReadDir(s.path(n))
				return fmt.Sprint(names, outcome(err))
			}
		}
		log = append(log, op)
		want, got := do(sides[0]), do(sides[1])
		if want != got {
			t.Fatalf("step %d %s: os %q, mem %q\nhistory:\n%s", step, op, want, got, bytes.Join(toBytes(log), []byte("\n")))
		}
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
