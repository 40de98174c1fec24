package broker

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/compact"
)

// Compaction topic configs (cleanup.policy and delete.retention.ms are in
// config.go).
const (
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	ConfigMinCompactionLagMs     = "min.compaction.lag.ms"
	ConfigMaxCompactionLagMs     = "max.compaction.lag.ms"
)

// TypeDouble is Kafka's DOUBLE config type.
const TypeDouble ConfigType = 6

var compactionConfigDefs = []*ConfigDef{
	{Name: ConfigMinCleanableDirtyRatio, Default: "0.5", Type: TypeDouble, check: checkRatio,
		Doc: "Clean a compacted partition once this share of its sealed bytes has not been cleaned yet."},
	{Name: ConfigMinCompactionLagMs, Default: "0", Type: TypeLong, check: checkLong(0, math.MaxInt64),
		Doc: "Keep a record out of compaction until it is at least this old (its segment's newest record)."},
	{Name: ConfigMaxCompactionLagMs, Default: maxLongText, Type: TypeLong, check: checkLong(1, math.MaxInt64),
		Doc: "Clean a compacted partition, whatever its dirty ratio, once a dirty segment's newest record is this old."},
}

// configDefs also holds the compaction configs.
func init() {
	configDefs = append(configDefs, compactionConfigDefs...)
	for _, d := range compactionConfigDefs {
		configByName[d.Name] = d
	}
	slices.SortFunc(configDefs, func(x, y *ConfigDef) int { return strings.Compare(x.Name, y.Name) })
}

func checkRatio(v string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f > 1 {
		return "", errInvalidValue("must be a number in [0, 1]")
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// hasPolicy reports whether cleanup.policy lists p ("delete" or "compact").
func (c TopicConfig) hasPolicy(p string) bool {
	v, _ := c.Get(ConfigCleanupPolicy)
	for s := range strings.SplitSeq(v, ",") { // no allocation: it runs per produce
		if s == p {
			return true
		}
	}
	return false
}

// Compacted reports whether cleanup.policy includes compact.
func (c TopicConfig) Compacted() bool { return c.hasPolicy("compact") }

// compactPolicy translates the topic's compaction configs for the cleaner.
func (c TopicConfig) compactPolicy() compact.Policy {
	ms := func(n int64) time.Duration {
		if n > math.MaxInt64/int64(time.Millisecond) {
			return math.MaxInt64
		}
		return time.Duration(n) * time.Millisecond
	}
	ratio, _ := c.Get(ConfigMinCleanableDirtyRatio)
	r, _ := strconv.ParseFloat(ratio, 64)
	p := compact.Policy{
		DeleteRetention:  ms(c.long(ConfigDeleteRetentionMs)),
		MinDirtyRatio:    r,
		MinCompactionLag: ms(c.long(ConfigMinCompactionLagMs)),
		SegmentBytes:     c.long(ConfigSegmentBytes),
	}
	if n := c.long(ConfigMaxCompactionLagMs); n != math.MaxInt64 {
		p.MaxCompactionLag = ms(n)
	}
	return p
}

// CleanLogs runs the compaction cleaner once, now, on every partition of
// every topic whose cleanup.policy includes compact (__consumer_offsets
// among them); the broker also does so every CleanerBackoff. A partition is
// cleaned only if it is due (see package compact); errors are logged. Calls
// are serialised: one clean at a time per broker.
func (b *Broker) CleanLogs() {
	b.cleaning.Lock()
	defer b.cleaning.Unlock()
	cl := &compact.Cleaner{FS: b.fs, Now: b.cfg.Now, Logger: b.logger, MapBytes: b.cfg.CleanerMapBytes}
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			select {
			case <-b.stop:
				return
			default:
			}
			cfg := t.Config
			if !cfg.Compacted() {
				continue
			}
			pol := cfg.compactPolicy()
			if pol.Stable, pol.Aborted = p.CleanerTxnBounds(); pol.Stable == 0 {
				continue // an undecided transaction at the log start: nothing is stable
			}
			if _, err := cl.Clean(p.Log(), pol); err != nil && !p.Closed() {
				b.logger.Warn("broker: compaction failed", "topic", t.Name, "partition", p.ID(), "err", err)
			}
		}
	}
}
