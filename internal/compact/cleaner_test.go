package compact

import (
	"bytes"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func policy() Policy {
	p := DefaultPolicy()
	p.DeleteRetention = time.Hour
	p.SegmentBytes = 1 << 20
	return p
}

func show(rs []record.Record) []string {
	var out []string
	for _, r := range rs {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, v))
	}
	return out
}

// TestSeedScenario is the example on one log: k1=v1, k2=v2, k1=v3,
// k2=null; cleaning keeps k1=v3 and the tombstone at their offsets, and once
// delete.retention.ms has passed, only k1=v3.
func TestSeedScenario(t *testing.T) {
	t.Parallel()
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock()
		l := openLog(t, fs, dir, c, 1<<20)
		defer l.Close()
		ts := c.Now().UnixMilli()
		appendBatch(t, l, ts, 7, 0, record.CodecNone, rec("k1", "v1"))
		appendBatch(t, l, ts, 7, 1, record.CodecNone, rec("k2", "v2"))
		appendBatch(t, l, ts, 7, 2, record.CodecLZ4, rec("k1", "v3"))
		appendBatch(t, l, ts, 7, 3, record.CodecNone, rec("k2", "<nil>"))
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		cl := &Cleaner{FS: fs, Now: c.Now}
		st, err := cl.Clean(l, policy())
		if err != nil || !st.Cleaned {
			t.Fatalf("Clean = %+v, %v", st, err)
		}
		hs, rs := readAll(t, l)
		if got, want := fmt.Sprint(show(rs)), "[2:k1=v3 3:k2=<nil>]"; got != want {
			t.Fatalf("after clean: %s, want %s", got, want)
		}
		if hs[0].Compression() != record.CodecLZ4 || hs[0].ProducerID != 7 || hs[0].BaseSequence != 2 {
			t.Fatalf("kept batch lost its codec or producer: %+v", hs[0])
		}
		if hs[1].DeleteHorizon() != c.Now().Add(time.Hour).UnixMilli() {
			t.Fatalf("tombstone batch horizon %d", hs[1].DeleteHorizon())
		}
		if l.LogStartOffset() != 0 || l.LogEndOffset() != 4 {
			t.Fatalf("offsets moved: start %d end %d", l.LogStartOffset(), l.LogEndOffset())
		}

		// Not due again: nothing dirty, horizon not reached.
		if st, err := cl.Clean(l, policy()); err != nil || st.Cleaned {
			t.Fatalf("second Clean = %+v, %v", st, err)
		}
		c.Advance(time.Hour)
		if st, err := cl.Clean(l, policy()); err != nil || !st.Cleaned || st.TombstonesDropped != 1 {
			t.Fatalf("Clean after the horizon = %+v, %v", st, err)
		}
		hs, rs = readAll(t, l)
		if got, want := fmt.Sprint(show(rs)), "[2:k1=v3]"; got != want {
			t.Fatalf("after horizon: %s, want %s", got, want)
		}
		// The tombstone's batch was producer 7's last: it stays, empty, so
		// that the producer's sequence survives a rebuild from the log.
		if len(hs) != 2 || hs[1].NumRecords != 0 || hs[1].ProducerID != 7 || hs[1].BaseSequence != 3 || hs[1].LastOffset() != 3 {
			t.Fatalf("headers after horizon: %+v", hs)
		}
		if l.LogEndOffset() != 4 {
			t.Fatalf("end offset moved: %d", l.LogEndOffset())
		}
	})
}

// TestActiveSegmentUntouched: records in the active segment are never
// cleaned, and their keys do not supersede anything (they are not dirty yet).
func TestActiveSegmentUntouched(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	c := newClock()
	l := openLog(t, fs, "/p", c, 1<<20)
	defer l.Close()
	ts := c.Now().UnixMilli()
	appendBatch(t, l, ts, -1, 0, record.CodecNone, rec("a", "1"), rec("a", "2"))
	l.Roll()
	appendBatch(t, l, ts, -1, 0, record.CodecNone, rec("a", "3"), rec("a", "4"))
	cl := &Cleaner{FS: fs, Now: c.Now}
	if _, err := cl.Clean(l, policy()); err != nil {
		t.Fatal(err)
	}
	_, rs := readAll(t, l)
	if got, want := fmt.Sprint(show(rs)), "[1:a=2 2:a=3 3:a=4]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestDueRules: dirty ratio, min and max compaction lag.
func TestDueRules(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	seg := func(base, next record.Offset, size, ts int64) partlog.SegmentInfo {
		return partlog.SegmentInfo{Base: base, Next: next, Size: size, MaxTimestamp: ts}
	}
	now := int64(100 * day / time.Millisecond)
	old := now - int64(2*day/time.Millisecond)
	sealed := []partlog.SegmentInfo{seg(0, 10, 100, old), seg(10, 20, 100, old), seg(20, 30, 100, now)}
	for _, tc := range []struct {
		name     string
		ck       checkpoint
		p        Policy
		due      bool
		n        int
		firstDir int
		end      record.Offset
	}{
		{"all dirty", checkpoint{}, Policy{MinDirtyRatio: 0.5}, true, 3, 0, 30},
		{"ratio met", checkpoint{dirty: 10}, Policy{MinDirtyRatio: 0.5}, true, 3, 1, 30},
		{"ratio not met", checkpoint{dirty: 20}, Policy{MinDirtyRatio: 0.5}, false, 3, 2, 30},
		{"min lag holds back the young segment", checkpoint{dirty: 10}, Policy{MinDirtyRatio: 0.5, MinCompactionLag: day}, true, 2, 1, 20},
		{"min lag leaves too little", checkpoint{dirty: 10}, Policy{MinDirtyRatio: 0.6, MinCompactionLag: day}, false, 2, 1, 20},
		{"max lag forces", checkpoint{dirty: 10}, Policy{MinDirtyRatio: 0.9, MaxCompactionLag: day}, true, 3, 1, 30},
		{"max lag not reached", checkpoint{dirty: 10}, Policy{MinDirtyRatio: 0.9, MaxCompactionLag: 3 * day}, false, 3, 1, 30},
		{"horizon passed", checkpoint{dirty: 30, horizon: now}, Policy{MinDirtyRatio: 0.5}, true, 3, 3, 30},
		{"horizon ahead", checkpoint{dirty: 30, horizon: now + 1}, Policy{MinDirtyRatio: 0.5}, false, 3, 3, 30},
	} {
		pl := makePlan(sealed, tc.ck, tc.p, now)
		if pl.due != tc.due || len(pl.segs) != tc.n || pl.firstDirty != tc.firstDir || pl.end != tc.end {
			t.Errorf("%s: due %v segs %d firstDirty %d end %d; want %v %d %d %d",
				tc.name, pl.due, len(pl.segs), pl.firstDirty, pl.end, tc.due, tc.n, tc.firstDir, tc.end)
		}
	}
}

func TestGroupSegments(t *testing.T) {
	t.Parallel()
	var segs []partlog.SegmentInfo
	for i, size := range []int64{40, 40, 30, 90, 10, 100} {
		segs = append(segs, partlog.SegmentInfo{Base: record.Offset(i * 10), Next: record.Offset(i*10 + 10), Size: size})
	}
	var got []int
	for _, g := range groupSegments(segs, 100) {
		got = append(got, len(g))
	}
	if fmt.Sprint(got) != "[2 1 2 1]" {
		t.Fatalf("groups %v, want [2 1 2 1]", got)
	}
}

// TestCheckpointSurvivesReopen: the checkpoint is in the partition directory,
// so a reopened log is not recleaned from scratch.
func TestCheckpointSurvivesReopen(t *testing.T) {
	t.Parallel()
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		c := newClock()
		l := openLog(t, fs, dir, c, 1<<20)
		ts := c.Now().UnixMilli()
		for i := range 10 {
			appendBatch(t, l, ts, -1, 0, record.CodecNone, rec(fmt.Sprint("k", i%3), fmt.Sprint(i)))
		}
		l.Roll()
		cl := &Cleaner{FS: fs, Now: c.Now}
		if st, err := cl.Clean(l, policy()); err != nil || !st.Cleaned || st.Dirty != 10 {
			t.Fatalf("Clean = %+v, %v", st, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openLog(t, fs, dir, c, 1<<20)
		defer l.Close()
		if st, err := cl.Clean(l, policy()); err != nil || st.Cleaned {
			t.Fatalf("Clean after reopen = %+v, %v", st, err)
		}
		_, rs := readAll(t, l)
		if got, want := fmt.Sprint(show(rs)), "[7:k1=7 8:k2=8 9:k0=9]"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

// TestSmallOffsetMapCleansInSteps: with an offset map that holds about one
// segment's keys, a Clean covers a prefix of the dirty range and says so
// (MapFull); repeated Cleans finish it, and the result is the same table with
// every key once.
func TestSmallOffsetMapCleansInSteps(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	c := newClock()
	l := openLog(t, fs, "/p", c, 400)
	defer l.Close()
	var order []record.Record
	for round := range 3 {
		for k := range 30 {
			kvs := []kv{{key: fmt.Appendf(nil, "key-%02d", k), value: fmt.Appendf(nil, "v%d", round)}}
			base := appendBatch(t, l, c.Now().UnixMilli(), -1, 0, record.CodecNone, kvs...)
			order = append(order, record.Record{Offset: base, Key: kvs[0].key, Value: kvs[0].value})
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	cl := &Cleaner{FS: fs, Now: c.Now, MapBytes: 10 * (6 + keyOverhead)} // about ten keys
	p := policy()
	p.MinDirtyRatio = 0
	steps, full := 0, 0
	for ; steps < 100; steps++ {
		st, err := cl.Clean(l, p)
		if err != nil {
			t.Fatal(err)
		}
		if st.MapFull {
			full++
		}
		if st.Dirty == l.LogEndOffset() {
			break
		}
	}
	if full == 0 || steps == 0 {
		t.Fatalf("%d cleans, %d with a full map: the small map never cut a clean short", steps+1, full)
	}
	_, rs := readAll(t, l)
	seen := map[string]bool{}
	for _, r := range rs {
		if seen[string(r.Key)] {
			t.Fatalf("key %q twice after cleaning the whole log", r.Key)
		}
		seen[string(r.Key)] = true
	}
	if got, want := View(rs), View(order); !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("table %v, want %v", got, want)
	}
}
