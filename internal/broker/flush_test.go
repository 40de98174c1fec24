package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/vfs"
)

// TestFlushEachSharesFsyncsAcrossProducers: on a flush.messages=1 topic,
// concurrent idempotent producers are each acknowledged only after an
// fsync, but the partition does not hold its lock through the fsync, so
// they share fsyncs (group commit).
func TestFlushEachSharesFsyncsAcrossProducers(t *testing.T) {
	t.Parallel()
	fs, p := durablePartition(t)
	var syncs atomic.Int64
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
			syncs.Add(1)
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	const producers, each = 8, 20
	var wg sync.WaitGroup
	for pid := range producers {
		wg.Go(func() {
			for seq := range each {
				if _, err := p.Append(context.Background(), idempotent(t, producer.ID(pid+1), int32(seq), 1), AcksAll); err != nil {
					t.Errorf("producer %d seq %d: %v", pid, seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if hw := p.HighWatermark(); hw != producers*each {
		t.Fatalf("high watermark %d, want %d", hw, producers*each)
	}
	if n := syncs.Load(); n >= producers*each {
		t.Fatalf("%d fsyncs for %d acknowledged appends: not grouped", n, producers*each)
	}
}

// TestFsyncFailureNeverAcknowledgesARetry: when the fsync behind a batch
// fails, the producer gets an error, and its retry of the same batch (which
// the producer state already knows) is not answered as a duplicate success:
// that batch is not on disk.
func TestFsyncFailureNeverAcknowledgesARetry(t *testing.T) {
	t.Parallel()
	fs, p := durablePartition(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Append(ctx, idempotent(t, 7, 0, 1), AcksAll); err != nil {
		t.Fatal(err)
	}
	fs.InjectError(vfs.ErrorOnce(vfs.OpSync, ".log", syscall.EIO))
	if _, err := p.Append(ctx, idempotent(t, 7, 1, 1), AcksAll); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose fsync fails: %v, want EIO", err)
	}
	for _, acks := range []Acks{AcksAll, AcksLeader} {
		if res, err := p.Append(ctx, idempotent(t, 7, 1, 1), acks); err == nil {
			t.Fatalf("retry with acks=%d acknowledged at offset %d after its fsync failed", acks, res.BaseOffset)
		}
	}
	if hw := p.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d: the unsynced batch became visible", hw)
	}
}

// durablePartition is partition 0 of a flush.messages=1 topic on a MemFS
// (returned for error injection), closed at cleanup.
func durablePartition(t *testing.T) (*vfs.MemFS, *Partition) {
	t.Helper()
	fs := vfs.NewMem()
	b := open(t, fs, "/d")
	t.Cleanup(func() { b.Close() })
	mustCreate(t, b, TopicSpec{Name: "durable", Partitions: 1, Configs: map[string]string{ConfigFlushMessages: "1"}})
	p, _ := b.Partition("durable", 0)
	return fs, p
}

// TestFlushEachAcknowledgesAfterFsync: on a flush.messages=1 topic every
// acknowledgement — acks=1 and acks=0 as much as acks=all — comes after
// the batch's fsync: when Append returns, the log has been synced and the
// high watermark covers the batch, and a power cut at that moment (a crash
// copy of the disk) keeps it.
func TestFlushEachAcknowledgesAfterFsync(t *testing.T) {
	t.Parallel()
	for _, acks := range []Acks{AcksAll, AcksLeader, AcksNone} {
		fs, p := durablePartition(t)
		var syncs atomic.Int64
		fs.InjectError(func(op vfs.Op, path string) error {
			if op == vfs.OpSync && strings.HasSuffix(path, ".log") {
				syncs.Add(1)
			}
			return nil
		})
		for i := range 3 {
			before := syncs.Load()
			res, err := p.Append(context.Background(), idempotent(t, 9, int32(i), 1), acks)
			if err != nil {
				t.Fatalf("acks=%d: %v", acks, err)
			}
			if syncs.Load() == before {
				t.Fatalf("acks=%d: append %d acknowledged before any fsync of the log", acks, i)
			}
			if hw := p.HighWatermark(); hw <= res.BaseOffset {
				t.Fatalf("acks=%d: high watermark %d does not cover the acknowledged offset %d", acks, hw, res.BaseOffset)
			}
			crashed := fs.CrashClone(vfs.CrashOptions{})
			b2 := open(t, crashed, "/d")
			p2, _ := b2.Partition("durable", 0)
			if end := p2.Log().LogEndOffset(); end != res.BaseOffset+1 {
				t.Fatalf("acks=%d: after a power cut the log ends at %d; offset %d was acknowledged", acks, end, res.BaseOffset)
			}
			if err := b2.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDurableWaitBehindHungFsync: on a flush.messages=1 topic whose disk
// stops answering an fsync, a producer queued behind the append that runs
// it gets its own request's timeout instead of hanging, and nothing is
// visible; once the disk answers, both batches become durable and visible
// (the timed-out one too: its fsync still runs).
func TestDurableWaitBehindHungFsync(t *testing.T) {
	t.Parallel()
	fs, p := durablePartition(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") && held.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return nil
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	first := make(chan error, 1)
	go func() {
		_, err := p.Append(context.Background(), idempotent(t, 1, 0, 1), AcksAll)
		first <- err
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the first append never reached its fsync")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Append(ctx, idempotent(t, 2, 0, 1), AcksAll); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append queued behind a hung fsync: %v, want its timeout", err)
	}
	select {
	case err := <-first:
		t.Fatalf("the append running the hung fsync returned before the fsync did: %v", err)
	default:
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any fsync completed", hw)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the append whose fsync completed: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); p.HighWatermark() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("high watermark %d after the disk answered, want 2 (the timed-out batch's fsync still runs)", p.HighWatermark())
		}
	}
}
