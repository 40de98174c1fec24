package partlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// threeSegments writes 30 one-record batches over at least three segments,
// closes the log cleanly and returns the segment bases and the end.
func threeSegments(t *testing.T, fs vfs.FS, dir string) ([]record.Offset, record.Offset) {
	t.Helper()
	l, err := Open(fs, dir, Config{SegmentBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("v%02d-%s", i, strings.Repeat("x", 100))))
	}
	var bases []record.Offset
	for _, s := range l.segmentsSnapshot() {
		bases = append(bases, s.base)
	}
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(bases) < 3 {
		t.Fatalf("only %d segments", len(bases))
	}
	return bases, end
}

func fileSize(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestDamagedSealedSegmentOffline: a sealed segment cut mid-batch after a
// clean stop is damage, not a torn tail. The log opens offline: nothing is
// truncated or deleted, the end offset stays, appends and reads fail with
// ErrDamaged naming the file and position, and it stays so across restarts.
func TestDamagedSealedSegmentOffline(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		bases, end := threeSegments(t, fs, dir)
		victim := filepath.Join(dir, segmentName(bases[0])+logSuffix)
		cut := fileSize(t, fs, victim) - 40 // inside the last batch
		truncateFile(t, fs, victim, cut)
		sizes := map[string]int64{}
		for _, b := range bases {
			p := filepath.Join(dir, segmentName(b)+logSuffix)
			sizes[p] = fileSize(t, fs, p)
		}
		for round := range 2 {
			l, err := Open(fs, dir, Config{SegmentBytes: 1024})
			if err != nil {
				t.Fatalf("round %d: open: %v", round, err)
			}
			derr := l.Damaged()
			if !errors.Is(derr, ErrDamaged) || !strings.Contains(derr.Error(), segmentName(bases[0])+logSuffix) {
				t.Fatalf("round %d: Damaged() = %v", round, derr)
			}
			if l.LogEndOffset() != end {
				t.Fatalf("round %d: end offset %d, want %d (offsets would be reused)", round, l.LogEndOffset(), end)
			}
			if _, err := l.Append(batch(t, 1, "new")); !errors.Is(err, ErrDamaged) {
				t.Fatalf("append on a damaged log: %v", err)
			}
			if _, err := l.Read(bases[1], 1<<20); !errors.Is(err, ErrDamaged) {
				t.Fatalf("read on a damaged log: %v", err)
			}
			if !errors.Is(l.Failed(), ErrDamaged) {
				t.Fatalf("Failed() = %v", l.Failed())
			}
			if err := l.Close(); err != nil {
				t.Fatalf("close of a damaged log: %v", err)
			}
			for p, size := range sizes {
				if got := fileSize(t, fs, p); got != size {
					t.Fatalf("round %d: %s changed size %d → %d", round, p, size, got)
				}
			}
		}
	})
}

// TestDamageRepairProcedure follows docs/OPERATIONS.md: truncate the named
// file at the named position, delete its indexes, restart. The damaged
// batch becomes an offset gap; every later segment and offset is kept and
// the log continues at its old end.
func TestDamageRepairProcedure(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		bases, end := threeSegments(t, fs, dir)
		victim := filepath.Join(dir, segmentName(bases[0])+logSuffix)
		truncateFile(t, fs, victim, fileSize(t, fs, victim)-40)
		l, err := Open(fs, dir, Config{SegmentBytes: 1024})
		if err != nil {
			t.Fatal(err)
		}
		var c *CorruptionError
		if !errors.As(l.Damaged(), &c) {
			t.Fatalf("not damaged: %v", l.Damaged())
		}
		l.Close()
		// The operator's repair.
		truncateFile(t, fs, filepath.Join(dir, c.File), c.Pos)
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := fs.Remove(filepath.Join(dir, segmentName(bases[0])+suf)); err != nil {
				t.Fatal(err)
			}
		}
		l = mustOpen(t, fs, dir, Config{SegmentBytes: 1024})
		if err := l.Damaged(); err != nil {
			t.Fatalf("still damaged after repair: %v", err)
		}
		if l.LogEndOffset() != end {
			t.Fatalf("end %d after repair, want %d", l.LogEndOffset(), end)
		}
		got := offsets(readAll(t, l, 0))
		if len(got) != int(end)-1 || got[len(got)-1] != end-1 {
			t.Fatalf("after repair read %d records ending at %v; want all but the damaged one, ending at %d", len(got), got[len(got)-1:], end-1)
		}
		if o := mustAppend(t, l, batch(t, 1, "next")); o != end {
			t.Fatalf("append after repair at %d, want %d", o, end)
		}
	})
}

func truncateFile(t *testing.T, fs vfs.FS, path string, size int64) {
	t.Helper()
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
