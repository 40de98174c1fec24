package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestProducerStateFromRollSnapshot: segment rolls leave producer
// snapshots (the two newest kept); after a crash, recovery starts from the
// newest one at or below the log end and reads only the headers after it,
// and every producer's sequence state is exactly what it was. A snapshot
// above the recovered log end is deleted, not used.
func TestProducerStateFromRollSnapshot(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	b := open(t, fs, "/d")
	tp := mustCreate(t, b, TopicSpec{Name: "r", Partitions: 1, Configs: map[string]string{
		ConfigFlushMessages: "1", ConfigSegmentBytes: "1500"}})
	p, _ := b.Partition("r", 0)
	ctx := context.Background()
	var pids []producer.ID
	for range 3 {
		pid, _, err := b.AllocateProducerID()
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	const rounds = 40
	last := map[producer.ID]record.Offset{}
	for seq := range int32(rounds) {
		for _, pid := range pids {
			res, err := p.Append(ctx, idempotent(t, pid, seq*2, 2), AcksAll)
			if err != nil {
				t.Fatal(err)
			}
			last[pid] = res.BaseOffset
		}
	}
	dir := filepath.Join("/d", producerStateDir)
	p.WaitSnapshots() // roll snapshots are written in the background
	snaps := partition.RollSnapshots(fs, dir, tp.ID, 0)
	if len(snaps) != partition.RollSnapshotsKept {
		t.Fatalf("%d roll snapshots kept, want %d: %v", len(snaps), partition.RollSnapshotsKept, snaps)
	}
	// A snapshot from the future, as if a crash lost the tail it described.
	end := p.LogEndOffset()
	bogus := partition.RollSnapshotName(tp.ID, 0, end+100)
	if err := producer.SaveSnapshot(fs, dir, bogus, end+100, producer.NewState()); err != nil {
		t.Fatal(err)
	}

	crashed := fs.CrashClone(vfs.CrashOptions{})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	b = open(t, crashed, "/d", func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	defer b.Close()
	if _, err := crashed.Stat(filepath.Join(dir, bogus)); err == nil {
		t.Fatal("a snapshot above the log end was kept")
	}
	m := regexp.MustCompile(`producer state rebuilt" topic=r partition=0 from=(\d+) .*batches_read=(\d+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no rebuild logged:\n%s", logs.String())
	}
	from, _ := strconv.Atoi(m[1])
	read, _ := strconv.Atoi(m[2])
	if from != int(snaps[len(snaps)-1].At) || read >= rounds*len(pids) {
		t.Fatalf("rebuilt from offset %d reading %d batches; want from %d and fewer than %d", from, read, snaps[len(snaps)-1].At, rounds*len(pids))
	}

	p, _ = b.Partition("r", 0)
	for _, pid := range pids {
		res, err := p.Append(ctx, idempotent(t, pid, (rounds-1)*2, 2), AcksAll)
		if err != nil || !res.Duplicate || res.BaseOffset != last[pid] {
			t.Fatalf("producer %d: retry of its last batch after the crash: %+v %v, want duplicate at %d", pid, res, err, last[pid])
		}
		if _, err := p.Append(ctx, idempotent(t, pid, rounds*2+1, 1), AcksAll); !errors.Is(err, producer.ErrOutOfOrderSequence) {
			t.Fatalf("producer %d: gap after the crash: %v", pid, err)
		}
		if _, err := p.Append(ctx, idempotent(t, pid, rounds*2, 1), AcksAll); err != nil {
			t.Fatalf("producer %d: next batch after the crash: %v", pid, err)
		}
	}
}

// TestRollSnapshotNotAfterDelete: roll snapshots are written in the
// background; deleting the topic waits for those in flight, so none lands
// after the deletion and outlives its topic. The snapshot fsyncs are slowed
// down so that, without the wait, the writes would finish after it.
func TestRollSnapshotNotAfterDelete(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	b := open(t, fs, "/d")
	defer b.Close()
	tp := mustCreate(t, b, TopicSpec{Name: "r", Partitions: 1, Configs: map[string]string{ConfigSegmentBytes: "200"}})
	p, _ := b.Partition("r", 0)
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "@") {
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	ctx := context.Background()
	pid, _, err := b.AllocateProducerID()
	if err != nil {
		t.Fatal(err)
	}
	for seq := range int32(6) {
		if _, err := p.Append(ctx, idempotent(t, pid, seq, 1), AcksLeader); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.DeleteTopic("r"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // what a write not waited for would need to land
	dir := filepath.Join("/d", producerStateDir)
	if snaps := partition.RollSnapshots(fs, dir, tp.ID, 0); len(snaps) > 0 {
		t.Fatalf("roll snapshots of a deleted topic: %v", snaps)
	}
}
