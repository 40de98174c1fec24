//go:build linux

package vfs

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadAtPageCacheFirst: osFile.ReadAt returns the same bytes and errors
// as os.File.ReadAt whether the range is in the page cache (served by the
// raw RWF_NOWAIT read), out of it (dropped after an fsync: the raw read
// gets EAGAIN or a short count and the usual read does the rest), or
// partly past the end of the file (a short count, then io.EOF).
func TestReadAtPageCacheFirst(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "segment")
	want := make([]byte, 3<<20+123)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	f, err := Create(OS{}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	of, ok := AsOSFile(f)
	if !ok {
		t.Fatal("an OS file has no descriptor")
	}
	check := func(name string, off, n int) {
		t.Helper()
		got := make([]byte, n)
		m, err := f.ReadAt(got, int64(off))
		end := min(off+n, len(want))
		if m != end-off || !bytes.Equal(got[:m], want[off:end]) {
			t.Fatalf("%s: ReadAt(%d bytes at %d) = %d bytes, want %d (bytes equal: %v)", name, n, off, m, end-off, bytes.Equal(got[:m], want[off:end]))
		}
		switch {
		case end-off < n && !errors.Is(err, io.EOF):
			t.Fatalf("%s: a read past the end: err %v, want io.EOF", name, err)
		case end-off == n && err != nil:
			t.Fatalf("%s: err %v", name, err)
		}
	}
	drop := func() {
		if err := unix.Fadvise(int(of.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ off, n int }{
		{0, 4096}, {0, 1 << 20}, {12345, 256 << 10}, {1<<20 + 1, 2 << 20}, {len(want) - 1000, 64 << 10}, {len(want), 32 << 10},
	} {
		check("cached", tc.off, tc.n)
		drop()
		check("not cached", tc.off, tc.n)
		// Half cached: the first half read back in, the rest dropped.
		drop()
		check("warm the first half", tc.off, tc.n/2)
		check("half cached", tc.off, tc.n)
	}
	if noWaitOff.Load() {
		t.Log("this kernel or file system refused RWF_NOWAIT: only the usual path was tested")
	}
}
