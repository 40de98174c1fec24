package tiered

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// countingStore wraps a store, counts the GETs of each range and the most
// that were in flight at once, and makes every GET take delay (a store
// some way off), so that GETs sent one after another and GETs sent
// together differ.
type countingStore struct {
	Store
	delay time.Duration
	mu    sync.Mutex
	gets  map[string]int // "key@off+n"
	now   int
	most  int
}

func (c *countingStore) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := c.count(ctx, key, off, n); err != nil {
		return nil, err
	}
	return c.Store.Get(ctx, key, off, n)
}

func (c *countingStore) count(ctx context.Context, key string, off, n int64) error {
	c.mu.Lock()
	if c.gets == nil {
		c.gets = map[string]int{}
	}
	c.gets[fmt.Sprintf("%s@%d+%d", key, off, n)]++
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.now--
		c.mu.Unlock()
	}()
	select {
	case <-time.After(c.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *countingStore) stats() (repeated []string, most int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.gets {
		if n > 1 {
			repeated = append(repeated, fmt.Sprintf("%s ×%d", k, n))
		}
	}
	return repeated, c.most
}

// uploadedTier fills a log with segments of several chunks each, uploads
// them all and deletes them locally, and returns the partition's handle
// on a tier over a countingStore.
func uploadedTier(t *testing.T, chunk int64) (*Partition, *countingStore) {
	return uploadedTierCache(t, chunk, 1<<20, 20*time.Millisecond)
}

func uploadedTierCache(t *testing.T, chunk, cache int64, delay time.Duration) (*Partition, *countingStore) {
	t.Helper()
	cs := &countingStore{Store: startS3(t), delay: delay}
	l := openLog(t, tempDir(t))
	fill(t, l, 200) // 1 KiB segments of ~14 batches
	tr, err := New(Config{Store: cs, Prefix: "test/", Backoff: time.Millisecond, ChunkBytes: chunk, CacheBytes: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	p := tr.Partition("t", "id", 0, l)
	mustClaim(t, p, 0)
	l.SetConfig(partlog.Config{SegmentBytes: 1024, IndexIntervalBytes: 128, RetentionTime: -1, RetentionBytes: -1, LocalRetentionBytes: 1})
	l.SetTierGate(p.UploadedEnd)
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if len(p.Manifest().Segments) < 5 || l.LogStartOffset() != p.UploadedEnd() {
		t.Fatalf("%d segments uploaded, local start %d, uploaded end %d", len(p.Manifest().Segments), l.LogStartOffset(), p.UploadedEnd())
	}
	return p, cs
}

// A read that needs several chunks has their GETs in flight together,
// and the chunks fetched ahead are never fetched a second time by the
// reader that then needs them.
func TestReadFetchesChunksConcurrentlyAndOnce(t *testing.T) {
	p, cs := uploadedTier(t, 128)
	from := record.Offset(0)
	var got []record.Record
	for from < p.UploadedEnd() {
		data, err := p.Read(ctx, from, 600)
		if err != nil {
			t.Fatal(err)
		}
		from = decodeAll(t, data, from, &got)
	}
	for i, r := range got {
		if r.Offset != record.Offset(i) || string(r.Value) != value(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
	p.t.aheadWG.Wait()
	repeated, most := cs.stats()
	if len(repeated) > 0 {
		t.Fatalf("ranges fetched more than once: %v", repeated)
	}
	if most < 2 {
		t.Fatalf("at most %d GET in flight at once: the chunks were fetched one after another", most)
	}
}

// A sequential reader that reaches a segment's end finds the next
// segment's index and first chunk fetched ahead: the read-ahead does not
// stop at a segment boundary.
func TestReadAheadCrossesSegments(t *testing.T) {
	p, _ := uploadedTier(t, 4096)
	man := p.Manifest()
	seg := man.Segments[0]
	// The whole first segment and not one byte more: the read stops at
	// its end.
	data, err := p.Read(ctx, seg.Start, int(seg.Size))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != seg.Size {
		t.Fatalf("read %d bytes, want the segment's %d", len(data), seg.Size)
	}
	p.t.aheadWG.Wait()
	next := man.Segments[1]
	for _, k := range []chunkKey{{key: segmentKey(p.prefix, next, ".index"), chunk: -1}, {key: segmentKey(p.prefix, next, ".log"), chunk: 0}} {
		if !p.t.cache.has(k) {
			t.Fatalf("%s chunk %d not fetched ahead after reading segment 0 to its end", k.key, k.chunk)
		}
	}
}

// A read below the local log start goes on into the next segments while
// maxBytes has room, instead of returning at the segment's end.
func TestReadContinuesIntoNextSegment(t *testing.T) {
	p, _ := uploadedTier(t, 4096)
	man := p.Manifest()
	want := man.Segments[0].Size + man.Segments[1].Size + man.Segments[2].Size
	data, err := p.Read(ctx, 0, int(want))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != want {
		t.Fatalf("read %d bytes from 0, want the first three segments' %d", len(data), want)
	}
	var got []record.Record
	if next := decodeAll(t, data, 0, &got); next != man.Segments[2].Next {
		t.Fatalf("read up to %d, want %d", next, man.Segments[2].Next)
	}
	for i, r := range got {
		if r.Offset != record.Offset(i) || string(r.Value) != value(i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
}

// Readers at once, over a cache of two chunks that evicts all the time,
// chunks in flight shared between them: every reader reads every record
// byte for byte.
func TestConcurrentReadsWhileTheCacheEvicts(t *testing.T) {
	p, _ := uploadedTierCache(t, 256, 512, 0)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := record.Offset(r * 7)
			for from < p.UploadedEnd() {
				data, err := p.Read(ctx, from, 300+100*r)
				if err != nil {
					errs <- err
					return
				}
				for len(data) > 0 {
					h, err := record.Check(data)
					if err != nil {
						errs <- fmt.Errorf("reader %d after %d: %w", r, from, err)
						return
					}
					b, err := record.Decode(data[:h.Size()])
					if err != nil {
						errs <- err
						return
					}
					for _, rec := range b.Records {
						if rec.Offset >= from && string(rec.Value) != value(int(rec.Offset)) {
							errs <- fmt.Errorf("reader %d: offset %d holds %q", r, rec.Offset, rec.Value)
							return
						}
					}
					from = h.NextOffset()
					data = data[h.Size():]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// decodeAll appends data's records at or after from to out and returns
// the offset after the last batch.
func decodeAll(t *testing.T, data []byte, from record.Offset, out *[]record.Record) record.Offset {
	t.Helper()
	if len(data) == 0 {
		t.Fatalf("empty read at %d", from)
	}
	for len(data) > 0 {
		h, err := record.Check(data)
		if err != nil {
			t.Fatalf("bad batch after %d: %v", from, err)
		}
		b, err := record.Decode(data[:h.Size()])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			if r.Offset >= from {
				*out = append(*out, r)
			}
		}
		from = h.NextOffset()
		data = data[h.Size():]
	}
	return from
}
