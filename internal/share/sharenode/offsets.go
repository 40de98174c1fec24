package sharenode

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/topicconfig"
)

// DescribeShareGroupOffsets (90) on a cluster: the node that answers — the
// group's coordinator, where the client sends it — asks each
// share-partition's share coordinator for its summary
// (ReadShareGroupStateSummary, here or on another node), as Kafka's group
// coordinator does, so it sees the share-partitions led by every node. A
// share-partition's persisted state is its leader's: every change that
// ends a delivery is written there before it is answered.

// Summary returns a share-partition's start offset and done count, and
// whether the group has state there: on a single node from the manager,
// on a cluster from the share-partition's share coordinator.
func (n *Node) Summary(ctx context.Context, group string, tp share.TopicPartition) (share.Summary, bool, error) {
	if n.states == nil {
		sum, ok := n.Manager.Summary(group, tp)
		return sum, ok, nil
	}
	if _, _, err := n.cfg.Broker.Leader(share.StateTopic, func(int32) int32 { return 0 }); errors.Is(err, partition.ErrUnknownTopicOrPartition) {
		return share.Summary{}, false, nil // no share group has state yet
	}
	key := share.SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	var sum share.Summary
	var found bool
	err := stateStore{n}.call(ctx, key, func(sh *share.StateShard) error {
		s, ok := sh.Summary(key)
		sum, found = share.Summary{Start: s.Start, Done: s.Done}, ok
		return nil
	}, func(node int32) error {
		s, ok, err := n.cfg.Peers.ReadShareStateSummary(ctx, node, wireKey(key))
		sum, found = share.Summary{Start: share.Offset(s.Start), Done: int(s.Done)}, ok
		return err
	})
	return sum, found, err
}

// Partitions lists the share-partitions group has state for: on a single
// node the manager's; on a cluster every partition of every topic whose
// share coordinator holds state for group (Strand keeps no list of a
// group's share-partitions beside their state, as Kafka's group
// coordinator does: it asks, one share-partition at a time).
func (n *Node) Partitions(ctx context.Context, group string) ([]share.TopicPartition, error) {
	topics := n.cfg.Broker.Topics()
	if n.states == nil {
		var out []share.TopicPartition
		for _, k := range n.Manager.Partitions(group) {
			for name, ti := range topics {
				if ti.ID == k.TopicID {
					out = append(out, share.TopicPartition{TopicID: k.TopicID, Topic: name, Partition: k.Partition})
				}
			}
		}
		return out, nil
	}
	var out []share.TopicPartition
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		if topicconfig.IsInternalTopic(name) {
			continue
		}
		ti := topics[name]
		for p := range ti.Partitions {
			tp := share.TopicPartition{TopicID: ti.ID, Topic: name, Partition: p}
			_, ok, err := n.Summary(ctx, group, tp)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, tp)
			}
		}
	}
	return out, nil
}
