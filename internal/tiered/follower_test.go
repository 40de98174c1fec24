package tiered

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// Each uploaded segment carries the snapshot its snapshotter gives for the
// segment's end, and a replica asking where to start below a leader's
// local start gets the end of the remote segment holding the offset just
// below it, that segment's snapshot, and the epoch entries up to there. A
// leader's local start the store does not reach is ErrOutOfRange.
func TestFollowerStartFromUploadedSnapshot(t *testing.T) {
	s := startS3(t)
	l := openLog(t, tempDir(t))
	fill(t, l, 60)
	if err := l.AssignEpoch(3); err != nil {
		t.Fatal(err)
	}
	fill(t, l, 60)
	tr := newTier(t, s)
	leader := tr.Partition("orders", "id1", 0, l)
	leader.SetSnapshotter(func(at record.Offset) ([]byte, error) { return fmt.Appendf(nil, "state@%d", at), nil })
	mustClaim(t, leader, 3)
	if _, err := leader.Upload(ctx); err != nil {
		t.Fatal(err)
	}
	segs := leader.Manifest().Segments
	if len(segs) < 4 {
		t.Fatalf("%d segments uploaded", len(segs))
	}
	for _, sg := range segs {
		if !sg.Snapshot {
			t.Fatalf("segment %d-%d uploaded without its snapshot", sg.Base, sg.Next)
		}
	}

	follower := tr.Partition("orders", "id1", 0, openLog(t, tempDir(t)))
	last := segs[len(segs)-1]
	for _, leaderStart := range []record.Offset{last.Next, last.Next - 1, segs[1].Next} {
		rs, err := follower.FollowerStart(ctx, leaderStart)
		if err != nil {
			t.Fatalf("start below a leader local start %d: %v", leaderStart, err)
		}
		i := 0
		for segs[i].Next < leaderStart {
			i++
		}
		if rs.At != segs[i].Next || string(rs.Snapshot) != fmt.Sprintf("state@%d", segs[i].Next) {
			t.Fatalf("leader local start %d: start at %d with snapshot %q, want %d and its segment's snapshot", leaderStart, rs.At, rs.Snapshot, segs[i].Next)
		}
		// The first 60 records were written in no epoch, the rest in 3.
		var want []EpochStart
		if rs.At > 60 {
			want = []EpochStart{{Epoch: 3, Start: 60}}
		}
		if got := rs.Epochs; len(got) != len(want) || len(want) > 0 && got[0] != want[0] {
			t.Fatalf("epochs up to %d: %+v, want %+v", rs.At, got, want)
		}
	}
	if _, err := follower.FollowerStart(ctx, last.Next+1); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("a leader local start past the store's end: %v, want ErrOutOfRange", err)
	}

	// The log starts there, with the epoch entries from the store.
	fl := openLog(t, tempDir(t))
	rs, err := follower.FollowerStart(ctx, last.Next)
	if err != nil {
		t.Fatal(err)
	}
	eps := make([]partlog.EpochStart, 0, len(rs.Epochs))
	for _, e := range rs.Epochs {
		eps = append(eps, partlog.EpochStart{Epoch: e.Epoch, Start: e.Start})
	}
	if err := fl.ResetToWithEpochs(rs.At, eps); err != nil {
		t.Fatal(err)
	}
	if fl.LogStartOffset() != rs.At || fl.LatestEpoch() != 3 {
		t.Fatalf("follower log starts at %d with latest epoch %d, want %d and 3", fl.LogStartOffset(), fl.LatestEpoch(), rs.At)
	}
}
