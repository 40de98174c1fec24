package compact

import (
	"bytes"
	"fmt"
	"maps"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestCleanedLogFoldsToView is the property: for random keyed logs,
// consuming the cleaned log from its start and folding it gives exactly View
// of the log before cleaning. Along the way: offsets never change (every
// surviving record is the original at its offset), the end offset stays, the
// active segment is untouched, and after a clean the cleaned range holds each
// key at most once. Cleans interleave with appends and rolls, and the clock
// jumps past delete horizons, and the offset map may be too small to hold a
// whole dirty range.
func TestCleanedLogFoldsToView(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		fs := vfs.NewMem()
		c := newClock()
		segBytes := rapid.Int64Range(200, 2000).Draw(t, "segmentBytes")
		l := openLog(t, fs, "/p", c, segBytes)
		defer l.Close()
		p := policy()
		p.SegmentBytes = rapid.Int64Range(100, 4000).Draw(t, "cleanSegmentBytes")
		p.MinDirtyRatio = rapid.Float64Range(0, 1).Draw(t, "ratio")
		cl := &Cleaner{FS: fs, Now: c.Now}
		// Offset maps too small for the dirty range: a clean stops early
		// (MapBytes 1 maps one segment at a time).
		cl.MapBytes = rapid.SampledFrom([]int64{0, 1, 200, 600}).Draw(t, "mapBytes")

		all := map[record.Offset]record.Record{} // every record ever appended
		var order []record.Record
		keys := rapid.IntRange(1, 8).Draw(t, "keys")
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			case 1:
				if _, err := cl.Clean(l, p); err != nil {
					t.Fatal(err)
				}
				checkCleaned(t, l, fs, all)
			case 2:
				c.Advance(time.Duration(rapid.IntRange(0, 90).Draw(t, "minutes")) * time.Minute)
			default:
				n := rapid.IntRange(1, 4).Draw(t, "records")
				kvs := make([]kv, n)
				for i := range kvs {
					k := rapid.IntRange(0, keys).Draw(t, "key")
					kvs[i].key = fmt.Appendf(nil, "k%d", k)
					if k == keys { // rarely: keyless
						kvs[i].key = nil
					}
					if rapid.IntRange(0, 4).Draw(t, "tombstone") > 0 {
						kvs[i].value = fmt.Appendf(nil, "v%d", len(order)+i)
					}
				}
				codec := rapid.SampledFrom([]record.Codec{record.CodecNone, record.CodecSnappy}).Draw(t, "codec")
				pid := rapid.Int64Range(-1, 2).Draw(t, "pid")
				base := appendBatch(t, l, c.Now().UnixMilli(), pid, int32(len(order)), codec, kvs...)
				for i, r := range kvs {
					rr := record.Record{Offset: base + record.Offset(i), Key: r.key, Value: r.value}
					all[rr.Offset] = rr
					order = append(order, rr)
				}
			}
		}
		end := l.LogEndOffset()
		if _, err := cl.Clean(l, p); err != nil {
			t.Fatal(err)
		}
		checkCleaned(t, l, fs, all)
		want := View(order)
		_, rs := readAll(t, l)
		if got := View(rs); !maps.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("folded cleaned log %v, want View %v", got, want)
		}
		if l.LogEndOffset() != end {
			t.Fatalf("end offset %d, was %d", l.LogEndOffset(), end)
		}
	})
}

// checkCleaned checks what holds after any clean: survivors are originals at
// their offsets, the active segment is whole, and the cleaned range has each
// key once.
func checkCleaned(t *rapid.T, lg *partlog.Log, fs vfs.FS, all map[record.Offset]record.Record) {
	t.Helper()
	_, rs := readAll(t, lg)
	ck, err := readCheckpoint(fs, lg.Dir())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		o, ok := all[r.Offset]
		if !ok || !bytes.Equal(o.Key, r.Key) || !bytes.Equal(o.Value, r.Value) || (o.Value == nil) != (r.Value == nil) {
			t.Fatalf("record at offset %d is %q=%q, was %q=%q", r.Offset, r.Key, r.Value, o.Key, o.Value)
		}
		if r.Offset < ck.dirty {
			if seen[string(r.Key)] {
				t.Fatalf("key %q twice below the checkpoint %d", r.Key, ck.dirty)
			}
			seen[string(r.Key)] = true
		}
	}
	sealed := lg.SealedSegments()
	activeBase := record.Offset(0)
	if len(sealed) > 0 {
		activeBase = sealed[len(sealed)-1].Next
	}
	for o := max(activeBase, lg.LogStartOffset()); o < lg.LogEndOffset(); o++ {
		found := false
		for _, r := range rs {
			found = found || r.Offset == o
		}
		if !found {
			t.Fatalf("offset %d of the active segment was removed", o)
		}
	}
}
