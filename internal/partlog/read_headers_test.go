package partlog

import (
	"fmt"
	"slices"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestScanHeaders: from any offset, ScanHeaders yields the header of every
// batch holding offsets at or after it, across segments, in order, and
// nothing before the log start after retention.
func TestScanHeaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 600})
		defer l.Close()
		var bases []record.Offset
		for i := range 40 {
			vals := make([]string, 1+i%3)
			for j := range vals {
				vals[j] = fmt.Sprintf("v%d-%d", i, j)
			}
			bases = append(bases, mustAppend(t, l, batch(t, 1000, vals...)))
		}
		if l.ActiveBase() == 0 {
			t.Fatal("expected several segments")
		}
		end := l.LogEndOffset()
		for from := record.Offset(0); from <= end; from++ {
			var got []record.Offset
			if err := l.ScanHeaders(from, func(h record.Header) error {
				got = append(got, h.BaseOffset)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var want []record.Offset
			for i, b := range bases {
				last := end - 1
				if i+1 < len(bases) {
					last = bases[i+1] - 1
				}
				if last >= from {
					want = append(want, b)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("from %d: %v, want %v", from, got, want)
			}
		}
	})
}
