package share

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"unicode/utf16"
)

// The share coordinator (KIP-932) of a cluster: the leader of one
// __share_group_state partition owns the persisted state of every
// share-partition whose key hashes there, and serves the share-partition
// leaders' reads and writes of it (the RPCs InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary; internal/kafka decodes them). A StateShard
// is one such partition's coordinator; the node loads one when it gains
// the partition's leadership and drops it when it loses it
// (coordlog.Shards), so the state moves with the partition.
//
// Fencing, as Kafka's share coordinator: every read carries the reader's
// leader epoch of the data partition; a read with a newer epoch than the
// stored one records it (durably: a new leader fences the old one before
// it serves anything), and a read or a write with an older one fails with
// ErrFencedLeaderEpoch. A write or an initialize with an older state epoch
// fails with ErrFencedStateEpoch.

var (
	// ErrFencedLeaderEpoch: the caller's leader epoch of the data
	// partition is older than the one the state was last read or written
	// with (FENCED_LEADER_EPOCH): a newer leader owns the share-partition.
	ErrFencedLeaderEpoch = errors.New("share: fenced leader epoch")
	// ErrFencedStateEpoch: the caller's state epoch is older than the
	// stored one (FENCED_STATE_EPOCH).
	ErrFencedStateEpoch = errors.New("share: fenced state epoch")
)

// StateLog is the __share_group_state partition a StateShard keeps its
// records in (coordlog.Store over the partition, as the node provides it).
type StateLog interface {
	// AppendState appends records with acks=all.
	AppendState(ctx context.Context, recs []StateRecord) error
	// ReplayState calls fn on every record, in order.
	ReplayState(fn func(key, value []byte)) error
}

// StateShard is the share coordinator of one __share_group_state
// partition. Its methods are safe for concurrent use; writes of one shard
// are serialised (each is a read-check-append of one key).
type StateShard struct {
	log StateLog
	mu  struct {
		sync.Mutex
		states map[SPKey]*storedState
	}
}

type storedState struct {
	snap  Snapshot
	epoch uint16 // the snapshot epoch of the last record written
}

// LoadStateShard replays a __share_group_state partition into its
// coordinator.
func LoadStateShard(log StateLog, logger *slog.Logger) (*StateShard, error) {
	if logger == nil {
		logger = slog.Default()
	}
	loaded, err := replay(log, logger)
	if err != nil {
		return nil, err
	}
	s := &StateShard{log: log}
	s.mu.states = make(map[SPKey]*storedState, len(loaded))
	for k, snap := range loaded {
		s.mu.states[k] = &storedState{snap: snap}
	}
	return s, nil
}

// StatePartitionFor is the __share_group_state partition holding key's
// state: Kafka's abs("group:topicId:partition".hashCode()) % n, the topic
// id in Kafka's Uuid text (URL-safe base64 without padding), Java's
// String.hashCode over UTF-16 code units and Utils.abs (MinInt32 maps to
// 0), so a share-partition lands where a Kafka share coordinator puts it.
func StatePartitionFor(key SPKey, n int32) int32 {
	if n <= 0 {
		return 0
	}
	s := key.Group + ":" + base64.RawURLEncoding.EncodeToString(key.TopicID[:]) + ":" + strconv.Itoa(int(key.Partition))
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

// writeLocked persists snap as key's state (a ShareSnapshot record) and
// installs it.
func (s *StateShard) writeLocked(ctx context.Context, key SPKey, snap Snapshot) error {
	st := s.mu.states[key]
	var epoch uint16
	if st != nil {
		epoch = st.epoch + 1
	}
	k := EncodeKey(Key{Type: KeySnapshot, Group: key.Group, TopicID: key.TopicID, Partition: key.Partition})
	if err := s.log.AppendState(ctx, []StateRecord{{Key: k, Value: EncodeSnapshot(snap, epoch)}}); err != nil {
		return fmt.Errorf("share: write the state of %s partition %d: %w", key.Group, key.Partition, err)
	}
	s.mu.states[key] = &storedState{snap: snap, epoch: epoch}
	return nil
}

// Initialize sets a share-partition's state to start at start with
// stateEpoch (InitializeShareGroupState): refused with ErrFencedStateEpoch
// if there is state at this state epoch or a newer one already, so two
// leaders racing to initialize never overwrite acknowledged state (a reset
// initializes with a higher state epoch).
func (s *StateShard) Initialize(ctx context.Context, key SPKey, stateEpoch int32, start Offset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	leaderEpoch := int32(-1)
	if st := s.mu.states[key]; st != nil {
		if st.snap.StateEpoch >= stateEpoch {
			return fmt.Errorf("%w: %d, the state has %d", ErrFencedStateEpoch, stateEpoch, st.snap.StateEpoch)
		}
		leaderEpoch = st.snap.LeaderEpoch
	}
	return s.writeLocked(ctx, key, Snapshot{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch, Start: start})
}

// Read returns a share-partition's state for the leader of its data
// partition at leaderEpoch (ReadShareGroupState), and false if it has
// none. A newer leader epoch is recorded before the state is returned, so
// the previous leader's writes fail from then on.
func (s *StateShard) Read(ctx context.Context, key SPKey, leaderEpoch int32) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.states[key]
	if st == nil {
		return Snapshot{}, false, nil
	}
	switch {
	case leaderEpoch < st.snap.LeaderEpoch:
		return Snapshot{}, false, fmt.Errorf("%w: %d < %d", ErrFencedLeaderEpoch, leaderEpoch, st.snap.LeaderEpoch)
	case leaderEpoch > st.snap.LeaderEpoch:
		next := st.snap
		next.LeaderEpoch = leaderEpoch
		if err := s.writeLocked(ctx, key, next); err != nil {
			return Snapshot{}, false, err
		}
	}
	return s.mu.states[key].snap, true, nil
}

// Write replaces a share-partition's state with snap, written by the
// leader of its data partition at snap.LeaderEpoch (WriteShareGroupState;
// Strand's leaders send the whole window, not a delta). A write for a
// share-partition with no state is refused with ErrFencedStateEpoch: a
// leader initializes the state before it writes any, so its state was
// deleted since (DeleteShareGroupOffsets, DeleteGroups) and the leader's
// window is stale; it reloads, as after a reset's new state epoch.
func (s *StateShard) Write(ctx context.Context, key SPKey, snap Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.states[key]
	switch {
	case st == nil:
		return fmt.Errorf("%w: %s partition %d has no state (deleted)", ErrFencedStateEpoch, key.Group, key.Partition)
	case snap.LeaderEpoch < st.snap.LeaderEpoch:
		return fmt.Errorf("%w: %d < %d", ErrFencedLeaderEpoch, snap.LeaderEpoch, st.snap.LeaderEpoch)
	case snap.StateEpoch < st.snap.StateEpoch:
		return fmt.Errorf("%w: %d < %d", ErrFencedStateEpoch, snap.StateEpoch, st.snap.StateEpoch)
	}
	return s.writeLocked(ctx, key, snap)
}

// Delete forgets a share-partition's state (DeleteShareGroupState): a
// tombstone.
func (s *StateShard) Delete(ctx context.Context, key SPKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := EncodeKey(Key{Type: KeySnapshot, Group: key.Group, TopicID: key.TopicID, Partition: key.Partition})
	if err := s.log.AppendState(ctx, []StateRecord{{Key: k}}); err != nil {
		return fmt.Errorf("share: delete the state of %s partition %d: %w", key.Group, key.Partition, err)
	}
	delete(s.mu.states, key)
	return nil
}

// StateSummary is what ReadShareGroupStateSummary answers of a
// share-partition.
type StateSummary struct {
	StateEpoch, LeaderEpoch int32
	Start                   Offset
	Done                    int // acknowledged or archived offsets at or past Start
}

// Summary returns a share-partition's summary and whether it has state
// (ReadShareGroupStateSummary: it neither records nor checks an epoch).
func (s *StateShard) Summary(key SPKey) (StateSummary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.mu.states[key]
	if st == nil {
		return StateSummary{}, false
	}
	done := Restore(Config{MaxRecordLocks: 1 << 30}, st.snap).Stats().Done
	return StateSummary{StateEpoch: st.snap.StateEpoch, LeaderEpoch: st.snap.LeaderEpoch, Start: st.snap.Start, Done: done}, true
}

// Keys lists the share-partitions of group this shard holds state for.
func (s *StateShard) Keys(group string) []SPKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SPKey
	for k := range s.mu.states {
		if k.Group == group {
			out = append(out, k)
		}
	}
	return out
}
