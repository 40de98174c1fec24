package partlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestReadSpanMatchesReadInto: for any log (batches of random sizes across
// segments, any index interval) and any read (start offset, byte budget,
// limit), the bytes a Span names are exactly what ReadInto returns, and its
// First and Last are the first and last offsets of those batches.
func TestReadSpanMatchesReadInto(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		l, err := Open(vfs.Default, dir+"/p0", Config{
			SegmentBytes:       int64(rapid.IntRange(8000, 40000).Draw(rt, "segmentBytes")),
			IndexIntervalBytes: int64(rapid.IntRange(1, 5000).Draw(rt, "indexInterval")),
			RetentionRecords:   -1,
		})
		if err != nil {
			rt.Fatal(err)
		}
		defer l.Close()
		for i, n := 0, rapid.IntRange(1, 60).Draw(rt, "batches"); i < n; i++ {
			vals := make([]string, rapid.IntRange(1, 8).Draw(rt, "records"))
			for j := range vals {
				vals[j] = strings.Repeat("v", rapid.IntRange(0, 900).Draw(rt, "size"))
			}
			if _, err := l.Append(batch(rt, 1, vals...)); err != nil {
				rt.Fatal(err)
			}
		}
		end := l.LogEndOffset()
		for range 20 {
			from := record.Offset(rapid.Int64Range(0, int64(end)).Draw(rt, "from"))
			limit := record.Offset(rapid.Int64Range(0, int64(end)).Draw(rt, "limit"))
			maxBytes := rapid.IntRange(0, 30000).Draw(rt, "maxBytes")
			checkSpan(rt, l, from, maxBytes, limit)
		}
	})
}

func checkSpan(t tb, l *Log, from record.Offset, maxBytes int, limit record.Offset) {
	t.Helper()
	want, werr := l.ReadInto(nil, from, maxBytes, limit)
	sp, err := l.ReadSpan(from, maxBytes, limit)
	if (err == nil) != (werr == nil) {
		t.Fatalf("from %d max %d limit %d: ReadSpan error %v, ReadInto error %v", from, maxBytes, limit, err, werr)
	}
	if sp.File == nil {
		if len(want) != 0 || sp.Len != 0 {
			t.Fatalf("from %d max %d limit %d: no span, ReadInto read %d bytes", from, maxBytes, limit, len(want))
		}
		return
	}
	defer sp.File.Close()
	got := make([]byte, sp.Len)
	if _, err := sp.File.ReadAt(got, sp.Pos); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("from %d max %d limit %d: span at %d holds %d bytes, ReadInto %d, different", from, maxBytes, limit, sp.Pos, len(got), len(want))
	}
	var first, last record.Offset = -1, -1
	for sc := record.Batches(want); sc.Next(); {
		h := sc.Header()
		if first < 0 {
			first = h.BaseOffset
		}
		last = h.LastOffset()
	}
	if sp.First != first || sp.Last != last {
		t.Fatalf("from %d max %d limit %d: span offsets %d–%d, batches hold %d–%d", from, maxBytes, limit, sp.First, sp.Last, first, last)
	}
}

// TestReadSpanOutlivesSegment: a span's descriptor is the caller's, so
// its bytes stay readable after the segment is deleted (retention, here
// DeleteRecords) and the log closed — a response still being sent is not
// cut short or handed another file's bytes.
func TestReadSpanOutlivesSegment(t *testing.T) {
	l := mustOpen(t, vfs.Default, t.TempDir()+"/p0", Config{SegmentBytes: 1000, RetentionRecords: -1})
	for i := range 10 {
		mustAppend(t, l, batch(t, 1, fmt.Sprintf("%03d%s", i, strings.Repeat("x", 300))))
	}
	want, err := l.ReadInto(nil, 0, 1<<20, l.HighWatermark())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := l.ReadSpan(0, 1<<20, l.HighWatermark())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.File.Close()
	if _, err := l.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, sp.Len)
	if _, err := sp.File.ReadAt(got, sp.Pos); err != nil {
		t.Fatalf("reading a span after its segment was deleted: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("a span's bytes changed after its segment was deleted")
	}
}

// TestReadSpanNoDescriptor: a log on a file system with no descriptors
// (MemFS) answers vfs.ErrNoDescriptor, so a server falls back to reading.
func TestReadSpanNoDescriptor(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), "/p0", Config{})
	defer l.Close()
	mustAppend(t, l, batch(t, 1, "a"))
	if _, err := l.ReadSpan(0, 1<<20, 1); !errors.Is(err, vfs.ErrNoDescriptor) {
		t.Fatalf("ReadSpan on MemFS: %v, want vfs.ErrNoDescriptor", err)
	}
}
