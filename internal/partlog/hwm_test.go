package partlog

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWaitEndSeparateFromHighWatermark: in replicated mode an append wakes
// those waiting on the end offset (a leader serving followers) but not
// those waiting on the high watermark (consumers), which SetHighWatermark
// wakes.
func TestWaitEndSeparateFromHighWatermark(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{ReplicatedHighWatermark: true})
		ends, hws := l.WaitEnd(), l.Wait()
		mustAppend(t, l, batch(t, 1, "a"))
		if !closed(ends) {
			t.Fatal("an append did not wake the end-offset waiters")
		}
		if closed(hws) {
			t.Fatal("an append woke the high-watermark waiters in replicated mode")
		}
		if l.HighWatermark() != 0 {
			t.Fatalf("high watermark %d before anyone set it", l.HighWatermark())
		}
		l.SetHighWatermark(1)
		if !closed(hws) || l.HighWatermark() != 1 {
			t.Fatalf("SetHighWatermark(1): woken %v, high watermark %d", closed(hws), l.HighWatermark())
		}
		ends = l.WaitEnd()
		if err := l.TruncateTo(0); err != nil {
			t.Fatal(err)
		}
		if !closed(ends) {
			t.Fatal("a truncation did not wake the end-offset waiters")
		}
	})
}

// TestHighWatermarkCheckpoint: in replicated mode the high watermark
// survives a restart at its checkpoint — clean (Close writes it) or not
// (the last CheckpointHighWatermark) — instead of jumping to the end and
// exposing records no quorum was known to hold; in automatic mode it is the
// end.
func TestHighWatermarkCheckpoint(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		cfg := Config{ReplicatedHighWatermark: true}
		l, err := Open(fs, dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			mustAppend(t, l, batch(t, 1, fmt.Sprint("v", i)))
		}
		l.SetHighWatermark(4)
		if err := l.CheckpointHighWatermark(); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(6)
		abandon(l) // killed: the checkpoint says 4
		l, err = Open(fs, dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if hw := l.HighWatermark(); hw != 4 {
			t.Fatalf("after a crash the high watermark is %d, want the checkpointed 4", hw)
		}
		if got := values(readAll(t, l, 0)); len(got) != 4 {
			t.Fatalf("readers see %d records, want 4", len(got))
		}
		l.SetHighWatermark(7)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, fs, dir, cfg)
		if hw := l.HighWatermark(); hw != 7 {
			t.Fatalf("after a clean restart the high watermark is %d, want 7", hw)
		}
		l.Close()
		l = mustOpen(t, fs, dir, Config{})
		if hw := l.HighWatermark(); hw != 10 {
			t.Fatalf("automatic mode: high watermark %d, want the end 10", hw)
		}
	})
}

// TestFsyncGateInReplicatedMode: a high watermark set past a batch still
// waiting for the fsync its flush policy asks for stops short of it, and
// reaches it when the fsync completes.
func TestFsyncGateInReplicatedMode(t *testing.T) {
	fs := vfs.NewMem()
	l := mustOpen(t, fs, "/d", Config{FlushMessages: 1, ReplicatedHighWatermark: true})
	mustAppend(t, l, batch(t, 1, "a"))
	l.SetHighWatermark(1)

	entered, free := holdFirstLogSync(t, fs)
	done := make(chan error, 1)
	appendReachesSync(t, l, batch(t, 1, "b"), entered, done)
	l.SetHighWatermark(2) // every replica has it, but it is not on this disk yet
	if hw := l.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d passes a batch waiting for its fsync", hw)
	}
	free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if hw := l.HighWatermark(); hw != record.Offset(2) {
		t.Fatalf("high watermark %d after the fsync, want 2", hw)
	}
}

// TestAppendAsFollower: a follower appends what its leader's log holds as
// it is — same bytes, offsets and partition leader epochs — and its epoch
// cache learns the leader's epochs from the batches; a batch below its end
// is refused, and a gap (a compacted leader) is kept.
func TestAppendAsFollower(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		leader := mustOpen(t, fs, dir+"-leader", Config{})
		for _, step := range []struct {
			epoch record.Epoch
			n     int
		}{{1, 3}, {3, 2}} {
			if err := leader.AssignEpoch(step.epoch); err != nil {
				t.Fatal(err)
			}
			for i := range step.n {
				mustAppend(t, leader, batch(t, 1, fmt.Sprintf("e%d-%d", step.epoch, i), "x"))
			}
		}
		fetched, err := leader.ReadUpTo(0, 1<<20, leader.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		follower := mustOpen(t, fs, dir+"-follower", Config{ReplicatedHighWatermark: true})
		pending, err := follower.AppendAsFollower(fetched)
		if err == nil {
			err = pending.Wait()
		}
		if err != nil {
			t.Fatal(err)
		}
		if follower.LogEndOffset() != leader.LogEndOffset() {
			t.Fatalf("follower ends at %d, leader at %d", follower.LogEndOffset(), leader.LogEndOffset())
		}
		copied, err := follower.ReadUpTo(0, 1<<20, follower.LogEndOffset())
		if err != nil || string(copied) != string(fetched) {
			t.Fatalf("the follower's bytes differ from the leader's (%v)", err)
		}
		if got, want := fmt.Sprint(follower.epochs.entries), fmt.Sprint(leader.epochs.entries); got != want {
			t.Fatalf("follower epoch cache %s, leader's %s", got, want)
		}
		if _, err := follower.AppendAsFollower(fetched); !errors.Is(err, ErrOffsetsOutOfOrder) {
			t.Fatalf("a batch below the end: %v, want ErrOffsetsOutOfOrder", err)
		}
		gap := batch(t, 1, "after-a-gap")
		record.SetBaseOffset(gap, follower.LogEndOffset()+5)
		if _, err := follower.AppendAsFollower(gap); err != nil {
			t.Fatal(err)
		}
		if end := follower.LogEndOffset(); end != leader.LogEndOffset()+6 {
			t.Fatalf("after a batch past a gap the end is %d, want %d", end, leader.LogEndOffset()+6)
		}
	})
}
