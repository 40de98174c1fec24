package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/wire"
)

// Share groups on a cluster, as Kafka 4.2 spreads them:
//
//   - __share_group_state has as many partitions as __consumer_offsets;
//     the leader of the partition a share-partition's key
//     ("group:topicId:partition") hashes to is its share coordinator
//     (share.StateShard, loaded and dropped with the leadership through
//     coordlog.Shards, like the group and transaction coordinators) and
//     serves the share-coordinator RPCs (83–87, internal/kafka) to the
//     other nodes.
//   - A share-partition lives on its data partition's leader (the node's
//     share.Manager), which reads its state from the coordinator on first
//     use and after every leadership change, and writes every change that
//     ends a delivery there before it answers (clusterStateStore).
//   - Membership (ShareGroupHeartbeat, ShareGroupDescribe) is served by
//     the group's coordinator, the leader of its __consumer_offsets
//     partition, as for KIP-848 groups; it is held in memory there.
//
// Group configs are not served on a cluster yet (Strand keeps them in
// __share_group_state on one node; a cluster would need them in its
// metadata, as Kafka keeps them): every group has the defaults.

// errShareConfigsClustered refuses group configs on a cluster.
var errShareConfigsClustered = errors.New("broker: share-group configs are not served on a cluster yet")

// openClusterShare starts a cluster member's share groups: the
// share-partition manager over the partitions it leads, and share
// coordinators as it comes to lead __share_group_state partitions.
func (b *Broker) openClusterShare() error {
	h := &clusterShareHost{shareHost{b: b}}
	coord, err := share.NewCoordinator(h, b.cfg.Now, share.GroupDefaults{Partition: share.Defaults})
	if err != nil {
		return err
	}
	mgr, err := share.NewManager(share.ManagerConfig{Host: h, Logger: b.logger, Now: b.cfg.Now, Config: coord.GroupConfig,
		Store: clusterStateStore{b}})
	if err != nil {
		return err
	}
	coord.SetManager(mgr)
	states := &coordlog.Shards[*Partition, *share.StateShard]{What: "share coordinator", Logger: b.logger,
		Load: func(_ int32, p *Partition) (*share.StateShard, error) {
			return share.LoadStateShard(stateLog{b.coordStore(p)}, b.logger)
		},
		Stop: func(*share.StateShard) {}, // holds no goroutine: its next append fails once leadership moved
	}
	b.share = &ShareNode{Coordinator: coord, Manager: mgr, Sessions: share.NewSessions(), states: states}
	return nil
}

// syncShareStates runs a share coordinator for each __share_group_state
// partition this member leads and stops the others (syncCoordinators
// calls it).
func (b *Broker) syncShareStates() {
	if b.share == nil || b.share.states == nil {
		return
	}
	b.share.states.Sync(b.ledPartitions(share.StateTopic), b.isClosed, b.stop, b.node.Host.Go)
}

// clusterShareStateSpec is a cluster's __share_group_state: as many
// partitions as __consumer_offsets, replicated on up to three nodes, and
// (with three) min.insync.replicas 2, Kafka's
// share.coordinator.state.topic.min.isr: a state write acknowledged by one
// replica alone could die with it, undoing an acknowledgement.
func (b *Broker) clusterShareStateSpec() TopicSpec {
	spec := shareStateTopicSpec()
	spec.Partitions = b.cfg.OffsetsTopicPartitions
	rf := int16(min(3, len(liveBrokers(b.meta.Image()))))
	spec.ReplicationFactor = rf
	spec.Configs[ConfigMinInsyncReplicas] = strconv.Itoa(int(min(rf, 2)))
	return spec
}

// shareStateNode returns the node leading the __share_group_state
// partition of key (its share coordinator) and the partition, creating the
// topic on first use as Kafka does.
func (b *Broker) shareStateNode(key share.SPKey) (NodeID, PartitionID, error) {
	t, err := b.Topic(share.StateTopic)
	if err != nil {
		if t, err = b.CreateTopic(b.clusterShareStateSpec()); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(share.StateTopic)
		}
		if err != nil {
			return -1, 0, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, share.StateTopic, err)
		}
	}
	k := PartitionID(share.StatePartitionFor(key, t.Partitions()))
	info := b.PartitionInfo(t, k)
	if info.Leader < 0 {
		return -1, k, fmt.Errorf("%w: %s-%d has no leader", ErrCoordinatorNotAvailable, share.StateTopic, k)
	}
	return info.Leader, k, nil
}

// ShareStateShard returns the share coordinator of key if this node runs
// it: ErrNotCoordinator if another node leads key's __share_group_state
// partition (or there is none yet), ErrCoordinatorLoading while this one
// replays it.
func (b *Broker) ShareStateShard(key share.SPKey) (*share.StateShard, error) {
	if b.share == nil || b.share.states == nil {
		return nil, fmt.Errorf("%w: share coordinators run on a cluster's members only", ErrNotCoordinator)
	}
	t, err := b.Topic(share.StateTopic)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist yet", ErrNotCoordinator, share.StateTopic)
	}
	k := share.StatePartitionFor(key, t.Partitions())
	sh, ok := b.share.states.Get(k)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: the state of %s is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, key.Group, share.StateTopic, k, b.cfg.NodeID)
	case sh == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, share.StateTopic, k)
	}
	return sh, nil
}

// stateLog is a __share_group_state partition as a StateShard's log.
type stateLog struct{ s *coordlog.Store }

func (l stateLog) AppendState(ctx context.Context, recs []share.StateRecord) error {
	rs := make([]coordlog.Record, len(recs))
	for i, r := range recs {
		rs[i] = coordlog.Record{Key: r.Key, Value: r.Value}
	}
	return l.s.Append(ctx, rs)
}

func (l stateLog) ReplayState(fn func(key, value []byte)) error {
	return l.s.Replay(func(r coordlog.Record) error {
		if r.Txn == nil || !r.Txn.Marker {
			fn(r.Key, r.Value)
		}
		return nil
	})
}

// clusterShareHost is share.Host on a cluster member: the share state is
// the share coordinators' (clusterStateStore), not replayed at start, and
// group configs are refused.
type clusterShareHost struct{ shareHost }

func (h *clusterShareHost) AppendState(context.Context, []share.StateRecord) error {
	return errShareConfigsClustered
}

func (h *clusterShareHost) ReplayState(func(key, value []byte)) error { return nil }

// LeaderEpoch is the leader epoch of a partition this node leads.
func (h *clusterShareHost) LeaderEpoch(tp share.TopicPartition) (int32, error) {
	p, err := h.partition(tp)
	if err != nil {
		return 0, err
	}
	if err := p.CheckLeader(); err != nil {
		return 0, err
	}
	return int32(p.LeaderEpoch()), nil
}

// clusterStateStore is share.StateStore over the share coordinators: the
// one on this node directly, another node's through its internal listener.
// A call that finds no coordinator ready (moving, loading, unreachable)
// tries again for up to shareStateRetry; the calls are idempotent (a
// write replaces the whole state, fenced by epochs).
type clusterStateStore struct{ b *Broker }

// shareStateRetry bounds the retries of one share-coordinator call: a
// coordinator move takes a leader election and a replay.
const shareStateRetry = 15 * time.Second

func (s clusterStateStore) call(ctx context.Context, key share.SPKey, local func(*share.StateShard) error, remote func(node int32) error) error {
	ctx, cancel := context.WithTimeout(ctx, shareStateRetry)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		node, _, err := s.b.shareStateNode(key)
		if err == nil {
			if node == s.b.cfg.NodeID {
				var sh *share.StateShard
				if sh, err = s.b.ShareStateShard(key); err == nil {
					err = local(sh)
				}
			} else {
				err = remote(int32(node))
			}
		}
		if err == nil || !retriableShareState(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-s.b.stop:
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// retriableShareState reports whether a share-coordinator call may succeed
// if tried again: the coordinator is moving, loading or out of reach, or
// its state partition lost its leader or in-sync replicas mid-write.
func retriableShareState(err error) bool {
	for _, e := range []error{ErrNotCoordinator, ErrCoordinatorLoading, ErrCoordinatorNotAvailable, ErrNotLeader, ErrNotEnoughReplicas,
		ErrNotEnoughReplicasAfterAppend, wire.ErrUnreachable, wire.ErrShareCoordinatorMoving} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func wireKey(k share.SPKey) wire.ShareKey {
	return wire.ShareKey{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

func (s clusterStateStore) Load(ctx context.Context, key share.SPKey, leaderEpoch int32) (share.Snapshot, bool, error) {
	var snap share.Snapshot
	var found bool
	err := s.call(ctx, key, func(sh *share.StateShard) (err error) {
		snap, found, err = sh.Read(ctx, key, leaderEpoch)
		return err
	}, func(node int32) error {
		st, ok, err := s.b.peers.ReadShareState(ctx, node, wireKey(key), leaderEpoch)
		snap, found = snapshotOf(st), ok
		return fencedShareState(err)
	})
	return snap, found, err
}

func (s clusterStateStore) Initialize(ctx context.Context, key share.SPKey, snap share.Snapshot) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Initialize(ctx, key, snap.StateEpoch, snap.Start)
	}, func(node int32) error {
		return fencedShareState(s.b.peers.InitializeShareState(ctx, node, wireKey(key), snap.StateEpoch, int64(snap.Start)))
	})
}

func (s clusterStateStore) Save(ctx context.Context, key share.SPKey, snap share.Snapshot) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Write(ctx, key, snap)
	}, func(node int32) error {
		done := share.Restore(share.Config{MaxRecordLocks: 1 << 30}, snap).Stats().Done
		return fencedShareState(s.b.peers.WriteShareState(ctx, node, wireKey(key), stateOf(snap), int32(done)))
	})
}

func (s clusterStateStore) Remove(ctx context.Context, key share.SPKey) error {
	return s.call(ctx, key, func(sh *share.StateShard) error {
		return sh.Delete(ctx, key)
	}, func(node int32) error {
		return s.b.peers.DeleteShareState(ctx, node, wireKey(key))
	})
}

// fencedShareState maps a coordinator's fencing answer to share's errors,
// so the manager tells a newer leader's state from a failure.
func fencedShareState(err error) error {
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
