package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/group/consumer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
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
// (listed with IsInternal in Metadata; it cannot be deleted, and clients
// cannot produce to it).
func IsInternalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic || name == SchemasTopic || name == share.StateTopic
}

// offsetsTopicSpec is __consumer_offsets with n partitions.
func offsetsTopicSpec(n int32) TopicSpec {
	return TopicSpec{
		Name:       ConsumerOffsetsTopic,
		Partitions: n,
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
// group coordinator over each of its partitions (one, on a single node),
// which replays it before Open returns.
func (b *Broker) openGroups() error {
	if _, err := b.Topic(ConsumerOffsetsTopic); err != nil {
		if _, err := b.CreateTopic(offsetsTopicSpec(1)); err != nil {
			return fmt.Errorf("broker: create %s: %w", ConsumerOffsetsTopic, err)
		}
	}
	t, err := b.Topic(ConsumerOffsetsTopic)
	if err != nil {
		return err
	}
	for _, p := range t.local() {
		g, err := b.newCoordinator(p)
		if err != nil {
			return err
		}
		b.coords.set(int32(p.id), &coordShard{p: p, loaded: g})
	}
	// Offsets of topics that no longer exist: a delete that crashed before
	// its second pass, or data from before offsets were removed on delete.
	// (Not on a cluster member, whose image may still be catching up: a
	// topic it does not know yet is not a deleted one.)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, g := range b.coords.loaded() {
		if n, err := g.RemoveTopicOffsets(ctx, func(topic string) bool { _, err := b.Topic(topic); return err != nil }); err != nil {
			b.logger.Warn("broker: removing committed offsets of deleted topics", "err", err)
		} else if n > 0 {
			b.logger.Info("broker: removed committed offsets of deleted topics", "offsets", n)
		}
	}
	return nil
}

// newCoordinator starts a group coordinator over p, a partition of
// __consumer_offsets; it replays p before it returns.
func (b *Broker) newCoordinator(p *Partition) (*group.Coordinator, error) {
	g, err := group.New(group.Config{
		Store:                  &offsetStore{p: p},
		Logger:                 b.logger,
		GroupMinSessionTimeout: b.cfg.GroupMinSessionTimeout,
		GroupMaxSessionTimeout: b.cfg.GroupMaxSessionTimeout,
		InitialRebalanceDelay:  b.cfg.GroupInitialRebalanceDelay,
		OffsetsRetention:       b.cfg.OffsetsRetention,
		MigrationPolicy:        b.cfg.GroupConsumerMigrationPolicy,
		Consumer: consumer.Config{
			SessionTimeout:    b.cfg.GroupConsumerSessionTimeout,
			HeartbeatInterval: b.cfg.GroupConsumerHeartbeatInterval,
		},
		// KIP-848 groups resolve subscriptions (names and regexes) against
		// every topic, internal ones included, as Kafka does.
		Topics: func() map[string]int32 {
			ts := b.Topics()
			out := make(map[string]int32, len(ts))
			for _, t := range ts {
				out[t.Name] = t.Partitions()
			}
			return out
		},
		PartitionExists: func(tp group.TopicPartition) bool {
			t, err := b.Topic(tp.Topic)
			return err == nil && tp.Partition >= 0 && tp.Partition < t.Partitions()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	return g, nil
}

// removeTopicOffsets tombstones every group's committed offsets of topic,
// in every coordinator this node runs.
func (b *Broker) removeTopicOffsets(topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, g := range b.coords.loaded() {
		_, err := g.RemoveTopicOffsets(ctx, func(t string) bool { return t == topic })
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Coordinators returns the group coordinators this node runs and has
// loaded: one per __consumer_offsets partition it leads.
func (b *Broker) Coordinators() []*group.Coordinator { return b.coords.loaded() }

// GroupCoordinator returns the coordinator of group groupID if this node
// runs it: ErrNotCoordinator if another node leads the group's
// __consumer_offsets partition, ErrCoordinatorLoading while this one
// replays it.
func (b *Broker) GroupCoordinator(groupID string) (*group.Coordinator, error) {
	t, err := b.Topic(ConsumerOffsetsTopic)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist yet", ErrNotCoordinator, ConsumerOffsetsTopic)
	}
	k := offsetsPartition(groupID, t.Partitions())
	sh := b.coords.get(int32(k))
	switch {
	case sh == nil:
		return nil, fmt.Errorf("%w: group %q is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, groupID, ConsumerOffsetsTopic, k, b.cfg.NodeID)
	case sh.loaded == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, ConsumerOffsetsTopic, k)
	}
	return sh.loaded, nil
}

// localCoordinator is GroupCoordinator for the in-process group API.
func (b *Broker) localCoordinator(groupID string) (*group.Coordinator, error) {
	g, err := b.GroupCoordinator(groupID)
	if err != nil {
		return nil, fmt.Errorf("%w (the in-process group API serves the groups this node coordinates; use a Kafka client against the cluster)", err)
	}
	return g, nil
}

// coordShard is the coordinator of one __consumer_offsets partition this
// node leads: loaded is nil while it replays the partition.
type coordShard struct {
	p      *Partition
	loaded *group.Coordinator
}

// shardMap maps a partition of an internal topic to the coordinator shard
// this node runs for it (group coordinators by __consumer_offsets
// partition, transaction coordinators by __transaction_state partition).
// The map is replaced whole on every change, so readers need no lock.
type shardMap[S comparable] struct {
	mu sync.Mutex // writers
	m  atomic.Pointer[map[int32]S]
}

// get returns partition k's shard, or the zero S.
func (c *shardMap[S]) get(k int32) S { return c.all()[k] }

func (c *shardMap[S]) all() map[int32]S {
	if m := c.m.Load(); m != nil {
		return *m
	}
	return nil
}

// set installs sh for partition k; the zero S removes k.
func (c *shardMap[S]) set(k int32, sh S) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.all())
	if next == nil {
		next = map[int32]S{}
	}
	var none S
	if sh == none {
		delete(next, k)
	} else {
		next[k] = sh
	}
	c.m.Store(&next)
}

// coordShards are the group coordinators, by __consumer_offsets partition.
type coordShards struct{ shardMap[*coordShard] }

func (c *coordShards) loaded() []*group.Coordinator {
	var out []*group.Coordinator
	for _, k := range slices.Sorted(maps.Keys(c.all())) {
		if g := c.get(k).loaded; g != nil {
			out = append(out, g)
		}
	}
	return out
}

// syncCoordinators runs a coordinator for each __consumer_offsets
// partition this member leads and stops those of partitions it no longer
// leads (their groups move with the partition's leadership). A new
// coordinator replays its partition in the background; its groups answer
// COORDINATOR_LOAD_IN_PROGRESS meanwhile.
func (b *Broker) syncCoordinators() {
	defer b.syncTxnCoordinators()
	b.coordSync.Lock()
	defer b.coordSync.Unlock()
	if b.isClosed() { // Close has unloaded every coordinator: load none
		return
	}
	t, err := b.Topic(ConsumerOffsetsTopic)
	leads := map[int32]*Partition{}
	if err == nil {
		for _, p := range t.local() {
			if p.Role() == RoleLeader && !p.isClosed() {
				leads[int32(p.id)] = p
			}
		}
	}
	for k, sh := range b.coords.all() {
		if leads[k] != sh.p {
			b.coords.set(k, nil)
			if sh.loaded != nil {
				sh.loaded.Close()
			}
			b.logger.Info("broker: group coordinator unloaded: this node no longer leads its partition", "partition", k)
		}
	}
	for k, p := range leads {
		if b.coords.get(k) != nil {
			continue
		}
		sh := &coordShard{p: p}
		b.coords.set(k, sh)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if !p.waitEpochCommitted(b.stop) {
				return // leadership moved on before it could load: the next sync decides
			}
			g, err := b.newCoordinator(p)
			if err != nil {
				b.logger.Error("broker: cannot load a group coordinator", "partition", k, "err", err)
				return
			}
			b.coordSync.Lock()
			defer b.coordSync.Unlock()
			if b.coords.get(k) != sh || b.isClosed() { // unloaded meanwhile
				g.Close()
				return
			}
			b.coords.set(k, &coordShard{p: p, loaded: g})
			b.logger.Info("broker: group coordinator loaded", "partition", k)
		}()
	}
}

// offsetStore is group.Store over partition 0 of __consumer_offsets.
type offsetStore struct{ p *Partition }

// Append writes recs as one uncompressed v2 batch with acks=all and returns
// once it is appended. A nil Value is written as a null value (a tombstone).
func (s *offsetStore) Append(ctx context.Context, recs []group.StoreRecord) error {
	return s.append(ctx, recs, record.DefaultBatchOptions())
}

// AppendTxn is Append as records of producer (pid, epoch)'s transaction
// (TxnOffsetCommit): a transactional batch without a sequence, as a
// coordinator writes it; the marker that ends the transaction decides
// whether it counts.
func (s *offsetStore) AppendTxn(ctx context.Context, pid int64, epoch int16, recs []group.StoreRecord) error {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.Transactional = pid, epoch, true
	return s.append(ctx, recs, opts)
}

func (s *offsetStore) append(ctx context.Context, recs []group.StoreRecord, opts record.BatchOptions) error {
	if len(recs) == 0 {
		return nil
	}
	now := s.p.b.cfg.Now().UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Offset: record.Offset(i), Timestamp: now, Key: r.Key, Value: r.Value}
	}
	batch, err := record.Encode(0, rs, opts)
	if err != nil {
		return fmt.Errorf("broker: encode %s batch: %w", s.p.topic, err)
	}
	if _, err := s.p.Append(ctx, batch, AcksAll); err != nil {
		return fmt.Errorf("broker: append to %s: %w", s.p.topic, err)
	}
	return nil
}

// replayChunk is how many bytes Replay reads at once.
const replayChunk = 4 << 20

// Replay calls fn for every record from the log start to the high
// watermark, in offset order. Records of transactions carry their
// producer, and each marker is passed as a record of its own.
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
				if m, err := record.DecodeMarker(sc.Batch()); err == nil && h.BaseOffset >= off {
					tag := &group.TxnTag{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Marker: true, Commit: m.Commit}
					if err := fn(group.StoreRecord{Txn: tag}); err != nil {
						return err
					}
				}
				off = max(off, next)
				continue
			}
			batch, err := record.Decode(sc.Batch())
			if err != nil {
				return fmt.Errorf("broker: %s at %d: %w", s.p.topic, h.BaseOffset, err)
			}
			var tag *group.TxnTag
			if h.IsTransactional() {
				tag = &group.TxnTag{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch}
			}
			for _, r := range batch.Records {
				if r.Offset < off {
					continue
				}
				if err := fn(group.StoreRecord{Key: r.Key, Value: r.Value, Txn: tag}); err != nil {
					return err
				}
			}
			off = max(off, next)
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("broker: %s: %w", s.p.topic, err)
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
	case group.CodeIllegalGeneration, group.CodeRebalanceInProgress, group.CodeNonEmptyGroup, group.CodeUnknownMemberID:
		return fmt.Errorf("%w: %s for group %q (%s): stop its consumers first", ErrGroupNotEmpty, op, groupID, code)
	}
	return fmt.Errorf("broker: %s for group %q: %s", op, groupID, code)
}

// isClosed reports whether Close has begun.
func (b *Broker) isClosed() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.closed
}
