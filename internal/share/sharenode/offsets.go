package sharenode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

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

// AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92) on a
// cluster, as Kafka's group coordinator does them: the node that answers
// writes each share-partition's state at its share coordinator — a reset
// is InitializeShareGroupState at the next state epoch, a delete is
// DeleteShareGroupState — whichever node leads the data partition. That
// leader's in-memory window is then stale: its writes are fenced by the
// new state epoch (or the missing state) and it reloads, and the first
// fetch of every member after the change checks the state epoch and
// reloads it (share.Manager's admitRemote). The group must be empty, as
// for Kafka; the caller checks.

// Reset sets a share-partition's start offset to o, forgetting its
// records' states: on a single node in the manager, on a cluster at its
// share coordinator with a new state epoch.
func (n *Node) Reset(ctx context.Context, group string, tp share.TopicPartition, o share.Offset) error {
	if n.states == nil {
		return n.Manager.Reset(ctx, group, tp, o)
	}
	key := share.SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	store := stateStore{n}
	var err error
	for range 3 { // a concurrent reset or first use may take the next epoch first
		var epoch int32
		var found bool
		if epoch, found, err = store.StateEpoch(ctx, key); err != nil {
			break
		}
		next := epoch + 1
		if !found {
			// A delete forgot the last state epoch, and a leader may
			// still hold a window at it: start above any epoch reached
			// one reset at a time.
			next = int32(max(1, min(time.Now().Unix(), 1<<31-1)))
		}
		if err = store.Initialize(ctx, key, share.Snapshot{StateEpoch: next, Start: o}); !errors.Is(err, share.ErrFencedStateEpoch) {
			break
		}
	}
	n.Manager.Forget(group, tp)
	return err
}

// DeleteOffsets forgets a share-partition's state: on a cluster at its
// share coordinator (a tombstone); a leader's later write of its window is
// refused, and the next fetch starts it by share.auto.offset.reset.
func (n *Node) DeleteOffsets(ctx context.Context, group string, tp share.TopicPartition) error {
	err := n.Manager.Delete(ctx, group, tp)
	if n.states != nil {
		n.Manager.Forget(group, tp)
	}
	return err
}

// DeleteGroup deletes an empty share group (DeleteGroups). On a cluster
// the group's share-partitions live on their partitions' leaders and their
// state with their share coordinators, most of them on other nodes than
// the group's coordinator that answers: as Kafka's group coordinator does
// through its persister, the state of every share-partition the group has
// is deleted at its share coordinator (DeleteShareGroupState) before the
// group itself, so that a new group of the same name starts by
// share.auto.offset.reset wherever its partitions are led (a leader still
// holding the old window is fenced by the missing state and reloads, as
// after DeleteShareGroupOffsets). On a single node the manager holds it
// all (share.Coordinator.DeleteGroup).
func (n *Node) DeleteGroup(ctx context.Context, group string) error {
	if n.states == nil {
		return n.Coordinator.DeleteGroup(ctx, group)
	}
	if err := n.Coordinator.CheckEmpty(group); err != nil {
		return err
	}
	tps, err := n.Partitions(ctx, group)
	if err != nil {
		return fmt.Errorf("sharenode: delete group %s: %w", group, err)
	}
	for _, tp := range tps {
		if err := n.DeleteOffsets(ctx, group, tp); err != nil {
			return fmt.Errorf("sharenode: delete group %s: %w", group, err)
		}
	}
	err = n.Coordinator.DeleteGroup(ctx, group)
	if errors.Is(err, share.ErrGroupNotFound) && len(tps) > 0 {
		return nil // its state, on other nodes, was all that was left of it
	}
	return err
}
