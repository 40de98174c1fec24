//go:build linux

package partlog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/internal/vfs"
)

// diskBytes is what path occupies on the disk (its allocated blocks),
// which preallocation makes larger than its size.
func diskBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// canPreallocate says whether dir's file system reserves blocks past a
// file's end (tmpfs and ext4 do; some do not).
func canPreallocate(t *testing.T, dir string) bool {
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 1<<20) != nil {
		return false
	}
	return diskBytes(t, f.Name()) >= 1<<20
}

// TestPreallocateReservesAheadAndReleases: with preallocate on, the
// active segment holds its blocks a step past its end while its size is
// only its batches; sealing it gives the reserve back; the new active
// segment reserves its own; and after a kill -9 recovery finds every
// batch whole and no byte past them.
func TestPreallocateReservesAheadAndReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p0")
	if !canPreallocate(t, filepath.Dir(dir)) {
		t.Skip("the temporary directory's file system has no fallocate")
	}
	cfg := Config{Preallocate: true, SegmentBytes: 64 << 20}
	l, err := Open(vfs.Default, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	appendTo := func(size int64) { want = fillActive(t, l, size, want) }
	appendTo(3 << 20)
	first := filepath.Join(dir, segmentName(0)+logSuffix)
	size := l.active().size.Load()
	if got := diskBytes(t, first); got < size+PreallocateStep/2 {
		t.Errorf("the active segment holds %d bytes on disk for %d written: nothing reserved", got, size)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if got := diskBytes(t, first); got > size+64<<10 {
		t.Errorf("the sealed segment still holds %d bytes on disk for its %d: the reserve was not released", got, size)
	}
	appendTo(1 << 20)
	second := filepath.Join(dir, segmentName(l.active().base)+logSuffix)
	if got, size := diskBytes(t, second), l.active().size.Load(); got < size+PreallocateStep/2 {
		t.Errorf("the new active segment holds %d bytes on disk for %d written: nothing reserved", got, size)
	}
	abandon(l) // as kill -9, the reserve still in place
	l2 := mustOpen(t, vfs.Default, dir, cfg)
	if got := values(readAll(t, l2, 0)); !slicesEqual(got, want) {
		t.Fatalf("after recovery read back %d values, want %d (or they differ)", len(got), len(want))
	}
	if end := l2.active().size.Load(); end != l.active().size.Load() {
		t.Fatalf("after recovery the active segment is %d bytes, want %d: bytes past the batches were taken for data", end, l.active().size.Load())
	}
}

// Off, as by default, a segment holds on the disk about what it holds.
func TestPreallocateOffReservesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p0")
	l := mustOpen(t, vfs.Default, dir, Config{})
	for i := range 40 {
		if _, err := l.Append(batch(t, 1, strings.Repeat("x", 64<<10+i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	size := l.active().size.Load()
	if got := diskBytes(t, filepath.Join(dir, segmentName(0)+logSuffix)); got > size+1<<20 {
		t.Fatalf("the segment holds %d bytes on disk for %d written with preallocate off", got, size)
	}
}
