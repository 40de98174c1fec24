package tiered

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

var ctx = context.Background()

func mustClaim(t *testing.T, p *Partition, epoch record.Epoch) {
	t.Helper()
	if err := p.Claim(ctx, epoch); err != nil {
		t.Fatalf("claim at epoch %d: %v", epoch, err)
	}
}

// checkManifest fails unless the manifest's segments are contiguous, each
// recorded once, and end at end.
func checkManifest(t *testing.T, m *Manifest, end record.Offset) {
	t.Helper()
	for i := 1; i < len(m.Segments); i++ {
		if m.Segments[i].Start != m.Segments[i-1].Next {
			t.Fatalf("segments %d-%d and %d-%d are not contiguous", m.Segments[i-1].Start, m.Segments[i-1].Next, m.Segments[i].Start, m.Segments[i].Next)
		}
	}
	if m.End != end {
		t.Fatalf("manifest end %d, want %d", m.End, end)
	}
}

func TestUploadThenLocalRetentionThenReadFromZero(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 200)
	tr := newTier(t, s)
	p := tr.Partition("orders", "id1", 0, l)
	mustClaim(t, p, 0)

	// Local retention before anything is uploaded deletes nothing.
	cfg := partlog.Config{SegmentBytes: 1024, IndexIntervalBytes: 128, RetentionTime: -1, RetentionBytes: -1, LocalRetentionBytes: 1}
	l.SetConfig(cfg)
	l.SetTierGate(p.UploadedEnd)
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("retention before upload deleted %d segments (%v)", n, err)
	}

	n, err := p.Upload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sealed := l.SealedSegments()
	if n != len(sealed) || n < 5 {
		t.Fatalf("uploaded %d segments, %d sealed", n, len(sealed))
	}
	checkManifest(t, p.Manifest(), sealed[len(sealed)-1].Next)

	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != p.UploadedEnd() {
		t.Fatalf("local log start %d after local retention, want the uploaded end %d", l.LogStartOffset(), p.UploadedEnd())
	}
	if p.RemoteStart() != 0 {
		t.Fatalf("remote start %d, want 0", p.RemoteStart())
	}
	got := readBoth(t, p, l)
	if len(got) != 200 {
		t.Fatalf("read %d records from 0, want 200", len(got))
	}
	for i, r := range got {
		if r.Offset != record.Offset(i) || string(r.Value) != value(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
	if tr.Stats().CacheHits.Load() == 0 {
		t.Fatal("sequential remote reads never hit the chunk cache")
	}
	if b := tr.cache.bytes(); b > 64<<10 {
		t.Fatalf("chunk cache holds %d bytes, over its 64 KiB bound", b)
	}
}

func TestRemoteReadOutOfRange(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 50)
	p := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, p, 0)
	if _, err := p.Read(ctx, 0, 100); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read before any upload: %v, want ErrOutOfRange", err)
	}
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(ctx, p.UploadedEnd(), 100); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read at the uploaded end: %v, want ErrOutOfRange", err)
	}
}

// A crash after a window of segments' objects are put but before the
// manifest names them: the restarted uploader records each segment once,
// and the orphan objects are deleted.
func TestRestartMidUploadRecordsOnceAndCleansOrphans(t *testing.T) {
	s := startS3(t)
	f := &faulty{Store: s}
	l := openLog(t, tempDir(t))
	fill(t, l, 120)

	p1 := newTier(t, f).Partition("t", "id", 0, l)
	mustClaim(t, p1, 3)
	puts := 0
	f.setFail(func(op, key string) bool {
		if strings.Contains(key, "/manifest/") {
			puts++
			return puts > 1 // the second window's manifest write fails, every attempt
		}
		return false
	})
	if _, err := p1.Upload(ctx); err == nil {
		t.Fatal("upload succeeded with the manifest write failing")
	}
	f.setFail(func(string, string) bool { return false })
	window := cap(p1.t.sem)
	before := p1.Manifest()
	if len(before.Segments) != window {
		t.Fatalf("%d segments recorded before the failure, want the first window's %d", len(before.Segments), window)
	}

	// Restart: a new tier on the same store and log, same epoch.
	p2 := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, p2, 3)
	if _, err := p2.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	sealed := l.SealedSegments()
	m := p2.Manifest()
	checkManifest(t, m, sealed[len(sealed)-1].Next)
	if len(m.Segments) != len(sealed) {
		t.Fatalf("manifest has %d segments, %d sealed", len(m.Segments), len(sealed))
	}
	orphans := 3 * min(window, len(sealed)-window) // the second window's objects
	segObjects := len(keys(t, s, p2.Prefix()+"segments/"))
	if segObjects != 3*len(sealed)+orphans {
		t.Fatalf("%d segment objects before cleanup, want %d (%d orphans)", segObjects, 3*len(sealed)+orphans, orphans)
	}
	if _, err := p2.CleanOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(keys(t, s, p2.Prefix()+"segments/")); got != 3*len(sealed) {
		t.Fatalf("%d segment objects after cleanup, want %d", got, 3*len(sealed))
	}
	if got := len(keys(t, s, p2.Prefix()+"manifest/")); got != keepManifests {
		t.Fatalf("%d manifests after cleanup, want %d", got, keepManifests)
	}
	if got := readBoth(t, p2, l); len(got) != 120 {
		t.Fatalf("read %d records, want 120", len(got))
	}
}

// A deposed leader (epoch 1) that uploads after the new leader (epoch 2)
// claimed the partition is refused, and even a manifest it manages to
// write sorts below the new leader's and is never read.
func TestStaleLeaderIsFenced(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 60)

	old := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, old, 1)
	if _, err := old.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	recorded := len(old.Manifest().Segments)

	neu := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, neu, 2)
	fill(t, l, 60)
	if _, err := old.Upload(ctx); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale upload: %v, want ErrFenced", err)
	}
	if !old.Fenced() {
		t.Fatal("the stale uploader does not know it is fenced")
	}
	if err := old.Claim(ctx, 1); !errors.Is(err, ErrFenced) {
		t.Fatalf("stale claim: %v, want ErrFenced", err)
	}

	// The race the check cannot close: the deposed leader writes its
	// manifest after the new one claimed. It must not shadow the new one.
	late := old.Manifest().clone()
	late.Seq += 100
	late.Segments = nil
	late.End = 1 << 40
	old.mu.Lock()
	old.mu.fenced, old.mu.key = false, neu.mu.key
	old.mu.Unlock()
	if err := old.write(ctx, late); err != nil {
		t.Fatalf("writing the late manifest: %v", err)
	}

	reader := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, reader, 2)
	if m := reader.Manifest(); m.Epoch != 2 || len(m.Segments) != recorded {
		t.Fatalf("newest manifest at epoch %d with %d segments, want epoch 2 with %d", m.Epoch, len(m.Segments), recorded)
	}
	if _, err := neu.Upload(ctx); err != nil {
		t.Fatalf("the new leader's upload: %v", err)
	}
	sealed := l.SealedSegments()
	checkManifest(t, neu.Manifest(), sealed[len(sealed)-1].Next)
	// The stale attempt's objects are orphans, and go.
	if _, err := neu.CleanOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(keys(t, s, neu.Prefix()+"segments/")); got != 3*len(neu.Manifest().Segments) {
		t.Fatalf("%d segment objects, want %d", got, 3*len(neu.Manifest().Segments))
	}
}

func TestTotalRetentionDeletesRemoteSegmentsInOrder(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 200)
	p := newTier(t, s).Partition("t", "id", 0, l)
	mustClaim(t, p, 0)
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	before := p.Manifest()
	total := before.RemoteBytes() + l.Size() - localUploaded(l, before.End)
	limit := total - before.Segments[0].Size - before.Segments[1].Size
	n, err := p.ApplyRetention(ctx, Retention{TimeMs: -1, Bytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("retention deleted %d segments, want the 2 oldest", n)
	}
	after := p.Manifest()
	if after.Segments[0].Base != before.Segments[2].Base || p.RemoteStart() != before.Segments[2].Base {
		t.Fatalf("remote start %d, want %d", p.RemoteStart(), before.Segments[2].Base)
	}
	for _, k := range keys(t, s, p.Prefix()+"segments/") {
		id, _ := segmentIDOf(p.Prefix(), k)
		if id == before.Segments[0].ID || id == before.Segments[1].ID {
			t.Fatalf("object %s of a deleted segment remains", k)
		}
	}
	if _, err := p.Read(ctx, before.Segments[1].Base, 100); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read of a deleted segment: %v", err)
	}
	// Time retention: everything is older than -1ms ago... nothing with 1h.
	if n, _ := p.ApplyRetention(ctx, Retention{TimeMs: 3_600_000, Bytes: -1}); n != 0 {
		t.Fatalf("time retention of 1h deleted %d fresh segments", n)
	}
	if err := p.DeleteRecordsBefore(ctx, after.Segments[1].Base+1); err != nil {
		t.Fatal(err)
	}
	if got := p.RemoteStart(); got != after.Segments[1].Base+1 {
		t.Fatalf("remote start %d after DeleteRecords, want %d", got, after.Segments[1].Base+1)
	}
	if ids := slices.IndexFunc(p.Manifest().Segments, func(s Segment) bool { return s.ID == after.Segments[0].ID }); ids >= 0 {
		t.Fatal("DeleteRecords left a segment wholly below the new start")
	}
}

func localUploaded(l *partlog.Log, end record.Offset) int64 {
	var n int64
	for _, s := range l.SealedSegments() {
		if s.Next <= end {
			n += s.Size
		}
	}
	return n
}

// A new leader whose segments split elsewhere than the old leader's (each
// replica rolls its own) continues the uploads: its first segment overlaps
// the remote end, serves only from it, and every offset is recorded once.
func TestNewLeaderWithOtherSegmentBoundaries(t *testing.T) {
	s := startS3(t)
	oldLog := openLog(t, tempDir(t))
	fill(t, oldLog, 100)
	old := newTier(t, s).Partition("t", "id", 0, oldLog)
	mustClaim(t, old, 1)
	if _, err := old.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	end := old.UploadedEnd()

	// The follower holds the same records in segments of another size.
	newLog, err := partlog.Open(vfs.Default, tempDir(t), partlog.Config{SegmentBytes: 2500, IndexIntervalBytes: 128, RetentionTime: -1, RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer newLog.Close()
	fill(t, newLog, 200)
	neu := newTier(t, s).Partition("t", "id", 0, newLog)
	mustClaim(t, neu, 2)
	if _, err := neu.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	m := neu.Manifest()
	sealed := newLog.SealedSegments()
	checkManifest(t, m, sealed[len(sealed)-1].Next)
	overlap := slices.IndexFunc(m.Segments, func(s Segment) bool { return s.Base < end && s.Next > end })
	if overlap < 0 || m.Segments[overlap].Start != end {
		t.Fatalf("no segment overlapping the old end %d serves from it: %+v", end, m.Segments)
	}
	newLog.SetConfig(partlog.Config{SegmentBytes: 2500, IndexIntervalBytes: 128, RetentionTime: -1, RetentionBytes: -1, LocalRetentionBytes: 1})
	newLog.SetTierGate(neu.UploadedEnd)
	if _, err := newLog.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	got := readBoth(t, neu, newLog)
	if len(got) != 200 {
		t.Fatalf("read %d records, want 200", len(got))
	}
	for i, r := range got {
		if r.Offset != record.Offset(i) || string(r.Value) != value(i) {
			t.Fatalf("record %d: offset %d", i, r.Offset)
		}
	}
}

// A window's segments are put at once, but recorded in offset order: when
// the second segment of a window fails, the manifest records the first
// only, never the third and fourth whose objects are complete; the next
// pass records the rest in order, and the orphan pass deletes the objects
// of the attempt that was not recorded.
func TestUploadWindowRecordsInOrderPastAFailure(t *testing.T) {
	s := startS3(t)
	f := &faulty{Store: s}
	l := openLog(t, tempDir(t))
	fill(t, l, 120)
	p := newTier(t, f).Partition("t", "id", 0, l)
	mustClaim(t, p, 1)
	sealed := l.SealedSegments()
	if window := cap(p.t.sem); window < 3 || len(sealed) < window {
		t.Fatalf("window %d, %d sealed segments: the test needs a window of three or more, filled", window, len(sealed))
	}
	second := fmt.Sprintf("/segments/%020d-", sealed[1].Base)
	f.setFail(func(op, key string) bool { return strings.Contains(key, second) && strings.HasSuffix(key, ".log") })
	n, err := p.Upload(ctx)
	if err == nil || n != 1 {
		t.Fatalf("upload with the second segment failing: %d recorded, %v; want 1 and the error", n, err)
	}
	if m := p.Manifest(); len(m.Segments) != 1 || m.Segments[0].Base != sealed[0].Base || m.End != sealed[0].Next {
		t.Fatalf("manifest after the failure: %+v, want the first segment alone", m)
	}
	f.setFail(func(string, string) bool { return false })
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	m := p.Manifest()
	checkManifest(t, m, sealed[len(sealed)-1].Next)
	if len(m.Segments) != len(sealed) {
		t.Fatalf("manifest has %d segments, %d sealed", len(m.Segments), len(sealed))
	}
	if _, err := p.CleanOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(keys(t, s, p.Prefix()+"segments/")); got != 3*len(sealed) {
		t.Fatalf("%d segment objects after the orphan pass, want %d", got, 3*len(sealed))
	}
	if got := readBoth(t, p, l); len(got) != 120 {
		t.Fatalf("read %d records, want 120", len(got))
	}
}
