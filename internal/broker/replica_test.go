package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestPartitionRoles: a partition starts as its own leader at epoch 0; as
// a follower it refuses produces and consumer reads (NOT_LEADER_OR_FOLLOWER)
// and reports the new epoch; led again at a later epoch it stamps that
// epoch on its batches and answers OffsetForLeaderEpoch with it; an older
// epoch is fenced.
func TestPartitionRoles(t *testing.T) {
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
	p, _ := b.Partition("t", 0)
	ctx := context.Background()
	if p.Role() != RoleLeader || p.LeaderEpoch() != 0 || p.Leader() != b.NodeID() || len(p.ISR()) != 1 {
		t.Fatalf("new partition: %v at epoch %d, leader %d, isr %v", p.Role(), p.LeaderEpoch(), p.Leader(), p.ISR())
	}
	if _, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll); err != nil {
		t.Fatal(err)
	}

	if err := p.BecomeFollower(5, 2, []NodeID{0, 2}, []NodeID{2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksLeader); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce to a follower: %v, want ErrNotLeader", err)
	}
	if _, err := p.Read(0, 1<<20); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("consumer read from a follower: %v, want ErrNotLeader", err)
	}
	if p.LeaderEpoch() != 5 || p.Leader() != 2 {
		t.Fatalf("follower: epoch %d, leader %d", p.LeaderEpoch(), p.Leader())
	}

	if err := p.BecomeLeader(6, []NodeID{0, 2}, []NodeID{0}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := p.Read(res.BaseOffset, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := record.ParseHeader(rr.Batches); h.LeaderEpoch != 6 {
		t.Fatalf("a batch appended at epoch 6 carries epoch %d", h.LeaderEpoch)
	}
	if e, o := p.EndOffsetForEpoch(0); e != 0 || o != 1 {
		t.Fatalf("EndOffsetForEpoch(0) = (%d, %d), want (0, 1)", e, o)
	}
	if e, o := p.EndOffsetForEpoch(6); e != 6 || o != 2 {
		t.Fatalf("EndOffsetForEpoch(6) = (%d, %d), want (6, 2)", e, o)
	}
	if err := p.BecomeLeader(4, []NodeID{0}, []NodeID{0}); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("an older epoch: %v, want ErrFencedLeaderEpoch", err)
	}
}

// TestOffsetsPartitionIsKafkas: a group maps to the __consumer_offsets
// partition Kafka picks (values from Java's "…".hashCode()).
func TestOffsetsPartitionIsKafkas(t *testing.T) {
	for _, c := range []struct {
		group string
		want  PartitionID
	}{
		{"", 0},
		{"a", 97 % 50},                  // "a".hashCode() = 97
		{"group", 98629247 % 50},        // positive
		{"console-consumer-1", 24},      // 35782224 % 50
		{"polygenelubricants", 0},       // hashCode is MinInt32: Utils.abs maps it to 0
		{"日本", (26085*31 + 26412) % 50}, // UTF-16 code units
	} {
		if got := offsetsPartition(c.group, 50); got != c.want {
			t.Errorf("offsetsPartition(%q, 50) = %d, want %d", c.group, got, c.want)
		}
	}
}
