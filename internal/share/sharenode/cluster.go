package sharenode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/wire"
)

// errConfigsClustered refuses group configs where the node keeps them in
// __share_group_state: a cluster member has no such store.
var errConfigsClustered = errors.New("sharenode: share-group configs are not served on a cluster yet")

// clusterHost is share.Host on a cluster member: the share state is the
// share coordinators' (stateStore), not replayed at start, and the
// partitions' leader epochs fence a former leader's writes.
type clusterHost struct{ host }

func (h *clusterHost) AppendState(context.Context, []share.StateRecord) error {
	return errConfigsClustered
}

func (h *clusterHost) ReplayState(func(key, value []byte)) error { return nil }

// LeaderEpoch is the leader epoch of a partition this node leads.
func (h *clusterHost) LeaderEpoch(tp share.TopicPartition) (int32, error) {
	p, err := h.partition(tp)
	if err != nil {
		return 0, err
	}
	if err := p.CheckLeader(); err != nil {
		return 0, err
	}
	return int32(p.LeaderEpoch()), nil
}

// stateNode returns the node leading the __share_group_state partition of
// key (its share coordinator), creating the topic on first use as Kafka
// does: as many partitions as __consumer_offsets, replicated on up to
// three nodes, and (with three) min.insync.replicas 2, Kafka's
// share.coordinator.state.topic.min.isr: a state write acknowledged by one
// replica alone could die with it, undoing an acknowledgement.
func (n *Node) stateNode(key share.SPKey) (int32, error) {
	pick := func(count int32) int32 { return share.StatePartitionFor(key, count) }
	k, leader, err := n.cfg.Broker.Leader(share.StateTopic, pick)
	if errors.Is(err, partition.ErrUnknownTopicOrPartition) {
		rf := int16(min(3, len(cluster.LiveBrokers(n.cfg.Meta.Image()))))
		cfgs := stateConfigs()
		cfgs["min.insync.replicas"] = strconv.Itoa(int(min(rf, 2)))
		if err = n.cfg.Broker.CreateInternalTopic(share.StateTopic, n.cfg.StatePartitions, rf, cfgs); err == nil {
			k, leader, err = n.cfg.Broker.Leader(share.StateTopic, pick)
		}
	}
	if err != nil {
		return -1, fmt.Errorf("%w: %s: %w", ErrCoordinatorNotAvailable, share.StateTopic, err)
	}
	if leader < 0 {
		return -1, fmt.Errorf("%w: %s-%d has no leader", ErrCoordinatorNotAvailable, share.StateTopic, k)
	}
	return leader, nil
}

// stateStore is share.StateStore over the share coordinators: the one on
// this node directly, another node's through its internal listener. A call
// that finds no coordinator ready (moving, loading, unreachable) tries
// again for up to stateRetry; the calls are idempotent (a write replaces
// the whole state, fenced by epochs).
type stateStore struct{ n *Node }

// stateRetry bounds the retries of one share-coordinator call: a
// coordinator move takes a leader election and a replay.
const stateRetry = 15 * time.Second

func (s stateStore) call(ctx context.Context, key share.SPKey, local func(*share.StateShard) error, remote func(node int32) error) error {
	ctx, cancel := context.WithTimeout(ctx, stateRetry)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		node, err := s.n.stateNode(key)
		if err == nil {
			if node == s.n.cfg.NodeID {
				var sh *share.StateShard
				if sh, err = s.n.StateShard(key); err == nil {
					err = local(sh)
				}
			} else {
				err = remote(node)
			}
		}
		if err == nil || !retriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-s.n.cfg.Stop:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// retriable reports whether a share-coordinator call may succeed if tried
// again: the coordinator is moving, loading or out of reach, or its state
// partition lost its leader or in-sync replicas mid-write.
func retriable(err error) bool {
	for _, e := range []error{ErrNotCoordinator, ErrCoordinatorLoading, ErrCoordinatorNotAvailable, partition.ErrNotLeader,
		partition.ErrNotEnoughReplicas, partition.ErrNotEnoughReplicasAfterAppend, wire.ErrUnreachable, wire.ErrShareCoordinatorMoving} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func wireKey(k share.SPKey) wire.ShareKey {
	return wire.ShareKey{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

func (s stateStore) Load(ctx context.Context, key share.SPKey, leaderEpoch int32) (share.Snapshot, bool, error) {
	var snap share.Snapshot
	var found bool
	err := s.call(ctx, key, func(sh *share.StateShard) (err error) {
		snap, found, err = sh.Read(ctx, key, leaderEpoch)
		return err
	}, func(node int32) error {
		st, ok, err := s.n.cfg.Peers.ReadShareState(ctx, node, wireKey(key), leaderEpoch)
		snap, found = snapshotOf(st), ok
		return fenced(err)
	})
	return snap, found, err
}

func (s stateStore) Initialize(ctx context.Context, key share.SPKey, snap share.Snapshot) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Initialize(ctx, key, snap.StateEpoch, snap.Start)
	}, func(node int32) error {
		return fenced(s.n.cfg.Peers.InitializeShareState(ctx, node, wireKey(key), snap.StateEpoch, int64(snap.Start)))
	})
}

func (s stateStore) Save(ctx context.Context, key share.SPKey, snap share.Snapshot) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Write(ctx, key, snap)
	}, func(node int32) error {
		done := share.Restore(share.Config{MaxRecordLocks: 1 << 30}, snap).Stats().Done
		return fenced(s.n.cfg.Peers.WriteShareState(ctx, node, wireKey(key), stateOf(snap), int32(done)))
	})
}

func (s stateStore) Remove(ctx context.Context, key share.SPKey) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Delete(ctx, key)
	}, func(node int32) error {
		return s.n.cfg.Peers.DeleteShareState(ctx, node, wireKey(key))
	})
}

func (s stateStore) StateEpoch(ctx context.Context, key share.SPKey) (int32, bool, error) {
	var epoch int32
	var found bool
	err := s.call(ctx, key, func(sh *share.StateShard) error {
		sum, ok := sh.Summary(key)
		epoch, found = sum.StateEpoch, ok
		return nil
	}, func(node int32) error {
		sum, ok, err := s.n.cfg.Peers.ReadShareStateSummary(ctx, node, wireKey(key))
		epoch, found = sum.StateEpoch, ok
		return err
	})
	return epoch, found, err
}

// fenced maps a coordinator's fencing answer to share's errors, so the
// manager tells a newer leader's state from a failure.
func fenced(err error) error {
	switch {
	case errors.Is(err, wire.ErrFencedLeaderEpoch):
		return fmt.Errorf("%w: %w", share.ErrFencedLeaderEpoch, err)
	case errors.Is(err, wire.ErrFencedStateEpoch):
		return fmt.Errorf("%w: %w", share.ErrFencedStateEpoch, err)
	}
	return err
}

func snapshotOf(st wire.ShareState) share.Snapshot {
	snap := share.Snapshot{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, Start: share.Offset(st.Start)}
	for _, b := range st.Batches {
		snap.Batches = append(snap.Batches, share.StateBatch{First: share.Offset(b.First), Last: share.Offset(b.Last), State: share.State(b.State), Count: b.Count})
	}
	return snap
}

func stateOf(snap share.Snapshot) wire.ShareState {
	st := wire.ShareState{StateEpoch: snap.StateEpoch, LeaderEpoch: snap.LeaderEpoch, Start: int64(snap.Start)}
	for _, b := range snap.Batches {
		st.Batches = append(st.Batches, wire.ShareStateBatch{First: int64(b.First), Last: int64(b.Last), State: int8(b.State), Count: b.Count})
	}
	return st
}
