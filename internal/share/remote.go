package share

import (
	"context"
	"errors"
	"fmt"
)

// On a cluster a share-partition lives on its data partition's leader
// (the Manager there), and its persisted state with the share coordinator
// of its __share_group_state partition (a StateShard, on that partition's
// leader, maybe another node). The Manager reaches the coordinators
// through a StateStore: it loads a share-partition's state on first use and
// again whenever the data partition's leader epoch changed (a leadership
// move, here or away and back), and writes every change that ends a
// delivery before it answers, tagged with the leader epoch it loaded at, so
// a former leader's late writes are refused (ErrFencedLeaderEpoch) once
// the new leader has read the state.

// StateStore is the share coordinators as a share-partition leader calls
// them (the node implements it over StateShards here and the
// share-coordinator RPCs to other nodes).
type StateStore interface {
	// Load returns key's state for the leader at leaderEpoch
	// (ReadShareGroupState), false if it has none; it fences older leaders.
	Load(ctx context.Context, key SPKey, leaderEpoch int32) (Snapshot, bool, error)
	// Initialize sets key's state to snap's start and state epoch
	// (InitializeShareGroupState).
	Initialize(ctx context.Context, key SPKey, snap Snapshot) error
	// Save replaces key's state (WriteShareGroupState), durable on return.
	Save(ctx context.Context, key SPKey, snap Snapshot) error
	// Remove forgets key's state (DeleteShareGroupState).
	Remove(ctx context.Context, key SPKey) error
}

// LeaderEpochs is what a cluster's Host adds: the leader epoch of a
// partition this node leads, or an error (the node's not-leader error)
// if it does not lead it.
type LeaderEpochs interface {
	LeaderEpoch(tp TopicPartition) (int32, error)
}

// staleEpoch marks an entry whose state a newer leader owns: the next use
// reloads it.
const staleEpoch = -2

func (m *Manager) leaderEpoch(tp TopicPartition) (int32, error) {
	le, ok := m.host.(LeaderEpochs)
	if !ok {
		return 0, errors.New("share: a Manager with a StateStore needs a Host with leader epochs")
	}
	return le.LeaderEpoch(tp)
}

// openRemote is open on a cluster: the share-partition of group on tp,
// which this node must lead, loaded from its coordinator unless it is
// already loaded at the current leader epoch; a share-partition with no
// state is initialized by share.auto.offset.reset.
func (m *Manager) openRemote(ctx context.Context, group string, tp TopicPartition) (*entry, error) {
	epoch, err := m.leaderEpoch(tp)
	if err != nil {
		return nil, err
	}
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e, ok := m.mu.parts[key]
	if !ok {
		e = &entry{key: key, tp: tp}
		m.mu.parts[key] = e
	}
	m.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.p != nil && e.leaderEpoch == epoch {
		return e, nil
	}
	e.p = nil // a former reign's locks end here: its records are available again
	cfg := m.config(group)
	snap, found, err := m.store.Load(ctx, key, epoch)
	if err != nil {
		return nil, fmt.Errorf("share: load %s %s-%d: %w", group, tp.Topic, tp.Partition, err)
	}
	if !found {
		logStart, hw, err := m.host.Bounds(tp)
		if err != nil {
			return nil, err
		}
		start := hw
		if cfg.AutoOffsetReset == "earliest" {
			start = logStart
		}
		init := NewPartition(cfg.Partition, start).Snapshot()
		init.LeaderEpoch = epoch
		if err := m.store.Initialize(ctx, key, init); err != nil && !errors.Is(err, ErrFencedStateEpoch) { // fenced: initialized first elsewhere
			return nil, fmt.Errorf("share: initialize %s %s-%d: %w", group, tp.Topic, tp.Partition, err)
		}
		// Read it back: the state a concurrent initializer may have set
		// first, with this leader's epoch recorded.
		if snap, found, err = m.store.Load(ctx, key, epoch); err != nil {
			return nil, fmt.Errorf("share: load %s %s-%d: %w", group, tp.Topic, tp.Partition, err)
		}
		if !found {
			return nil, fmt.Errorf("share: %s %s-%d: its state vanished after it was initialized", group, tp.Topic, tp.Partition)
		}
	}
	e.p, e.leaderEpoch = Restore(cfg.Partition, snap), epoch
	return e, nil
}

// persistRemoteLocked writes p as e's state through its coordinator. A
// fenced write marks e stale: a newer leader owns the share-partition.
func (m *Manager) persistRemoteLocked(ctx context.Context, e *entry, p *Partition) error {
	snap := p.Snapshot()
	snap.LeaderEpoch = e.leaderEpoch
	if err := m.store.Save(ctx, e.key, snap); err != nil {
		if errors.Is(err, ErrFencedLeaderEpoch) {
			e.leaderEpoch = staleEpoch
		}
		return fmt.Errorf("share: persist %s %s-%d: %w", e.key.Group, e.tp.Topic, e.tp.Partition, err)
	}
	return nil
}

// dropStale forgets e if this node no longer leads its partition at the
// epoch e was loaded at (a cluster's leadership moved): its locks are the
// new leader's business now, and expiring them here would only be
// refused. It reports whether e was dropped.
func (m *Manager) dropStale(e *entry) bool {
	if m.store == nil {
		return false
	}
	epoch, err := m.leaderEpoch(e.tp)
	e.mu.Lock()
	stale := e.p != nil && (err != nil || epoch != e.leaderEpoch)
	e.mu.Unlock()
	if !stale {
		return false
	}
	m.mu.Lock()
	if m.mu.parts[e.key] == e {
		delete(m.mu.parts, e.key)
	}
	m.mu.Unlock()
	return true
}
