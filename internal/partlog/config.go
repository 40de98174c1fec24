package partlog

import (
	"log/slog"
	"time"
)

// Config is a partition log's tunables. The names in the comments are the Kafka
// topic configs (or Strand's own, prefixed strand.) they come from. The zero
// value of a field means its default (see DefaultConfig); a negative retention
// means unlimited, as in Kafka.
type Config struct {
	// SegmentBytes rolls the active segment when it would exceed this size
	// (segment.bytes; default 1 GiB).
	SegmentBytes int64
	// SegmentTime rolls the active segment once its first batch is this old
	// (segment.ms; default 7 days).
	SegmentTime time.Duration
	// RetentionTime deletes segments whose newest record is older than this
	// (retention.ms; default 7 days; negative: keep forever).
	RetentionTime time.Duration
	// RetentionBytes deletes the oldest segments while the log is larger than
	// this (retention.bytes; default -1: unlimited).
	RetentionBytes int64
	// LocalRetentionTime and LocalRetentionBytes replace RetentionTime and
	// RetentionBytes for local segments once a tier gate is set
	// (SetTierGate): local.retention.ms and local.retention.bytes. Zero
	// means the same as the total (Kafka's -2); negative, unlimited.
	LocalRetentionTime  time.Duration
	LocalRetentionBytes int64
	// RetentionRecords keeps only the newest N offsets, moving the log start
	// offset on every append (strand.retention.records, the seed's
	// retain_count; default -1: unlimited).
	RetentionRecords int64
	// FlushMessages fsyncs after this many records (flush.messages; default 0:
	// leave it to the page cache, as Kafka does).
	FlushMessages int64
	// FlushInterval fsyncs on append once the last fsync is this old
	// (flush.ms; default 0: never).
	FlushInterval time.Duration
	// IndexIntervalBytes is how many log bytes separate offset-index entries
	// (index.interval.bytes; default 4096).
	IndexIntervalBytes int64
	// CacheWindow is how many bytes behind the active segment's end stay
	// in the page cache (strand.page.cache.window.bytes; zero means
	// DefaultCacheWindow, which is off; negative: all of them, as the page
	// cache decides). Past it, each quarter of the window that fills is handed
	// to the disk at once (write-back started) and dropped from the cache
	// once written, so a busy log reuses the same pages instead of taking
	// fresh ones for every byte (see "The cost of a produced byte" in
	// docs/BENCHMARKS.md). Durability is unchanged: only an fsync makes
	// bytes durable, and a dropped range is read from the disk again.
	CacheWindow int64
	// Preallocate (Kafka's preallocate) reserves the active segment's disk
	// blocks PreallocateStep ahead of its end, without changing its size,
	// so that appends do not allocate blocks a page at a time; a segment's
	// reserve past its end is released when it is sealed. Off by default,
	// as in Kafka: each active segment holds up to PreallocateStep of disk
	// it has not used, which thousands of partitions would notice.
	Preallocate bool
	// ReplicatedHighWatermark chooses the high-watermark mode at open: set,
	// the high watermark is the caller's (SetHighWatermark: a leader's ISR
	// rule, a follower's fetch), starts at its checkpoint and is
	// checkpointed (CheckpointHighWatermark, Close); unset, it follows the
	// end offset (a single node is its own ISR). Either way it never
	// passes a batch still waiting for the fsync its flush policy asks for.
	ReplicatedHighWatermark bool
	// WriteGate, when set, bounds the appends writing at once across the
	// logs that share it (writegate.go). Nil: no bound.
	WriteGate *WriteGate
	// Now is the clock; tests inject one. Default time.Now.
	Now func() time.Time
	// Logger receives recovery and retention events. Default slog.Default().
	Logger *slog.Logger
}

// Defaults, as Kafka's.
const (
	DefaultSegmentBytes       = 1 << 30
	DefaultSegmentTime        = 7 * 24 * time.Hour
	DefaultRetentionTime      = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes = 4096
	// DefaultCacheWindow is off: every byte is left to the page cache, as
	// in Kafka. In four alternated runs here a window cost 0.39-1.03x the
	// CPU per GB of none in two and 1.13-1.38x in the other two,
	// depending on how warm the machine's free memory was ("The cost of a
	// produced byte" in docs/BENCHMARKS.md), so it is a choice per topic.
	DefaultCacheWindow = -1
	// PreallocateStep is how far ahead of the active segment's end
	// Preallocate reserves the disk.
	PreallocateStep = 32 << 20
)

// minCacheChunk is the smallest range a cache-window hint covers: smaller
// ones cost a system call for little.
const minCacheChunk = 1 << 20

func (c Config) withDefaults() Config {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.SegmentTime <= 0 {
		c.SegmentTime = DefaultSegmentTime
	}
	if c.RetentionTime == 0 {
		c.RetentionTime = DefaultRetentionTime
	}
	if c.RetentionBytes == 0 {
		c.RetentionBytes = -1
	}
	if c.RetentionRecords == 0 {
		c.RetentionRecords = -1
	}
	if c.CacheWindow == 0 {
		c.CacheWindow = DefaultCacheWindow
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
