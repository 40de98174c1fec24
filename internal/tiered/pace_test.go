package tiered

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Reads through one pacer wait for their share of the rate, one after
// another: 1000 bytes at 1000 B/s each start a second after the previous.
func TestPacerSpreadsReads(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	p := &pacer{rate: 1000, now: func() time.Time { return now },
		sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
	for range 4 {
		if err := p.wait(context.Background(), 1000); err != nil {
			t.Fatal(err)
		}
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(slept, want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	// Idle time is not saved up: after a long pause the next read goes at
	// once, the one after waits again.
	now = now.Add(time.Hour)
	slept = nil
	_ = p.wait(context.Background(), 500)
	_ = p.wait(context.Background(), 500)
	if want := []time.Duration{500 * time.Millisecond}; !slices.Equal(slept, want) {
		t.Fatalf("after a pause slept %v, want %v", slept, want)
	}
}

// A remote read that stops inside a segment fetches the chunks after it
// in the background, so the next sequential read finds them cached.
func TestReadAheadCachesTheNextChunk(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 60)
	tr, err := New(Config{Store: s, ChunkBytes: 256, CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	p := tr.Partition("t", "id", 0, l)
	mustClaim(t, p, 0)
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	seg := p.Manifest().Segments[0]
	if seg.Size < 3*256 {
		t.Fatalf("segment of %d bytes: too small for the test", seg.Size)
	}
	b, err := p.Read(ctx, seg.Base, 1) // one batch
	if err != nil {
		t.Fatal(err)
	}
	tr.aheadWG.Wait()
	key := segmentKey(p.prefix, seg, ".log")
	next := int64(len(b)) / 256
	if !tr.cache.has(chunkKey{key: key, chunk: next + 1}) {
		t.Fatalf("chunk %d (after the read's end at byte %d) was not fetched ahead", next+1, len(b))
	}
	tr.Close()
}
