package tiered

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// errCrashed is what a crashed node's store requests "return": nothing it
// asks after its crash reaches the store.
var errCrashed = errors.New("injected: the node is dead")

// crashing is a store a node crashes on: after budget writes (puts and
// deletes) every request fails, as if the process died right there. A
// negative budget never crashes; writes counts them either way.
type crashing struct {
	Store
	mu      sync.Mutex
	budget  int
	writes  int
	crashed bool
}

func (c *crashing) write() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed || (c.budget >= 0 && c.writes >= c.budget) {
		c.crashed = true
		return errCrashed
	}
	c.writes++
	return nil
}

func (c *crashing) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

func (c *crashing) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.Put(ctx, key, body, size)
}

func (c *crashing) Delete(ctx context.Context, key string) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Store.Delete(ctx, key)
}

func (c *crashing) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if c.dead() {
		return nil, errCrashed
	}
	return c.Store.Get(ctx, key, off, n)
}

func (c *crashing) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	if c.dead() {
		return nil, errCrashed
	}
	return c.Store.List(ctx, prefix)
}

// crashRecords fill about nine 1 KiB segments.
const crashRecords = 60

// tierSteps runs one leader's tiered work on l: claim, upload, local
// retention, total retention (writes a manifest, then deletes objects).
// It stops at the first step the store refuses (the node is dead); after
// local retention it calls afterLocal. keep is retention.bytes.
func tierSteps(p *Partition, l *partlog.Log, keep int64, afterLocal func()) {
	if err := p.Claim(ctx, 1); err != nil {
		return
	}
	if _, err := p.Upload(ctx); err != nil {
		return
	}
	_, _ = l.ApplyRetention()
	afterLocal()
	_, _ = p.ApplyRetention(ctx, Retention{TimeMs: -1, Bytes: keep})
}

// openCrashLog opens a tiered log (local retention 1 byte, gated by p's
// upload end once p exists) on fs.
func openCrashLog(t *testing.T, fs vfs.FS) *partlog.Log {
	t.Helper()
	l, err := partlog.Open(fs, "p0", partlog.Config{SegmentBytes: 1024, IndexIntervalBytes: 128,
		RetentionTime: -1, RetentionBytes: -1, LocalRetentionBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// The crash test, at every step: a leader's claim, segment
// uploads (each object, then the manifest), local retention and total
// retention (the manifest, then each deletion), with the node crashing
// after each of its store writes in turn — and at the end of local
// retention, on a disk that keeps only what was synced. After the restart
// (same disk as the crash left it, same store, a fresh uploader at the
// same epoch) the same steps run again, then the orphan pass. Every time:
// the manifest records each offset once, contiguously, to the last sealed
// segment; every record from the remote log start on reads back once with
// its own value; below the remote start nothing is served; and the
// bucket holds exactly the manifest's objects and at most three manifests.
func TestCrashAtEveryTierStep(t *testing.T) {
	// A dry run counts the writes: one crash point after each.
	dry := &crashing{Store: startS3(t), budget: -1}
	dl := openCrashLog(t, vfs.NewMem())
	fill(t, dl, crashRecords)
	if err := dl.Sync(); err != nil {
		t.Fatal(err)
	}
	dp := newTier(t, dry).Partition("t", "id", 0, dl)
	dl.SetTierGate(dp.UploadedEnd)
	keep := dl.Size() * 3 / 4 // total retention drops the oldest quarter
	tierSteps(dp, dl, keep, func() {})
	steps := dry.writes
	want := dp.Manifest()
	if len(want.Segments) < 4 || want.LogStart == 0 {
		t.Fatalf("the dry run kept %d remote segments from %d: total retention did not act", len(want.Segments), want.LogStart)
	}
	// Crash points: after write k for every k, and (-1) at the end of
	// local retention with every write done before it.
	points := []int{}
	for k := range steps {
		points = append(points, k)
	}
	points = append(points, -1)
	for _, k := range points {
		t.Run(fmt.Sprint("crash-after-write-", k), func(t *testing.T) {
			crashAt(t, k, keep, want)
		})
	}
}

func crashAt(t *testing.T, k int, keep int64, want *Manifest) {
	s := startS3(t)
	mem := vfs.NewMem()
	l := openCrashLog(t, mem)
	fill(t, l, crashRecords)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	store := &crashing{Store: s, budget: k}
	p := newTier(t, store).Partition("t", "id", 0, l)
	l.SetTierGate(p.UploadedEnd)
	tierSteps(p, l, keep, func() {
		if k < 0 {
			store.mu.Lock()
			store.crashed = true
			store.mu.Unlock()
		}
	})
	if !store.dead() {
		t.Fatalf("the node did not crash at write %d", k)
	}
	disk := mem.CrashClone(vfs.CrashOptions{})

	// Restart on what the crash left.
	l2 := openCrashLog(t, disk)
	p2 := newTier(t, s).Partition("t", "id", 0, l2)
	l2.SetTierGate(p2.UploadedEnd)
	tierSteps(p2, l2, keep, func() {})
	if _, err := p2.CleanOrphans(ctx); err != nil {
		t.Fatal(err)
	}

	m := p2.Manifest()
	// Local retention left the active segment: every sealed one is remote.
	if sealed := l2.SealedSegments(); len(sealed) > 0 {
		t.Fatalf("sealed segments %+v stay local after the restart's uploads and local retention", sealed)
	}
	checkManifest(t, m, l2.LogStartOffset())
	if m.LogStart != want.LogStart || len(m.Segments) == 0 || m.Segments[0].Start > m.LogStart {
		t.Fatalf("remote log start %d (first segment from %d), want %d as without a crash", m.LogStart, m.Segments[0].Start, want.LogStart)
	}
	if l2.HighWatermark() != crashRecords {
		t.Fatalf("the log ends at %d after the restart, want %d", l2.HighWatermark(), crashRecords)
	}
	from := m.LogStart
	for from < l2.HighWatermark() {
		var data []byte
		var err error
		if from < l2.LogStartOffset() {
			data, err = p2.Read(ctx, from, 1000)
		} else {
			data, err = l2.Read(from, 1000)
		}
		if err != nil || len(data) == 0 {
			t.Fatalf("read at %d (local start %d, remote %d): %d bytes, %v", from, l2.LogStartOffset(), m.LogStart, len(data), err)
		}
		for len(data) > 0 {
			h, err := record.Check(data)
			if err != nil {
				t.Fatalf("bad batch at %d: %v", from, err)
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Records {
				if r.Offset < from {
					continue
				}
				if r.Offset != from || string(r.Value) != value(int(r.Offset)) {
					t.Fatalf("offset %d served as offset %d with value %.20q", from, r.Offset, r.Value)
				}
				from++
			}
			data = data[h.Size():]
		}
	}
	if m.LogStart > 0 {
		if _, err := p2.Read(ctx, m.LogStart-1, 1000); !errors.Is(err, ErrOutOfRange) {
			t.Fatalf("offset %d, below the remote start %d, served: %v", m.LogStart-1, m.LogStart, err)
		}
	}
	named := map[string]bool{}
	for _, seg := range m.Segments {
		for _, suf := range segmentSuffixes(seg) {
			named[segmentKey(p2.Prefix(), seg, suf)] = true
		}
	}
	manifests := 0
	for _, key := range keys(t, s, p2.Prefix()) {
		switch {
		case strings.Contains(key, "/manifest/"):
			manifests++
		case !named[key]:
			t.Fatalf("orphan %s after the orphan pass", key)
		}
	}
	if objs := len(keys(t, s, p2.Prefix()+"segments/")); objs != len(named) || manifests > keepManifests {
		t.Fatalf("%d segment objects for %d named, %d manifests", objs, len(named), manifests)
	}
}
