package tiered

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Now that a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Health says uploads are behind once the store has failed every request,
// or a partition's oldest sealed segment has waited, for longer than the
// bound — counted on the tier's clock from the pass that first found it
// waiting — and nothing once the store answers and the uploads catch up.
func TestHealthSaysUploadsAreBehind(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	f := &faulty{Store: startS3(t)}
	tier, err := New(Config{Store: f, Prefix: "test/", Backoff: time.Millisecond, Attempts: 2,
		UploadLagAlert: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l := openLog(t, tempDir(t))
	fill(t, l, 60)
	p := tier.Partition("t", "id", 0, l)
	mustClaim(t, p, 1)
	leading := map[string]*Partition{"t-0": p}
	if h := tier.Health(leading); h != nil {
		t.Fatalf("health before any upload: %+v", h)
	}

	f.setFail(func(op, key string) bool { return op == "put" })
	if _, err := p.Upload(ctx); err == nil {
		t.Fatal("upload succeeded with every put failing")
	}
	clock.add(59 * time.Second)
	if h := tier.Health(leading); h != nil {
		t.Fatalf("health within the bound: %+v", h)
	}
	if d := p.UploadBehind(); d != 59*time.Second {
		t.Fatalf("upload behind %v, want 59s", d)
	}
	clock.add(2 * time.Second)
	h := tier.Health(leading)
	if len(h) != 2 || h[0].Partition != "" || h[0].Err == nil || h[1].Partition != "t-0" || h[1].For != 61*time.Second {
		t.Fatalf("health past the bound: %+v, want the store and t-0 (61s)", h)
	}

	// Reads answer, the puts still fail: the store is not down, the
	// partition still behind.
	if err := tier.Partition("t", "id", 0, l).Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Upload(ctx); err == nil {
		t.Fatal("upload succeeded with every put failing")
	}
	clock.add(time.Minute)
	if h := tier.Health(leading); len(h) != 1 || h[0].Partition != "t-0" {
		t.Fatalf("health with the store answering lists: %+v, want t-0 only", h)
	}

	// remote.log.copy.disable: nothing will be uploaded, nothing is behind.
	p.NotUploading()
	if h := tier.Health(leading); h != nil {
		t.Fatalf("health of a partition that uploads no more: %+v", h)
	}

	f.setFail(func(string, string) bool { return false })
	if _, err := p.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	if h := tier.Health(leading); h != nil || p.UploadBehind() != 0 {
		t.Fatalf("health after catching up: %+v, behind %v", h, p.UploadBehind())
	}
}

// hanging is a store whose manifest PUTs wait until release is closed.
type hanging struct {
	Store
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *hanging) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if strings.Contains(key, "/manifest/") {
		h.once.Do(func() { close(h.arrived) })
		<-h.release
	}
	return h.Store.Put(ctx, key, body, size)
}

// A manifest PUT the store does not answer holds up the upload, not the
// readers of the partition's tier: Loaded, which a segment roll on the
// append path asks (the partition's aborted-transaction horizon), and
// Manifest, which reads and metrics ask, answer while it hangs.
func TestHangingManifestPutBlocksNoReader(t *testing.T) {
	l := openLog(t, tempDir(t))
	fill(t, l, 60)
	h := &hanging{Store: startS3(t), arrived: make(chan struct{}), release: make(chan struct{})}
	p := newTier(t, h).Partition("t", "id", 0, l)
	if err := p.Load(ctx); err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	go func() { claimed <- p.Claim(ctx, 1) }() // writes a manifest: it hangs
	<-h.arrived
	answered := make(chan struct{})
	go func() {
		_ = p.Loaded()
		_ = p.Manifest()
		_, _ = p.Claimed(), p.Fenced()
		close(answered)
	}()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("the tier's readers waited for a hanging manifest PUT")
	}
	close(h.release)
	if err := <-claimed; err != nil {
		t.Fatal(err)
	}
}
