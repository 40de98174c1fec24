package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/record"
)

// This file is the consumer-group coordinator's storage: the internal topic
// __consumer_offsets, and the group.Store over it.
//
// The topic has a single partition. Kafka spreads it over 50
// (offsets.topic.num.partitions) so that coordinators of different groups
// live on different brokers; on a single node there is nothing to spread,
// and one partition keeps the replay in one pass. Replication will revisit
// this. Its config is cleanup.policy=compact, as in Kafka, with no time or
// size retention: the broker's cleaner (cleaner.go) keeps the latest record
// of each key, and nothing ever deletes committed offsets from under a group.

// ConsumerOffsetsTopic is the internal topic holding committed offsets and
// group metadata.
const ConsumerOffsetsTopic = "__consumer_offsets"

// offsetsTopicMaxBatch bounds one coordinator write (a commit of many
// partitions, or the metadata of a large group); Kafka's default
// message.max.bytes would refuse a 200-member group's assignments.
const offsetsTopicMaxBatch = 64 << 20

// IsInternalTopic reports whether a topic is one of the broker's own
// (listed with IsInternal in Metadata; it cannot be deleted).
func IsInternalTopic(name string) bool { return name == ConsumerOffsetsTopic }

func offsetsTopicSpec() TopicSpec {
	return TopicSpec{
		Name:       ConsumerOffsetsTopic,
		Partitions: 1,
		// Every config that could drop or divert the coordinator's records
		// is pinned, whatever the broker-wide TopicDefaults say.
		Configs: map[string]string{
			ConfigCleanupPolicy:         "compact",
			ConfigRetentionMs:           "-1",
			ConfigRetentionBytes:        "-1",
			ConfigRetentionRecords:      "-1",
			ConfigMinInsyncReplicas:     "1",
			ConfigMaxMessageBytes:       strconv.Itoa(offsetsTopicMaxBatch),
			ConfigValidation:            "none",
			ConfigValidationKeyRequired: "false",
		},
	}
}

// openGroups creates __consumer_offsets if it is missing and starts the
// group coordinator, which replays it.
func (b *Broker) openGroups() error {
	if _, err := b.Topic(ConsumerOffsetsTopic); err != nil {
		if _, err := b.CreateTopic(offsetsTopicSpec()); err != nil {
			return fmt.Errorf("broker: create %s: %w", ConsumerOffsetsTopic, err)
		}
	}
	p, err := b.Partition(ConsumerOffsetsTopic, 0)
	if err != nil {
		return err
	}
	return b.startCoordinator(p)
}

// startCoordinator starts the group coordinator over p, partition 0 of
// __consumer_offsets, which replays it.
func (b *Broker) startCoordinator(p *Partition) error {
	g, err := group.New(group.Config{
		Store:                  &offsetStore{p: p},
		Logger:                 b.logger,
		GroupMinSessionTimeout: b.cfg.GroupMinSessionTimeout,
		GroupMaxSessionTimeout: b.cfg.GroupMaxSessionTimeout,
		InitialRebalanceDelay:  b.cfg.GroupInitialRebalanceDelay,
		OffsetsRetention:       b.cfg.OffsetsRetention,
		PartitionExists: func(tp group.TopicPartition) bool {
			t, err := b.Topic(tp.Topic)
			return err == nil && tp.Partition >= 0 && tp.Partition < t.Partitions()
		},
	})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.groupsPtr.Store(g)
	if b.clustered() {
		// A member's image may still be catching up: a topic it does not
		// know yet is not a deleted one. Deletions reach the coordinator
		// as tombstones instead (syncLocked).
		return nil
	}
	// Offsets of topics that no longer exist: a delete that crashed before
	// its second pass, or data from before offsets were removed on delete.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if n, err := g.RemoveTopicOffsets(ctx, func(topic string) bool { _, err := b.Topic(topic); return err != nil }); err != nil {
		b.logger.Warn("broker: removing committed offsets of deleted topics", "err", err)
	} else if n > 0 {
		b.logger.Info("broker: removed committed offsets of deleted topics", "offsets", n)
	}
	return nil
}

// removeTopicOffsets tombstones every group's committed offsets of topic.
func (b *Broker) removeTopicOffsets(topic string) error {
	g := b.groups()
	if g == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := g.RemoveTopicOffsets(ctx, func(t string) bool { return t == topic })
	return err
}

// Groups returns the consumer-group coordinator, or nil on a cluster
// member that does not host __consumer_offsets (it coordinates no group).
func (b *Broker) Groups() *group.Coordinator { return b.groupsPtr.Load() }

func (b *Broker) groups() *group.Coordinator { return b.groupsPtr.Load() }

// localCoordinator is Groups for the in-process group API, which only a
// node coordinating groups can serve.
func (b *Broker) localCoordinator() (*group.Coordinator, error) {
	if g := b.groups(); g != nil {
		return g, nil
	}
	return nil, fmt.Errorf("%w: node %d does not host %s; use a Kafka client against the cluster", ErrCoordinatorNotAvailable, b.cfg.NodeID, ConsumerOffsetsTopic)
}

// offsetStore is group.Store over partition 0 of __consumer_offsets.
type offsetStore struct{ p *Partition }

// Append writes recs as one uncompressed v2 batch with acks=all and returns
// once it is appended. A nil Value is written as a null value (a tombstone).
func (s *offsetStore) Append(ctx context.Context, recs []group.StoreRecord) error {
	if len(recs) == 0 {
		return nil
	}
	now := s.p.b.cfg.Now().UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Offset: record.Offset(i), Timestamp: now, Key: r.Key, Value: r.Value}
	}
	batch, err := record.Encode(0, rs, record.DefaultBatchOptions())
	if err != nil {
		return fmt.Errorf("broker: encode %s batch: %w", ConsumerOffsetsTopic, err)
	}
	if _, err := s.p.Append(ctx, batch, AcksAll); err != nil {
		return fmt.Errorf("broker: append to %s: %w", ConsumerOffsetsTopic, err)
	}
	return nil
}

// replayChunk is how many bytes Replay reads at once.
const replayChunk = 4 << 20

// Replay calls fn for every record from the log start to the high
// watermark, in offset order.
func (s *offsetStore) Replay(fn func(group.StoreRecord) error) error {
	for off := s.p.LogStartOffset(); off < s.p.HighWatermark(); {
		res, err := s.p.Read(off, replayChunk)
		if err != nil {
			return err
		}
		if len(res.Batches) == 0 {
			return nil
		}
		sc := record.Batches(res.Batches)
		for sc.Next() {
			h := sc.Header()
			next := h.NextOffset()
			if h.IsControl() {
				off = max(off, next)
				continue
			}
			batch, err := record.Decode(sc.Batch())
			if err != nil {
				return fmt.Errorf("broker: %s at %d: %w", ConsumerOffsetsTopic, h.BaseOffset, err)
			}
			for _, r := range batch.Records {
				if r.Offset < off {
					continue
				}
				if err := fn(group.StoreRecord{Key: r.Key, Value: r.Value}); err != nil {
					return err
				}
			}
			off = max(off, next)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("broker: %s: %w", ConsumerOffsetsTopic, err)
		}
	}
	return nil
}

// ErrGroupNotEmpty: an offset change (Seek) refused because the group has
// live members, which own their positions.
var ErrGroupNotEmpty = errors.New("broker: consumer group has live members")

// codeError turns a coordinator result into an error (nil for CodeNone).
func codeError(op, groupID string, code group.Code) error {
	switch code {
	case group.CodeNone:
		return nil
	case group.CodeUnknownTopicOrPartition:
		return fmt.Errorf("%w: %s for group %q", ErrUnknownTopicOrPartition, op, groupID)
	case group.CodeIllegalGeneration, group.CodeRebalanceInProgress, group.CodeNonEmptyGroup:
		return fmt.Errorf("%w: %s for group %q (%s): stop its consumers first", ErrGroupNotEmpty, op, groupID, code)
	}
	return fmt.Errorf("broker: %s for group %q: %s", op, groupID, code)
}
