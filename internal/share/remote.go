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
	// StateEpoch returns key's state epoch, false if it has no state
	// (ReadShareGroupStateSummary: it neither records nor checks a
	// leader epoch).
	StateEpoch(ctx context.Context, key SPKey) (int32, bool, error)
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
	e.p, e.leaderEpoch, e.admitted = Restore(cfg.Partition, snap), epoch, nil
	return e, nil
}

// persistRemoteLocked writes p as e's state through its coordinator. A
// fenced write marks e stale: a newer leader owns the share-partition.
func (m *Manager) persistRemoteLocked(ctx context.Context, e *entry, p *Partition) error {
	snap := p.Snapshot()
	snap.LeaderEpoch = e.leaderEpoch
	if err := m.store.Save(ctx, e.key, snap); err != nil {
		// A newer leader owns the share-partition, or an admin reset or
		// deleted its state (a new state epoch, or none): the next use
		// reloads it (Kafka's leader drops a share-partition fenced so).
		if errors.Is(err, ErrFencedLeaderEpoch) || errors.Is(err, ErrFencedStateEpoch) {
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

// A share-partition leader must not serve a window an admin has reset or
// deleted at the share coordinator (AlterShareGroupOffsets,
// DeleteShareGroupOffsets; on a cluster the group's coordinator writes
// them, maybe on another node). Its stale writes are fenced (a reset
// initializes the state at a new state epoch; a write for deleted state
// is refused), but a fetch writes nothing, so a new member would be handed
// records from the old window. Both APIs need an empty group, so every
// member that fetches after one is new to the leader: admitRemote checks
// the coordinator's state epoch once per member and share-partition (the
// first acquisition by a member since the window was loaded or since the
// member's share session here closed), and reloads the window if it
// changed. The fetch path pays one map lookup; the coordinator is asked
// once per member and share-partition, not per fetch.

// isAdmitted reports whether member's acquisitions from e's window
// checked its state epoch already; e.mu is held.
func (e *entry) isAdmitted(member string) bool {
	_, ok := e.admitted[member]
	return ok
}

// admitRemote returns e ready for member's acquisitions: if member has not
// fetched from e's window before, the window is checked against the
// coordinator's state epoch and reloaded (from the reset or
// share.auto.offset.reset) if it is stale.
func (m *Manager) admitRemote(ctx context.Context, e *entry, member string) (*entry, error) {
	e.mu.Lock()
	_, ok := e.admitted[member]
	loaded := int32(-1) // a window a failed reload left empty: reload it
	if e.p != nil {
		loaded = e.p.stateEpoch
	}
	e.mu.Unlock()
	if ok {
		return e, nil
	}
	epoch, found, err := m.store.StateEpoch(ctx, e.key)
	if err != nil {
		return nil, fmt.Errorf("share: check the state epoch of %s %s-%d: %w", e.key.Group, e.tp.Topic, e.tp.Partition, err)
	}
	if !found || epoch != loaded {
		e.mu.Lock()
		if e.p == nil || e.p.stateEpoch == loaded {
			e.leaderEpoch = staleEpoch
		}
		e.mu.Unlock()
		if e, err = m.open(ctx, e.key.Group, e.tp); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	if e.admitted == nil {
		e.admitted = map[string]struct{}{}
	}
	e.admitted[member] = struct{}{}
	e.mu.Unlock()
	return e, nil
}

// Forget makes this node reload a share-partition's window at its next
// use (its state was reset or deleted at the coordinator by this node).
func (m *Manager) Forget(group string, tp TopicPartition) {
	key := SPKey{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}
	m.mu.Lock()
	e := m.mu.parts[key]
	m.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	e.leaderEpoch = staleEpoch
	e.mu.Unlock()
}
