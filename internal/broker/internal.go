package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/record"
)

// Internal topics (__consumer_offsets, __transaction_state and _schemas)
// hold the broker's own records. A client may tune what does not
// matter to them (segment size, flushing, cleaner ratios) but not what
// would drop, divert or refuse their records: the pinned configs of their
// spec, their partition count, or a segment smaller than the largest batch
// the broker writes. meta.json overrides that break these rules (written
// before the rules existed) are ignored with a warning.

// internalTopicSpec returns an internal topic's spec.
func internalTopicSpec(name string) (TopicSpec, bool) {
	switch name {
	case ConsumerOffsetsTopic:
		return offsetsTopicSpec(1), true // the partition count is not a config
	case SchemasTopic:
		return schemasTopicSpec(), true
	case TransactionStateTopic:
		return txnStateTopicSpec(1), true
	}
	return TopicSpec{}, false
}

// checkInternalConfig refuses a config of an internal topic that would
// break it.
func checkInternalConfig(name string, tc TopicConfig) error {
	spec, ok := internalTopicSpec(name)
	if !ok {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Configs)) {
		if v, _ := tc.Get(k); v != spec.Configs[k] {
			return fmt.Errorf("%w: %s of internal topic %q must stay %s (it is %s): the broker's own records depend on it",
				ErrPolicyViolation, k, name, spec.Configs[k], v)
		}
	}
	maxBatch, _ := strconv.ParseInt(spec.Configs[ConfigMaxMessageBytes], 10, 64)
	if seg := tc.Long(ConfigSegmentBytes); seg < maxBatch {
		return fmt.Errorf("%w: %s of internal topic %q must be at least %d (its max.message.bytes), not %d: larger writes would fail",
			ErrPolicyViolation, ConfigSegmentBytes, name, maxBatch, seg)
	}
	return nil
}

// internalOverrides returns the overrides an internal topic opens with:
// its stored ones, with every pinned config put back (logged) if changed.
func (b *Broker) internalOverrides(name string, stored map[string]string) map[string]string {
	spec, ok := internalTopicSpec(name)
	if !ok {
		return stored
	}
	out := maps.Clone(stored)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range spec.Configs {
		if out[k] != v {
			b.logger.Warn("broker: ignoring a config override that would break an internal topic", "topic", name, "config", k, "stored", out[k], "using", v)
			out[k] = v
		}
	}
	if seg, err := strconv.ParseInt(out[ConfigSegmentBytes], 10, 64); err == nil {
		if maxBatch, _ := strconv.ParseInt(spec.Configs[ConfigMaxMessageBytes], 10, 64); seg < maxBatch {
			b.logger.Warn("broker: ignoring a config override that would break an internal topic", "topic", name, "config", ConfigSegmentBytes, "stored", seg)
			delete(out, ConfigSegmentBytes)
		}
	}
	return out
}

// coordStore is a coordinator's record store over p, a partition of its
// internal topic.
func (b *Broker) coordStore(p *Partition) *coordlog.Store {
	return &coordlog.Store{Log: internalLog{p}, Now: b.cfg.Now}
}

// internalLog is an internal topic's partition as a coordinator's log
// (coordlog.Log).
type internalLog struct{ p *Partition }

func (l internalLog) Name() string { return l.p.Topic() }

func (l internalLog) Append(ctx context.Context, batch []byte) error {
	_, err := l.p.Append(ctx, batch, AcksAll)
	return err
}

func (l internalLog) Read(from record.Offset, maxBytes int) ([]byte, error) {
	res, err := l.p.Read(from, maxBytes)
	return res.Batches, err
}

func (l internalLog) LogStartOffset() record.Offset { return l.p.LogStartOffset() }
func (l internalLog) HighWatermark() record.Offset  { return l.p.HighWatermark() }
