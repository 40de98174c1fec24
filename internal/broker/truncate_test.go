package broker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/vfs"
)

// TestTruncateRebuildsProducerState: after a truncation (a follower after
// a leader change), the retry of an idempotent batch that was truncated
// away is appended again at the new end — not answered as a duplicate at
// an offset that no longer holds it — and roll snapshots above the new end
// are deleted, so a restart does not bring the old state back.
func TestTruncateRebuildsProducerState(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1, Configs: map[string]string{ConfigSegmentBytes: "200"}})
		p, _ := b.Partition("t", 0)
		ctx := context.Background()
		const pid = producer.ID(7)
		for seq := range int32(8) {
			if _, err := p.Append(ctx, idempotent(t, pid, seq, 1), AcksLeader); err != nil {
				t.Fatal(err)
			}
		}
		snapDir := filepath.Join(dir, producerStateDir)
		p.WaitSnapshots() // roll snapshots are written in the background
		if snaps := partition.RollSnapshots(fs, snapDir, p.TopicID(), p.ID()); len(snaps) == 0 || snaps[len(snaps)-1].At <= 3 {
			t.Fatalf("roll snapshots %v: want one above offset 3", snaps)
		}
		if err := p.TruncateTo(3); err != nil {
			t.Fatal(err)
		}
		for _, s := range partition.RollSnapshots(fs, snapDir, p.TopicID(), p.ID()) {
			if s.At > 3 {
				t.Fatalf("roll snapshot %s above the new end survived", s.Name)
			}
		}
		res, err := p.Append(ctx, idempotent(t, pid, 3, 1), AcksLeader)
		if err != nil {
			t.Fatalf("retry of the truncated seq 3: %v", err)
		}
		if res.Duplicate || res.BaseOffset != 3 {
			t.Fatalf("retry of the truncated seq 3: duplicate=%v at %d, want a fresh append at 3", res.Duplicate, res.BaseOffset)
		}
		if res, err := p.Append(ctx, idempotent(t, pid, 2, 1), AcksLeader); err != nil || !res.Duplicate || res.BaseOffset != 2 {
			t.Fatalf("retry of seq 2 (kept): %+v, %v; want a duplicate at 2", res, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, dir)
		defer b.Close()
		p, _ = b.Partition("t", 0)
		if res, err := p.Append(ctx, idempotent(t, pid, 4, 1), AcksLeader); err != nil || res.BaseOffset != 4 {
			t.Fatalf("after a restart, seq 4: %+v, %v; want offset 4", res, err)
		}
		if _, err := p.Append(ctx, idempotent(t, pid, 9, 1), AcksLeader); err == nil || !strings.Contains(err.Error(), "sequence") {
			t.Fatalf("a gap in sequences after the restart: %v", err)
		}
	})
}
