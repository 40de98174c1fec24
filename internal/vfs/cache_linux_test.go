//go:build linux

package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// resident is vfs.Resident, failing the test on an error.
func resident(t *testing.T, path string, off, n int64) float64 {
	t.Helper()
	r, err := Resident(path, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// skipIfNoPageCache skips where the temporary directory is not on a file
// system that drops clean pages on request (tmpfs keeps them: they are the
// file).
func skipIfNoPageCache(t *testing.T, dir string) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs")
	}
}

// TestCacheHintsDropWrittenPages writes a file through the OS and through
// the descriptor cache, writes it back, and checks that DropCache releases
// the range it names and nothing else, and that the bytes read back whole.
func TestCacheHintsDropWrittenPages(t *testing.T) {
	const size = 8 << 20
	data := bytes.Repeat([]byte("strand page cache "), size/18+1)[:size]
	for _, c := range []struct {
		name string
		fs   func() FS
	}{
		{"os", func() FS { return OS{} }},
		{"fdcache", func() FS { return NewFDCache(16).Wrap(OS{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			skipIfNoPageCache(t, dir)
			path := filepath.Join(dir, "seg.log")
			f, err := c.fs().OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(data); err != nil {
				t.Fatal(err)
			}
			Writeback(f, 0, size)
			if err := f.Sync(); err != nil { // clean pages drop; dirty ones would stay
				t.Fatal(err)
			}
			if r := resident(t, path, 0, size); r < 0.9 {
				t.Skipf("only %.0f%% of a just-written file is cached: no page cache to test", 100*r)
			}
			DropCache(f, 0, size/2)
			if r := resident(t, path, 0, size/2); r > 0.1 {
				t.Errorf("%.0f%% of the dropped half still cached", 100*r)
			}
			if r := resident(t, path, size/2, size/2); r < 0.9 {
				t.Errorf("only %.0f%% of the kept half cached", 100*r)
			}
			got := make([]byte, size)
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatal("the bytes read back differ from those written")
			}
		})
	}
}

// TestCacheHintsIgnoredWithoutDescriptor: a MemFS file takes the hints and
// keeps its bytes.
func TestCacheHintsIgnoredWithoutDescriptor(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	Writeback(f, 0, 3)
	DropCache(f, 0, 3)
	got := make([]byte, 3)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "abc" {
		t.Fatalf("read %q, %v", got, err)
	}
}
