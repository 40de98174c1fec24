package tiered

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// ErrFenced is returned when a leader with a higher epoch has claimed the
// partition's manifest: this node must stop uploading for it.
var ErrFenced = errors.New("tiered: fenced by a newer leader epoch")

// ErrOutOfRange is returned by Read for an offset the store does not hold.
var ErrOutOfRange = errors.New("tiered: offset not in remote storage")

// Config is the tier's tunables.
type Config struct {
	Store Store
	// Prefix is prepended to every key (e.g. "strand/cluster-a/").
	Prefix string
	// Concurrency bounds the segment uploads running at once across every
	// partition. Default 4.
	Concurrency int
	// CacheBytes bounds the chunk cache of remote reads. Default 64 MiB.
	CacheBytes int64
	// ChunkBytes is the size of one ranged GET of a segment. Default 4 MiB
	// (an eighth of CacheBytes if smaller, 64 KiB at least):
	// against a store on loopback, 4 MiB GETs cost less CPU per byte than
	// 1 MiB ones (fewer requests), and a sequential reader has several in
	// flight anyway (ReadAheadBytes).
	ChunkBytes int64
	// ReadAheadBytes is how far past a remote read the chunks are fetched
	// ahead for the next sequential read (at least that read's size, at
	// most half the cache). Default 16 MiB.
	ReadAheadBytes int64
	// Attempts is how many times a store operation is tried before the
	// step fails (the next pass tries again). Default 4.
	Attempts int
	// Backoff is the wait before the first retry; it doubles each time.
	// Default 200ms.
	Backoff time.Duration
	// OrphanGrace is how old an unreferenced object must be before
	// CleanOrphans deletes it, so an upload in flight on another node is
	// never taken for an orphan. Default 1h.
	OrphanGrace time.Duration
	// UploadLagAlert is the bound of Health: uploads are behind when a
	// partition's oldest sealed segment not yet uploaded has waited
	// longer, or every store request has failed for longer. Default 5m.
	UploadLagAlert time.Duration
	// UploadBytesPerSecond bounds the upload bandwidth of the segment
	// logs over every partition; zero or less: unbounded.
	UploadBytesPerSecond int64
	Logger               *slog.Logger
	Now                  func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = 64 << 20
	}
	if c.ChunkBytes <= 0 {
		// A small cache gets smaller chunks, so it still holds a
		// read-ahead window of several.
		c.ChunkBytes = max(min(4<<20, c.CacheBytes/8), 64<<10)
	}
	if c.ReadAheadBytes <= 0 {
		c.ReadAheadBytes = 16 << 20
	}
	if c.Attempts <= 0 {
		c.Attempts = 4
	}
	if c.Backoff <= 0 {
		c.Backoff = 200 * time.Millisecond
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = time.Hour
	}
	if c.UploadLagAlert <= 0 {
		c.UploadLagAlert = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Tier is the object-storage tier shared by every partition of a broker.
type Tier struct {
	cfg   Config
	sem   chan struct{}
	cache *chunkCache
	stats Stats
	pace  *pacer // nil: uploads are not rate-limited
	pass  sync.Mutex

	// failing is since when every store request has failed (zero: the
	// last one succeeded) and the last error.
	failing struct {
		sync.Mutex
		since time.Time
		err   error
	}

	// Read-ahead: the chunks after a reader's position are fetched in the
	// background, at most readAhead at once; Close cancels and waits.
	ahead     chan struct{}
	aheadWG   sync.WaitGroup
	aheadCtx  context.Context
	aheadStop context.CancelFunc
}

// readAhead bounds the chunks fetched ahead at once.
const readAhead = 8

// Stats are the tier's counters since start.
type Stats struct {
	UploadedSegments atomic.Int64
	UploadedBytes    atomic.Int64
	UploadErrors     atomic.Int64
	DeletedSegments  atomic.Int64
	RemoteReads      atomic.Int64
	RemoteReadBytes  atomic.Int64
	RemoteReadErrors atomic.Int64
	CacheHits        atomic.Int64
	CacheMisses      atomic.Int64
}

// New returns a tier on cfg.Store.
func New(cfg Config) (*Tier, error) {
	if cfg.Store == nil {
		return nil, errors.New("tiered: no store")
	}
	cfg = cfg.withDefaults()
	t := &Tier{cfg: cfg, sem: make(chan struct{}, cfg.Concurrency), ahead: make(chan struct{}, readAhead)}
	t.cache = newChunkCache(cfg.CacheBytes, &t.stats)
	t.aheadCtx, t.aheadStop = context.WithCancel(context.Background())
	if cfg.UploadBytesPerSecond > 0 {
		t.pace = &pacer{rate: cfg.UploadBytesPerSecond, now: time.Now, sleep: sleepCtx}
	}
	return t, nil
}

// Close releases the store's idle connections. A nil tier is a no-op.
func (t *Tier) Close() {
	if t == nil {
		return
	}
	t.aheadStop()
	t.aheadWG.Wait()
	if c, ok := t.cfg.Store.(interface{ CloseIdle() }); ok {
		c.CloseIdle()
	}
}

// Serialize runs fn while no other Serialize runs: one upload pass at a
// time per broker (the timer's and an operator's or a test's).
func (t *Tier) Serialize(fn func()) {
	t.pass.Lock()
	defer t.pass.Unlock()
	fn()
}

// CacheBytes is the size of the remote-read chunk cache.
func (t *Tier) CacheBytes() int64 { return t.cache.bytes() }

// Stats returns the tier's counters.
func (t *Tier) Stats() *Stats { return &t.stats }

// Partition returns the tier's handle on one partition's log. topicID
// keeps a recreated topic's objects apart from its predecessor's.
func (t *Tier) Partition(topic, topicID string, partition int32, log *partlog.Log) *Partition {
	p := &Partition{t: t, log: log,
		prefix: fmt.Sprintf("%s%s-%s/%d/", t.cfg.Prefix, topic, topicID, partition),
		logger: t.cfg.Logger.With("topic", topic, "partition", partition)}
	p.mu.man = emptyManifest()
	p.mu.inflight = map[string]bool{}
	p.waiting.base = record.NoOffset
	p.end.Store(-1)
	p.start.Store(-1)
	return p
}

// retry runs op up to Attempts times with doubling backoff. ErrFenced,
// ErrNotFound and a cancelled context are not retried.
func (t *Tier) retry(ctx context.Context, what string, op func() error) error {
	wait := t.cfg.Backoff
	var err error
	for i := range t.cfg.Attempts {
		if err = op(); err == nil || errors.Is(err, ErrFenced) || errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			if ctx.Err() == nil {
				t.noteStore(nil) // the store answered
			}
			return err
		}
		if i == t.cfg.Attempts-1 {
			t.noteStore(err)
			break
		}
		t.cfg.Logger.Debug("tiered: retrying", "op", what, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	return err
}

// noteStore records a store request's outcome after its retries: nil, the
// store answered.
func (t *Tier) noteStore(err error) {
	t.failing.Lock()
	defer t.failing.Unlock()
	switch {
	case err == nil:
		t.failing.since, t.failing.err = time.Time{}, nil
	case t.failing.since.IsZero():
		t.failing.since, t.failing.err = t.cfg.Now(), err
	default:
		t.failing.err = err
	}
}

// StoreFailing is how long every store request has failed (0 while the
// last one succeeded) and the last error.
func (t *Tier) StoreFailing() (time.Duration, error) {
	t.failing.Lock()
	defer t.failing.Unlock()
	if t.failing.since.IsZero() {
		return 0, nil
	}
	return max(t.cfg.Now().Sub(t.failing.since), 0), t.failing.err
}

// Behind is one reason uploads are behind, for /healthz.
type Behind struct {
	// Partition is "topic-partition", or "" for the store itself.
	Partition string
	For       time.Duration
	Err       error // the store's last error, when Partition is ""
}

// Health returns why uploads are behind, nil when they are not: the store
// has failed every request for longer than UploadLagAlert, or a partition
// this node uploads (leads) has had a sealed segment waiting longer.
// uploading lists those partitions by name.
func (t *Tier) Health(uploading map[string]*Partition) []Behind {
	var out []Behind
	if d, err := t.StoreFailing(); d > t.cfg.UploadLagAlert {
		out = append(out, Behind{For: d, Err: err})
	}
	for name, p := range uploading {
		if d := p.UploadBehind(); d > t.cfg.UploadLagAlert {
			out = append(out, Behind{Partition: name, For: d})
		}
	}
	slices.SortFunc(out, func(a, b Behind) int { return strings.Compare(a.Partition, b.Partition) })
	return out
}

// UploadLagAlert is Health's bound.
func (t *Tier) UploadLagAlert() time.Duration { return t.cfg.UploadLagAlert }
