package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/group/consumer"
	"github.com/strandmq/strand/internal/topicconfig"
)

// This file hosts the consumer-group coordinators (package group): the
// internal topic __consumer_offsets, a coordinator over each partition of
// it this node leads (coordlog.Shards), and the group.Store over each
// (coordlog.Store).
//
// On a single node the topic has one partition: there is nothing to
// spread, and one partition keeps the replay in one pass. A cluster
// creates it with offsets.topic.num.partitions (50, as Kafka) spread over
// the nodes, so the coordinators of different groups live on different
// nodes. Its config is cleanup.policy=compact, as in Kafka, with no time or
// size retention: the cleaner keeps the latest record of each key, and
// nothing ever deletes committed offsets from under a group.

// ConsumerOffsetsTopic is the internal topic holding committed offsets and
// group metadata.
const ConsumerOffsetsTopic = topicconfig.ConsumerOffsetsTopic

// offsetsTopicMaxBatch bounds one coordinator write (a commit of many
// partitions, or the metadata of a large group); Kafka's default
// message.max.bytes would refuse a 200-member group's assignments.
const offsetsTopicMaxBatch = 64 << 20

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
		b.coords.Set(int32(p.ID()), p, g)
	}
	// Offsets of topics that no longer exist: a delete that crashed before
	// its second pass, or data from before offsets were removed on delete.
	// (Not on a cluster member, whose image may still be catching up: a
	// topic it does not know yet is not a deleted one.)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, g := range b.coords.Loaded() {
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
		Store:                  b.coordStore(p),
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
	for _, g := range b.coords.Loaded() {
		_, err := g.RemoveTopicOffsets(ctx, func(t string) bool { return t == topic })
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Coordinators returns the group coordinators this node runs and has
// loaded: one per __consumer_offsets partition it leads.
func (b *Broker) Coordinators() []*group.Coordinator { return b.coords.Loaded() }

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
	g, ok := b.coords.Get(int32(k))
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: group %q is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, groupID, ConsumerOffsetsTopic, k, b.cfg.NodeID)
	case g == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, ConsumerOffsetsTopic, k)
	}
	return g, nil
}

// localCoordinator is GroupCoordinator for the in-process group API.
func (b *Broker) localCoordinator(groupID string) (*group.Coordinator, error) {
	g, err := b.GroupCoordinator(groupID)
	if err != nil {
		return nil, fmt.Errorf("%w (the in-process group API serves the groups this node coordinates; use a Kafka client against the cluster)", err)
	}
	return g, nil
}

// syncCoordinators runs a coordinator for each __consumer_offsets
// partition this member leads and stops those of partitions it no longer
// leads (their groups move with the partition's leadership). A new
// coordinator replays its partition in the background; its groups answer
// COORDINATOR_LOAD_IN_PROGRESS meanwhile.
func (b *Broker) syncCoordinators() {
	defer b.syncTxnCoordinators()
	defer b.share.Sync(b.isClosed, b.node.Host.Go)
	b.coords.Sync(b.ledPartitions(ConsumerOffsetsTopic), b.isClosed, b.stop, b.node.Host.Go)
}

// ledPartitions are the partitions of topic this node leads, by index.
func (b *Broker) ledPartitions(topic string) map[int32]*Partition {
	leads := map[int32]*Partition{}
	if t, err := b.Topic(topic); err == nil {
		for _, p := range t.local() {
			if p.Role() == RoleLeader && !p.Closed() {
				leads[int32(p.ID())] = p
			}
		}
	}
	return leads
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
