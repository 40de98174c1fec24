//go:build linux

package partlog

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/internal/vfs"
)

// residentFraction is vfs.Resident, failing the test on an error.
func residentFraction(t *testing.T, path string, off, n int64) float64 {
	t.Helper()
	r, err := vfs.Resident(path, off, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCacheWindowDropsOldBytes: with a 4 MiB window the active segment's
// older written bytes leave the page cache while the newest stay, every
// record reads back (from the disk where it was dropped), and after a
// kill -9 recovery finds every batch whole.
func TestCacheWindowDropsOldBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p0")
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(dir), &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs")
	}
	const window = 4 << 20
	cfg := Config{CacheWindow: window}
	l, err := Open(vfs.Default, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	appendTo := func(size int64) { want = fillActive(t, l, size, want) }
	appendTo(6 << 20)
	// Written back and clean: the window's later hints drop these pages
	// for certain (pages still being written would stay).
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendTo(12 << 20)
	seg := filepath.Join(dir, segmentName(0)+logSuffix)
	end := l.active().size.Load()
	if r := residentFraction(t, seg, end-window, window); r < 0.9 {
		t.Skipf("only %.0f%% of the newest window is cached: no page cache to test here", 100*r)
	}
	if r := residentFraction(t, seg, 2<<20, 4<<20); r > 0.1 {
		t.Errorf("%.0f%% of the bytes a window behind the end (written back) are still cached", 100*r)
	}
	if got := values(readAll(t, l, 0)); !slicesEqual(got, want) {
		t.Fatalf("read back %d values, want %d (or they differ)", len(got), len(want))
	}
	abandon(l) // as kill -9: nothing synced since the first 6 MiB
	l2 := mustOpen(t, vfs.Default, dir, cfg)
	if got := values(readAll(t, l2, 0)); !slicesEqual(got, want) {
		t.Fatalf("after recovery read back %d values, want %d (or they differ)", len(got), len(want))
	}
}

// fillActive appends 64 KiB single-record batches to l until its active
// segment holds size bytes, and returns want with their values added.
func fillActive(t *testing.T, l *Log, size int64, want []string) []string {
	t.Helper()
	for l.active().size.Load() < size {
		v := strings.Repeat(string(rune('a'+len(want)%26)), 64<<10)
		want = append(want, v)
		if _, err := l.Append(batch(t, 1, v)); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal([]byte(a[i]), []byte(b[i])) {
			return false
		}
	}
	return true
}
