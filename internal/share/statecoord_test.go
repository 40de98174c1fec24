package share

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// memStateLog is a __share_group_state partition in memory: the records
// appended, replayed in order by a coordinator loaded after a move.
type memStateLog struct{ recs []StateRecord }

func (l *memStateLog) AppendState(_ context.Context, recs []StateRecord) error {
	l.recs = append(l.recs, recs...)
	return nil
}

func (l *memStateLog) ReplayState(fn func(key, value []byte)) error {
	for _, r := range l.recs {
		fn(r.Key, r.Value)
	}
	return nil
}

// TestStatePartitionFor: a share-partition's state lands on the
// __share_group_state partition a Kafka share coordinator would pick
// (abs("group:topicId:partition".hashCode()) % n, values computed with
// Java's String.hashCode arithmetic independently).
func TestStatePartitionFor(t *testing.T) {
	t.Parallel()
	var seq [16]byte
	for i := range seq {
		seq[i] = byte(i)
	}
	for _, tc := range []struct {
		key  SPKey
		n    int32
		want int32
	}{
		{SPKey{Group: "g", Partition: 0}, 50, 49},
		{SPKey{Group: "workers", TopicID: seq, Partition: 7}, 50, 10},
		{SPKey{Group: "workers", TopicID: seq, Partition: 7}, 1, 0},
	} {
		if got := StatePartitionFor(tc.key, tc.n); got != tc.want {
			t.Errorf("StatePartitionFor(%+v, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
}

// TestStateShardFencing: the share coordinator refuses a former leader's
// writes once a newer leader has read the state, refuses an older state
// epoch, and a coordinator loaded from the same log after a move holds the
// last written state and the fence.
func TestStateShardFencing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &memStateLog{}
	sh, err := LoadStateShard(log, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := SPKey{Group: "g", Partition: 3}
	if _, found, err := sh.Read(ctx, key, 0); err != nil || found {
		t.Fatalf("read of no state: found %v, %v", found, err)
	}
	if err := sh.Initialize(ctx, key, 1, 100); err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []int32{0, 1} {
		if err := sh.Initialize(ctx, key, epoch, 5); !errors.Is(err, ErrFencedStateEpoch) {
			t.Fatalf("initialize again at state epoch %d: %v", epoch, err)
		}
	}
	if _, _, err := sh.Read(ctx, key, 4); err != nil { // leader at epoch 4 takes over
		t.Fatal(err)
	}
	acked := Snapshot{StateEpoch: 1, LeaderEpoch: 4, Start: 102, Batches: []StateBatch{{First: 103, Last: 104, State: Acknowledged, Count: 1}}}
	steps := []struct {
		name string
		snap Snapshot
		want error
	}{
		{"former leader", Snapshot{StateEpoch: 1, LeaderEpoch: 3, Start: 150}, ErrFencedLeaderEpoch},
		{"older state epoch", Snapshot{StateEpoch: 0, LeaderEpoch: 4, Start: 150}, ErrFencedStateEpoch},
		{"current leader", acked, nil},
	}
	for _, st := range steps {
		if err := sh.Write(ctx, key, st.snap); !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: write: %v, want %v", st.name, err, st.want)
		}
	}

	moved, err := LoadStateShard(log, nil) // the state partition's new leader
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := moved.Read(ctx, key, 3); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("a former leader's read after the move: %v", err)
	}
	got, found, err := moved.Read(ctx, key, 5)
	if err != nil || !found || got.Start != acked.Start || !slices.Equal(got.Batches, acked.Batches) || got.LeaderEpoch != 5 {
		t.Fatalf("after the move: %+v found %v err %v, want %+v at leader epoch 5", got, found, err, acked)
	}
	if sum, ok := moved.Summary(key); !ok || sum.Start != 102 || sum.Done != 2 || sum.LeaderEpoch != 5 {
		t.Fatalf("summary %+v %v", sum, ok)
	}
	if err := moved.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	again, _ := LoadStateShard(log, nil)
	if _, found, _ := again.Read(ctx, key, 6); found {
		t.Fatal("deleted state read back after a reload")
	}
}

// TestStateShardResetFences: an admin's reset (an initialize at the next
// state epoch) or delete of a share-partition's state fences the window a
// leader still holds: its next write is refused with FENCED_STATE_EPOCH
// (it reloads), not written back over the reset.
func TestStateShardResetFences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sh, err := LoadStateShard(&memStateLog{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := SPKey{Group: "g", Partition: 1}
	if err := sh.Initialize(ctx, key, 0, 0); err != nil {
		t.Fatal(err)
	}
	window := Snapshot{StateEpoch: 0, LeaderEpoch: 2, Start: 10} // the leader's: ten records accepted
	if _, _, err := sh.Read(ctx, key, 2); err != nil {
		t.Fatal(err)
	}
	if err := sh.Write(ctx, key, window); err != nil {
		t.Fatal(err)
	}
	if err := sh.Initialize(ctx, key, 1, 0); err != nil { // AlterShareGroupOffsets to 0
		t.Fatal(err)
	}
	if err := sh.Write(ctx, key, window); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("the leader's stale window written after a reset: %v", err)
	}
	if sum, ok := sh.Summary(key); !ok || sum.Start != 0 || sum.StateEpoch != 1 || sum.LeaderEpoch != 2 {
		t.Fatalf("after the reset: %+v %v, want start 0 at state epoch 1, leader epoch 2 kept", sum, ok)
	}
	if err := sh.Delete(ctx, key); err != nil { // DeleteShareGroupOffsets
		t.Fatal(err)
	}
	window.StateEpoch = 1
	if err := sh.Write(ctx, key, window); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("the leader's stale window written after a delete: %v", err)
	}
	if _, ok := sh.Summary(key); ok {
		t.Fatal("a stale write brought deleted state back")
	}
}
