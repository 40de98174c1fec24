package partlog

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func TestAppendAssignsConsecutiveOffsets(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		for i, want := range []record.Offset{0, 3, 4, 6} {
			n := []int{3, 1, 2, 1}[i]
			vals := make([]string, n)
			for j := range vals {
				vals[j] = fmt.Sprintf("v%d-%d", i, j)
			}
			if got := mustAppend(t, l, batch(t, 1000, vals...)); got != want {
				t.Fatalf("batch %d: base offset %d, want %d", i, got, want)
			}
		}
		if l.LogEndOffset() != 7 || l.HighWatermark() != 7 || l.LogStartOffset() != 0 {
			t.Fatalf("start/hwm/end = %d/%d/%d, want 0/7/7", l.LogStartOffset(), l.HighWatermark(), l.LogEndOffset())
		}
		got := readAll(t, l, 0)
		if want := []record.Offset{0, 1, 2, 3, 4, 5, 6}; !slices.Equal(offsets(got), want) {
			t.Fatalf("offsets %v, want %v", offsets(got), want)
		}
		// Reading from the middle of a batch returns the whole batch.
		data, err := l.Read(1, 1)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseHeader(data)
		if h.BaseOffset != 0 || h.Size() != len(data) {
			t.Fatalf("read(1) gave batch at %d of %d bytes (len %d), want batch 0 whole", h.BaseOffset, h.Size(), len(data))
		}
	})
}

// The seed's test_retention_by_count_advances_start_offset: offsets never renumber.
func TestSeedRetentionByCount(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{RetentionRecords: 4})
		for i := range 10 {
			mustAppend(t, l, batch(t, 1000, fmt.Sprintf("v%d", i)))
		}
		if l.LogStartOffset() != 6 || l.LogEndOffset() != 10 {
			t.Fatalf("start/end = %d/%d, want 6/10", l.LogStartOffset(), l.LogEndOffset())
		}
		got := readAll(t, l, 6)
		if want := []string{"v6", "v7", "v8", "v9"}; !slices.Equal(values(got), want) {
			t.Fatalf("values %v, want %v", values(got), want)
		}
		if want := []record.Offset{6, 7, 8, 9}; !slices.Equal(offsets(got), want) {
			t.Fatalf("offsets %v, want %v", offsets(got), want)
		}
		_, err := l.Read(5, 1<<20)
		var oor *OutOfRangeError
		if !errors.As(err, &oor) || oor.Start != 6 || oor.End != 10 {
			t.Fatalf("read(5) = %v, want out of range [6, 10]", err)
		}
		// The start offset survives a restart.
		l.Close()
		l = mustOpen(t, fs, dir, Config{RetentionRecords: 4})
		if l.LogStartOffset() != 6 || l.LogEndOffset() != 10 {
			t.Fatalf("after reopen start/end = %d/%d, want 6/10", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func TestRetentionByTimeNeverRenumbers(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		clk := &clock{now: time.UnixMilli(1_000_000)}
		cfg := Config{RetentionTime: time.Hour, SegmentBytes: 200, Now: clk.Now}
		l := mustOpen(t, fs, dir, cfg)
		// Old records, one per segment (each batch exceeds half a segment).
		for i := range 5 {
			mustAppend(t, l, batch(t, clk.now.UnixMilli(), fmt.Sprintf("old-%03d-%s", i, pad(80))))
		}
		clk.Advance(2 * time.Hour)
		for i := range 3 {
			mustAppend(t, l, batch(t, clk.now.UnixMilli(), fmt.Sprintf("new-%03d-%s", i, pad(80))))
		}
		n, err := l.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		if n != 5 || l.LogStartOffset() != 5 || l.LogEndOffset() != 8 {
			t.Fatalf("deleted %d segments, start/end %d/%d; want 5, 5/8", n, l.LogStartOffset(), l.LogEndOffset())
		}
		if got := offsets(readAll(t, l, 5)); !slices.Equal(got, []record.Offset{5, 6, 7}) {
			t.Fatalf("offsets after retention %v", got)
		}
		// Everything expires: the log empties, but offsets keep climbing.
		clk.Advance(2 * time.Hour)
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 8 || l.LogEndOffset() != 8 || l.Size() != 0 {
			t.Fatalf("emptied log start/end/size = %d/%d/%d, want 8/8/0", l.LogStartOffset(), l.LogEndOffset(), l.Size())
		}
		if got := mustAppend(t, l, batch(t, clk.now.UnixMilli(), "after")); got != 8 {
			t.Fatalf("append after emptying got offset %d, want 8", got)
		}
		l.Close()
		l = mustOpen(t, fs, dir, cfg)
		if l.LogStartOffset() != 8 || l.LogEndOffset() != 9 {
			t.Fatalf("reopened start/end %d/%d, want 8/9", l.LogStartOffset(), l.LogEndOffset())
		}
	})
}

func pad(n int) string { return string(make([]byte, n)) }

func TestRetentionBySize(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 300, RetentionBytes: 700, RetentionTime: -1})
		for i := range 12 {
			mustAppend(t, l, batch(t, 1, fmt.Sprintf("%02d%s", i, pad(100))))
		}
		before := l.Size()
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		// Kafka's rule: delete the oldest segment while the log stays at or
		// above retention.bytes without it.
		first := l.segmentsSnapshot()[0].size.Load()
		if l.Size()-first >= 700 || l.Size() < 700 || l.Size() == before {
			t.Fatalf("size %d (before %d, first segment %d): retention.bytes 700 misapplied", l.Size(), before, first)
		}
		if l.LogEndOffset() != 12 {
			t.Fatalf("end %d, want 12", l.LogEndOffset())
		}
		got := readAll(t, l, l.LogStartOffset())
		if got[len(got)-1].Offset != 11 || got[0].Offset != l.LogStartOffset() {
			t.Fatalf("visible offsets %v with start %d", offsets(got), l.LogStartOffset())
		}
	})
}

func TestSegmentRollBySizeAndTime(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		clk := &clock{now: time.UnixMilli(1_000_000)}
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 1000, SegmentTime: time.Minute, Now: clk.Now})
		for range 3 {
			mustAppend(t, l, batch(t, 1, pad(400)))
		}
		if n := len(l.segmentsSnapshot()); n != 2 {
			t.Fatalf("after 3×~470 bytes with segment.bytes 1000: %d segments, want 2", n)
		}
		clk.Advance(2 * time.Minute)
		mustAppend(t, l, batch(t, 1, "x"))
		segs := l.segmentsSnapshot()
		if len(segs) != 3 || segs[2].base != 3 {
			t.Fatalf("segment.ms did not roll: %d segments", len(segs))
		}
		names, _ := fs.ReadDir(dir)
		for _, want := range []string{"00000000000000000000.log", "00000000000000000002.index", "00000000000000000003.timeindex"} {
			if !slices.Contains(names, want) {
				t.Fatalf("missing %s in %v", want, names)
			}
		}
	})
}

func TestReadLimits(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		l.SetHighWatermark(0) // manual mode: replication drives it
		var sizes []int
		for i := range 5 {
			b := batch(t, 1, fmt.Sprintf("%d%s", i, pad(100*(i+1))))
			sizes = append(sizes, len(b))
			mustAppend(t, l, b)
		}
		if data, err := l.Read(0, 100); data != nil || err != nil {
			t.Fatalf("read below a zero hwm returned %d bytes, %v", len(data), err)
		}
		l.SetHighWatermark(2)
		if got := offsets(readAll(t, l, 0)); !slices.Equal(got, []record.Offset{0, 1}) {
			t.Fatalf("visible below hwm 2: %v", got)
		}
		l.SetHighWatermark(5)
		// A batch larger than maxBytes still comes back alone.
		data, err := l.Read(4, 10)
		if err != nil || len(data) != sizes[4] {
			t.Fatalf("read(4, 10): %d bytes, %v; want the whole %d-byte batch", len(data), err, sizes[4])
		}
		// maxBytes cuts at a batch boundary.
		data, _ = l.Read(0, sizes[0]+sizes[1]+sizes[2]-1)
		if len(data) != sizes[0]+sizes[1] {
			t.Fatalf("read(0) gave %d bytes, want %d", len(data), sizes[0]+sizes[1])
		}
		// At the end: nothing, no error. Past it: out of range.
		if data, err := l.Read(5, 100); data != nil || err != nil {
			t.Fatalf("read(end) = %d bytes, %v", len(data), err)
		}
		if _, err := l.Read(6, 100); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read(end+1) err = %v", err)
		}
		mustAppend(t, l, batch(t, 1, "more"))
		if l.HighWatermark() != 5 || l.LogEndOffset() != 6 {
			t.Fatalf("manual hwm moved with append: hwm %d end %d", l.HighWatermark(), l.LogEndOffset())
		}
		l.SetHighWatermark(100)
		if l.HighWatermark() != 6 {
			t.Fatalf("hwm %d, want clamped to end 6", l.HighWatermark())
		}
	})
}

func TestWaitWakesOnAppend(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		ch := l.Wait()
		select {
		case <-ch:
			t.Fatal("woke before any append")
		default:
		}
		go l.Append(batch(t, 1, "x"))
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("not woken by append")
		}
		// Appends that nobody waits for keep no channel closed for the
		// next waiter: its channel closes at the first append after it.
		for range 3 {
			mustAppend(t, l, batch(t, 1, "y"))
		}
		ch = l.Wait()
		select {
		case <-ch:
			t.Fatal("a Wait after the appends returned a closed channel")
		default:
		}
		mustAppend(t, l, batch(t, 1, "z"))
		select {
		case <-ch:
		default:
			t.Fatal("not woken by the append after Wait")
		}
	})
}

func TestOffsetForTimestamp(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 400})
		// Timestamps 100, 200, ..., 1000; one record per batch, several segments.
		for i := 1; i <= 10; i++ {
			mustAppend(t, l, batch(t, int64(i*100), pad(100)))
		}
		cases := []struct {
			ts     int64
			off    record.Offset
			wantTS int64
		}{{0, 0, 100}, {100, 0, 100}, {101, 1, 200}, {550, 5, 600}, {1000, 9, 1000}, {1001, record.NoOffset, -1}}
		for _, c := range cases {
			o, ts, err := l.OffsetForTimestamp(c.ts)
			if err != nil || o != c.off || ts != c.wantTS {
				t.Errorf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d", c.ts, o, ts, err, c.off, c.wantTS)
			}
		}
		ts, o, err := l.MaxTimestamp()
		if err != nil || ts != 1000 || o != 9 {
			t.Fatalf("MaxTimestamp = %d at %d, %v; want 1000 at 9", ts, o, err)
		}
		// A record in the middle of a batch.
		recs := []record.Record{{Offset: 0, Timestamp: 2000}, {Offset: 1, Timestamp: 2500}, {Offset: 2, Timestamp: 2100}}
		b, err := record.Encode(0, recs, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, b)
		if o, ts, _ := l.OffsetForTimestamp(2200); o != 11 || ts != 2500 {
			t.Fatalf("OffsetForTimestamp(2200) = %d, %d; want 11, 2500", o, ts)
		}
		if ts, o, _ := l.MaxTimestamp(); ts != 2500 || o != 11 {
			t.Fatalf("MaxTimestamp = %d at %d; want 2500 at 11", ts, o)
		}
		// Survives reopen (time index reloaded, not rebuilt).
		l.Close()
		l = mustOpen(t, fs, dir, Config{SegmentBytes: 400})
		if o, _, _ := l.OffsetForTimestamp(550); o != 5 {
			t.Fatalf("after reopen OffsetForTimestamp(550) = %d", o)
		}
	})
}

func TestDeleteRecordsBefore(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 300})
		for i := range 10 {
			mustAppend(t, l, batch(t, 1, fmt.Sprintf("%d%s", i, pad(100))))
		}
		if _, err := l.DeleteRecordsBefore(11); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("delete past hwm: %v", err)
		}
		start, err := l.DeleteRecordsBefore(7)
		if err != nil || start != 7 {
			t.Fatalf("DeleteRecordsBefore(7) = %d, %v", start, err)
		}
		if start, _ := l.DeleteRecordsBefore(3); start != 7 {
			t.Fatalf("start moved backwards to %d", start)
		}
		if got := offsets(readAll(t, l, 7)); !slices.Equal(got, []record.Offset{7, 8, 9}) {
			t.Fatalf("visible %v", got)
		}
		if segs := l.segmentsSnapshot(); segs[0].base > 7 || record.Offset(segs[0].next.Load()) <= 7 {
			t.Fatalf("first segment [%d, %d) should hold offset 7", segs[0].base, segs[0].next.Load())
		}
		l.Close()
		l = mustOpen(t, fs, dir, Config{SegmentBytes: 300})
		if l.LogStartOffset() != 7 {
			t.Fatalf("start after reopen %d, want 7", l.LogStartOffset())
		}
	})
}

func TestTruncateTo(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 300})
		l.AssignEpoch(1)
		for i := range 4 {
			mustAppend(t, l, batch(t, 1, fmt.Sprintf("a%d%s", i, pad(100))))
		}
		l.AssignEpoch(3)
		mustAppend(t, l, batch(t, 1, "b0", "b1", "b2")) // offsets 4..6
		mustAppend(t, l, batch(t, 1, "c0"))             // offset 7
		if e, o := l.EndOffsetForEpoch(1); e != 1 || o != 4 {
			t.Fatalf("EndOffsetForEpoch(1) = %d, %d; want 1, 4", e, o)
		}
		if e, o := l.EndOffsetForEpoch(2); e != 1 || o != 4 {
			t.Fatalf("EndOffsetForEpoch(2) = %d, %d; want 1, 4", e, o)
		}
		if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 8 {
			t.Fatalf("EndOffsetForEpoch(3) = %d, %d; want 3, 8", e, o)
		}
		// Truncating into the middle of a batch drops the whole batch.
		if err := l.TruncateTo(5); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 4 || l.HighWatermark() != 4 {
			t.Fatalf("end/hwm after TruncateTo(5) = %d/%d, want 4/4", l.LogEndOffset(), l.HighWatermark())
		}
		if e, o := l.EndOffsetForEpoch(3); e != record.NoEpoch || o != record.NoOffset {
			t.Fatalf("epoch 3 should be gone (above the latest: unknown): EndOffsetForEpoch(3) = %d, %d", e, o)
		}
		if err := l.TruncateTo(1); err != nil {
			t.Fatal(err)
		}
		if got := values(readAll(t, l, 0)); len(got) != 1 || got[0][:2] != "a0" {
			t.Fatalf("after TruncateTo(1): %q", got)
		}
		if got := mustAppend(t, l, batch(t, 1, "d")); got != 1 {
			t.Fatalf("append after truncate got %d, want 1", got)
		}
		l.Close()
		l = mustOpen(t, fs, dir, Config{SegmentBytes: 300})
		if got := offsets(readAll(t, l, 0)); !slices.Equal(got, []record.Offset{0, 1}) {
			t.Fatalf("after reopen %v", got)
		}
	})
}

func TestBadCRCRejected(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		b := batch(t, 1, "hello")
		b[len(b)-1] ^= 0xff
		if _, err := l.Append(b); !errors.Is(err, record.ErrCRC) {
			t.Fatalf("append with bad crc: %v", err)
		}
		if l.LogEndOffset() != 0 {
			t.Fatal("bad batch advanced the end offset")
		}
	})
}

func TestReopenAfterCleanClose(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{SegmentBytes: 1000, IndexIntervalBytes: 100}
		l := mustOpen(t, fs, dir, cfg)
		for i := range 50 {
			mustAppend(t, l, batch(t, int64(i), fmt.Sprintf("v%02d", i), "x"))
		}
		want := readAll(t, l, 0)
		l.Close()
		l = mustOpen(t, fs, dir, cfg)
		got := readAll(t, l, 0)
		if !slices.Equal(values(got), values(want)) || !slices.Equal(offsets(got), offsets(want)) {
			t.Fatalf("reopen changed contents")
		}
		if got := mustAppend(t, l, batch(t, 1, "next")); got != 100 {
			t.Fatalf("next offset %d, want 100", got)
		}
	})
}

func TestReadIntoReusesBuffer(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		want := batch(t, 1, "a", "b")
		mustAppend(t, l, want)
		buf := make([]byte, 0, 4096)
		got, err := l.ReadInto(buf, 0, 4096, l.HighWatermark())
		if err != nil || len(got) != len(want) || &got[0] != &buf[:1][0] {
			t.Fatalf("ReadInto: %d bytes, %v, aliases buf: %v", len(got), err, len(got) > 0 && &got[0] == &buf[:1][0])
		}
		small, err := l.ReadInto(make([]byte, 0, 8), 0, 4096, l.HighWatermark())
		if err != nil || len(small) != len(want) {
			t.Fatalf("ReadInto with a small buffer: %d bytes, %v", len(small), err)
		}
	})
}

func TestAssignEpochRecordsStart(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		mustAppend(t, l, batch(t, 1, "a", "b"))
		if err := l.AssignEpoch(4); err != nil {
			t.Fatal(err)
		}
		// Known before any append in the epoch, as after a Kafka election.
		if e, o := l.EndOffsetForEpoch(4); e != 4 || o != 2 {
			t.Fatalf("EndOffsetForEpoch(4) = %d, %d; want 4, 2", e, o)
		}
		l.Close()
		select {
		case <-l.Wait():
		default:
			t.Fatal("Wait after Close returned an open channel")
		}
	})
}

// TestTruncateToExcludesReaders: readers racing TruncateTo never meet a
// half-cut segment (which they would take for damage), and a long poll
// waiting on the log wakes when the end moves back.
func TestTruncateToExcludesReaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 600})
		for i := range 60 {
			mustAppend(t, l, batch(t, 1, fmt.Sprintf("v%02d%s", i, pad(40))))
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					from := record.Offset((i*7 + r) % 60)
					if _, err := l.Read(from, 1<<10); err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
						errs <- err
						return
					}
				}
			}()
		}
		for round := range 30 {
			woken := l.Wait()
			if err := l.TruncateTo(record.Offset(30 + round%20)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-woken:
			default:
				t.Fatal("TruncateTo did not wake waiters")
			}
			for l.LogEndOffset() < 60 {
				mustAppend(t, l, batch(t, 1, fmt.Sprintf("r%02d%s", round, pad(40))))
			}
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("a reader racing TruncateTo: %v", err)
		}
		if err := l.Damaged(); err != nil {
			t.Fatalf("truncation took the log offline: %v", err)
		}
	})
}

// TestRetentionStopsAtHighWatermark: retention by size and by count, and
// the cleaner's list of sealed segments, never pass the high watermark —
// a record not yet committed is never deleted before it could be read.
func TestRetentionStopsAtHighWatermark(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{SegmentBytes: 300, RetentionBytes: 1, RetentionRecords: 5})
		l.SetHighWatermark(0) // a leader whose followers have nothing yet
		for i := range 20 {
			mustAppend(t, l, batch(t, 1, fmt.Sprintf("v%02d%s", i, pad(60))))
		}
		if n, err := l.ApplyRetention(); err != nil || n != 0 || l.LogStartOffset() != 0 {
			t.Fatalf("retention above the high watermark: deleted %d, start %d, %v", n, l.LogStartOffset(), err)
		}
		if got := l.SealedSegments(); len(got) != 0 {
			t.Fatalf("the cleaner is offered %d segments above the high watermark", len(got))
		}
		l.SetHighWatermark(8)
		mustAppend(t, l, batch(t, 1, "more")) // count retention runs on append
		if start := l.LogStartOffset(); start > 8 {
			t.Fatalf("count retention moved the start to %d, past the high watermark 8", start)
		}
		if _, err := l.ApplyRetention(); err != nil {
			t.Fatal(err)
		}
		for _, s := range l.SealedSegments() {
			if s.Next > 8 {
				t.Fatalf("the cleaner is offered segment [%d, %d) past the high watermark 8", s.Base, s.Next)
			}
		}
		if start := l.LogStartOffset(); start != 8 {
			t.Fatalf("log start %d: count retention should reach the high watermark 8 and stop", start)
		}
		if got := values(readAll(t, l, 8)); len(got) != 0 {
			t.Fatalf("read past the high watermark: %q", got)
		}
	})
}

// TestTruncateKeepsIndexesValid: a follower truncates into its active
// segment and appends again, over and over; the indexes on disk stay
// valid (no rebuild at the next open) and lookups by offset and by time
// still find the right batches.
func TestTruncateKeepsIndexesValid(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{IndexIntervalBytes: 1}
		l := mustOpen(t, fs, dir, cfg)
		ts := int64(1000)
		for round := range 20 {
			for range 10 {
				ts++
				mustAppend(t, l, batch(t, ts, pad(50)))
			}
			if round%3 == 2 { // sealed segments too
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.TruncateTo(l.LogEndOffset() - 4); err != nil {
				t.Fatal(err)
			}
			ts -= 2 // the re-appended batches carry timestamps the cut ones had
		}
		end := l.LogEndOffset()
		l.Close()
		var logs strings.Builder
		l = mustOpen(t, fs, dir, Config{IndexIntervalBytes: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if strings.Contains(logs.String(), "rebuilt") {
			t.Fatalf("indexes rebuilt at open after truncations:\n%s", logs.String())
		}
		if got := l.LogEndOffset(); got != end {
			t.Fatalf("end %d after reopen, want %d", got, end)
		}
		for o := record.Offset(0); o < end; o++ {
			b, err := l.Read(o, 1)
			if h, _ := record.ParseHeader(b); err != nil || h.BaseOffset != o {
				t.Fatalf("read at %d: base %d, %v", o, h.BaseOffset, err)
			}
		}
	})
}

// TestCrashRecoveryKeepsIndexesValid: recovery after a crash re-walks the
// active segment and indexes it again; the indexes must not then hold
// every entry twice (the next clean open found them "not increasing"
// and rebuilt them), and reads by offset must land on their batch.
func TestCrashRecoveryKeepsIndexesValid(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{IndexIntervalBytes: 1}
		l, err := Open(fs, dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts := int64(1000)
		appendSome := func(l *Log, n int) {
			for range n {
				ts++
				mustAppend(t, l, batch(t, ts, pad(50)))
			}
		}
		appendSome(l, 400) // more than one flush of index entries
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		abandon(l)
		l, err = Open(fs, dir, cfg) // unclean: verifies and re-indexes
		if err != nil {
			t.Fatal(err)
		}
		appendSome(l, 400)
		check := func(l *Log) {
			t.Helper()
			for o := record.Offset(0); o < l.LogEndOffset(); o++ {
				b, err := l.Read(o, 1)
				if h, _ := record.ParseHeader(b); err != nil || h.BaseOffset != o {
					t.Fatalf("read at %d: base %d, %v", o, h.BaseOffset, err)
				}
			}
		}
		check(l)
		l.Close()
		var logs strings.Builder
		l = mustOpen(t, fs, dir, Config{IndexIntervalBytes: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if strings.Contains(logs.String(), "rebuilt") {
			t.Fatalf("a clean open after crash recovery rebuilt indexes:\n%s", logs.String())
		}
		check(l)
	})
}
