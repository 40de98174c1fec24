package partition_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// soloHost is a single node as its partitions see it: no cluster, never
// fenced, no coordinator watching markers.
type soloHost struct{}

func (soloHost) Image() *cluster.Image { return nil }
func (soloHost) Fenced() error         { return nil }
func (soloHost) AlterPartition(cluster.AlterPartition) (cluster.PartitionReg, error) {
	return cluster.PartitionReg{}, errors.New("a single node has no controller")
}
func (soloHost) BrokerEpoch() int64            { return -1 }
func (soloHost) Unfollow(*partition.Partition) {}
func (soloHost) Go(fn func())                  { go fn() }
func (soloHost) MarkerWritten(context.Context, *partition.Partition, producer.ID, bool) error {
	return nil
}

// open opens partition t-0 in dir of fs as a single node's, with cfg.
func open(t *testing.T, fs vfs.FS, cfg partition.Config) *partition.Partition {
	t.Helper()
	node := &partition.Node{ID: 1, FS: fs, Logger: slog.New(slog.DiscardHandler), Now: time.Now,
		SnapshotDir: "/d/producer-state", ProducerIDExpiration: time.Hour, Started: time.Now(),
		RollSnapSlots: make(chan struct{}, partition.RollSnapWriters), Host: soloHost{}}
	if err := fs.MkdirAll(node.SnapshotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := partlog.Open(fs, "/d/t-0", cfg.Log)
	if err != nil {
		t.Fatal(err)
	}
	p, err := partition.New(node, "t", cluster.TopicID{1}, 0, l, cfg, &partition.Counters{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// batch is one record of producer pid at seq; key "" is a null key.
func batch(t *testing.T, pid producer.ID, seq int32, key string) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = int64(pid), 0, seq
	r := record.Record{Value: []byte("v"), Timestamp: 1}
	if key != "" {
		r.Key = []byte(key)
	}
	b, err := record.Encode(0, []record.Record{r}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPartitionAloneAppendsAndRecovers: package partition, given only a
// Node, a Host and a Config — no topic registry, no coordinator — leads a
// single node's partition: it appends, answers an idempotent retry with
// the original offset, enforces its Config (max.message.bytes, keys of a
// compacted topic), and after a clean close and reopen still knows the
// producer (the retry is still a duplicate, a gap is refused).
func TestPartitionAloneAppendsAndRecovers(t *testing.T) {
	fs := vfs.NewMem()
	cfg := partition.Config{MaxMessageBytes: 1 << 20, MinInsyncReplicas: 1, RequireKeys: true}
	p := open(t, fs, cfg)
	ctx := context.Background()
	for seq := range int32(3) {
		res, err := p.Append(ctx, batch(t, 7, seq, "k"), partition.AcksAll)
		if err != nil || res.BaseOffset != record.Offset(seq) || res.Duplicate {
			t.Fatalf("seq %d: %+v, %v", seq, res, err)
		}
	}
	if res, err := p.Append(ctx, batch(t, 7, 1, "k"), partition.AcksAll); err != nil || !res.Duplicate || res.BaseOffset != 1 {
		t.Fatalf("retry of seq 1: %+v, %v; want a duplicate at 1", res, err)
	}
	if _, err := p.Append(ctx, batch(t, 8, 0, ""), partition.AcksAll); !errors.Is(err, partition.ErrInvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want ErrInvalidRecord", err)
	}
	small := cfg
	small.MaxMessageBytes = 10
	p.SetConfig(small)
	if _, err := p.Append(ctx, batch(t, 8, 0, "k"), partition.AcksAll); !errors.Is(err, partition.ErrMessageTooLarge) {
		t.Fatalf("batch over max.message.bytes: %v, want ErrMessageTooLarge", err)
	}
	if p.HighWatermark() != 3 || p.Role() != partition.RoleLeader || p.LeaderEpoch() != 0 {
		t.Fatalf("hw %d role %v epoch %d; want 3, leader, 0", p.HighWatermark(), p.Role(), p.LeaderEpoch())
	}
	if err := p.Close(true); err != nil {
		t.Fatal(err)
	}
	p = open(t, fs, cfg)
	defer p.Close(false)
	if res, err := p.Append(ctx, batch(t, 7, 2, "k"), partition.AcksAll); err != nil || !res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("retry of seq 2 after a reopen: %+v, %v; want a duplicate at 2", res, err)
	}
	if _, err := p.Append(ctx, batch(t, 7, 5, "k"), partition.AcksAll); !errors.Is(err, producer.ErrOutOfOrderSequence) {
		t.Fatalf("a gap after a reopen: %v, want ErrOutOfOrderSequence", err)
	}
}
