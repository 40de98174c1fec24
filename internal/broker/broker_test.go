package broker

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

// filesystems runs a test on the OS and on the crashable in-memory FS.
func filesystems(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("os", func(t *testing.T) { t.Parallel(); f(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) { t.Parallel(); f(t, vfs.NewMem(), "/data") })
}

func open(t *testing.T, fs vfs.FS, dir string, mod ...func(*Config)) *Broker {
	t.Helper()
	cfg := Config{FS: fs, Dir: dir, Logger: quiet}
	for _, m := range mod {
		m(&cfg)
	}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCreate(t *testing.T, b *Broker, spec TopicSpec) *Topic {
	t.Helper()
	tp, err := b.CreateTopic(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestTopicsAndConfigsSurviveRestart(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		tp := mustCreate(t, b, TopicSpec{Name: "orders", Partitions: 3, Configs: map[string]string{ConfigRetentionMs: "60000"}})
		mustCreate(t, b, TopicSpec{Name: "gone", Partitions: 1})
		if _, err := b.CreatePartitions("orders", 5, nil, false); err != nil {
			t.Fatal(err)
		}
		if err := b.IncrementalAlterConfigs("orders", []ConfigChange{{Name: ConfigCleanupPolicy, Op: OpSet, Value: "compact"}}, false); err != nil {
			t.Fatal(err)
		}
		if err := b.DeleteTopic("gone"); err != nil {
			t.Fatal(err)
		}
		part, off, err := b.Produce("orders", []byte("k1"), []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		cluster := b.ClusterID()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}

		b = open(t, fs, dir)
		defer b.Close()
		if b.ClusterID() != cluster {
			t.Fatal("cluster id changed across a restart")
		}
		got, err := b.Topic("orders")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != tp.ID || got.Partitions() != 5 {
			t.Fatalf("after restart: id %v partitions %d", got.ID, got.Partitions())
		}
		if v, src := got.Config.Get(ConfigRetentionMs); v != "60000" || src != SourceTopic {
			t.Fatalf("retention.ms %q from %d", v, src)
		}
		if v, _ := got.Config.Get(ConfigCleanupPolicy); v != "compact" {
			t.Fatalf("cleanup.policy %q", v)
		}
		if _, err := b.Topic("gone"); !errors.Is(err, ErrUnknownTopicOrPartition) {
			t.Fatalf("deleted topic came back: %v", err)
		}
		recs, err := b.Fetch("orders", part, off, 1<<20)
		if err != nil || len(recs) != 1 || string(recs[0].Value) != "v1" {
			t.Fatalf("fetch after restart: %v %v", recs, err)
		}
	})
}

// TestProduceMirrorsTheSeed: keys map to partitioner.ForKey's partition,
// offsets are absolute per partition, Fetch and ListOffsets read them back.
func TestProduceMirrorsTheSeed(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "t", Partitions: 4})
	next := map[PartitionID]record.Offset{}
	for i := range 200 {
		key := []byte{byte(i % 17), 'k'}
		p, off, err := b.Produce("t", key, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		if want := PartitionID(partitioner.ForKey(key, 4)); p != want {
			t.Fatalf("key %x in partition %d, want %d", key, p, want)
		}
		if off != next[p] {
			t.Fatalf("offset %d in partition %d, want %d", off, p, next[p])
		}
		next[p]++
	}
	for p, end := range next {
		if got, _ := b.ListOffsets("t", p, TimestampLatest); got != end {
			t.Fatalf("partition %d: latest %d, want %d", p, got, end)
		}
		recs, err := b.Fetch("t", p, 0, 1<<20)
		if err != nil || record.Offset(len(recs)) != end {
			t.Fatalf("partition %d: fetched %d of %d (%v)", p, len(recs), end, err)
		}
	}
	if _, _, err := b.Produce("auto", nil, []byte("v")); err != nil {
		t.Fatalf("auto-create on produce: %v", err)
	}
}

// TestRetentionRecordsNeverRenumbers is the seed's retain_count: the start
// offset advances, offsets stay absolute, the end offset never moves back.
func TestRetentionRecordsNeverRenumbers(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "r", Partitions: 1, Configs: map[string]string{ConfigRetentionRecords: "4"}})
	for i := range 10 {
		if _, off, err := b.Produce("r", []byte("k"), []byte{byte(i)}); err != nil || off != record.Offset(i) {
			t.Fatalf("record %d at %d: %v", i, off, err)
		}
	}
	p, _ := b.Partition("r", 0)
	if p.LogEndOffset() != 10 || p.LogStartOffset() != 6 {
		t.Fatalf("start %d end %d, want 6 and 10", p.LogStartOffset(), p.LogEndOffset())
	}
	if _, err := b.Fetch("r", 0, 2, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("fetch below the start: %v", err)
	}
	recs, err := b.Fetch("r", 0, 6, 1<<20)
	if err != nil || len(recs) != 4 || recs[0].Offset != 6 || recs[0].Value[0] != 6 {
		t.Fatalf("fetch from the start: %v %v", recs, err)
	}
}

func TestCreateTopicValidation(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d", func(c *Config) { c.DefaultPartitions = 3 })
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "a.b"})
	for _, tc := range []struct {
		spec TopicSpec
		want error
	}{
		{TopicSpec{Name: ""}, ErrInvalidTopic},
		{TopicSpec{Name: ".."}, ErrInvalidTopic},
		{TopicSpec{Name: "has space"}, ErrInvalidTopic},
		{TopicSpec{Name: string(make([]byte, 250))}, ErrInvalidTopic},
		{TopicSpec{Name: "a.b"}, ErrTopicExists},
		{TopicSpec{Name: "a_b"}, ErrInvalidTopic},
		{TopicSpec{Name: "x", Partitions: -5}, ErrInvalidPartitions},
		{TopicSpec{Name: "x", Partitions: MaxPartitionsPerTopic + 1}, ErrInvalidPartitions},
		{TopicSpec{Name: "x", ReplicationFactor: 2}, ErrInvalidReplicationFactor},
		{TopicSpec{Name: "x", Assignment: [][]NodeID{{1}}}, ErrInvalidReplicaAssignment},
		{TopicSpec{Name: "x", Configs: map[string]string{"retention.ms": "-2"}}, ErrInvalidConfig},
		{TopicSpec{Name: "x", Configs: map[string]string{"segment.bytes": "10"}}, ErrInvalidConfig},
		{TopicSpec{Name: "x", Configs: map[string]string{"message.timestamp.type": "Now"}}, ErrInvalidConfig},
		{TopicSpec{Name: "x", Configs: map[string]string{"cleanup.policy": "keep"}}, ErrInvalidConfig},
		{TopicSpec{Name: "x", Configs: map[string]string{"strand.retention.records": "0"}}, ErrInvalidConfig},
		{TopicSpec{Name: "x", Configs: map[string]string{"unknown": "1"}}, ErrInvalidConfig},
	} {
		if _, err := b.CreateTopic(tc.spec); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.spec.Configs, err, tc.want)
		}
	}
	var ce *ConfigError
	if _, err := b.CreateTopic(TopicSpec{Name: "x", Configs: map[string]string{"retention.ms": "soon"}}); !errors.As(err, &ce) || ce.Name != "retention.ms" {
		t.Fatalf("config error: %v", err)
	}
	if tp := mustCreate(t, b, TopicSpec{Name: "dflt"}); tp.Partitions() != 3 {
		t.Fatalf("default partitions: %d", tp.Partitions())
	}
	if _, err := b.CreateTopic(TopicSpec{Name: "dry", ValidateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Topic("dry"); err == nil {
		t.Fatal("ValidateOnly created the topic")
	}
}

func TestAppendChecksAndLiveConfig(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "c", Partitions: 1})
	p, _ := b.Partition("c", 0)
	ctx := context.Background()
	batch := encode(t, 30, record.DefaultBatchOptions())
	if _, err := p.Append(ctx, batch, AcksAll); err != nil {
		t.Fatal(err)
	}
	if err := b.AlterConfigs("c", map[string]string{ConfigMaxMessageBytes: "100", ConfigMinInsyncReplicas: "2"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(ctx, encode(t, 30, record.DefaultBatchOptions()), AcksLeader); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("after lowering max.message.bytes: %v", err)
	}
	small := encode(t, 1, record.DefaultBatchOptions())
	if _, err := p.Append(ctx, small, AcksAll); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with min.insync.replicas=2: %v", err)
	}
	if _, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksLeader); err != nil {
		t.Fatalf("acks=1 ignores min.insync.replicas: %v", err)
	}
	txn := record.DefaultBatchOptions()
	txn.ProducerID, txn.ProducerEpoch, txn.BaseSequence, txn.Transactional = 1, 0, -1, true
	if _, err := p.Append(ctx, encode(t, 1, txn), AcksLeader); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("transactional batch without a sequence: %v", err)
	}
}

func encode(t *testing.T, n int, opts record.BatchOptions) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1000, Key: []byte("key"), Value: []byte("value")}
	}
	b, err := record.Encode(0, recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func idempotent(t *testing.T, pid producer.ID, seq int32, n int) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = int64(pid), 0, seq
	return encode(t, n, opts)
}

// TestProducerStateSurvivesRestart: after a clean restart (snapshot) and
// after a crash (log scan), a retry of the last batch is a duplicate and the
// next sequence is still expected.
func TestProducerStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		fs := vfs.NewMem()
		b := open(t, fs, "/d")
		// flush.messages=1: every append is durable, so a crash keeps it.
		mustCreate(t, b, TopicSpec{Name: "i", Partitions: 1, Configs: map[string]string{ConfigFlushMessages: "1"}})
		pid, _, err := b.AllocateProducerID()
		if err != nil {
			t.Fatal(err)
		}
		p, _ := b.Partition("i", 0)
		ctx := context.Background()
		for seq := int32(0); seq < 30; seq += 3 {
			if _, err := p.Append(ctx, idempotent(t, pid, seq, 3), AcksAll); err != nil {
				t.Fatal(err)
			}
		}
		if crash {
			fs = fs.CrashClone(vfs.CrashOptions{})
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if !crash {
			if _, err := fs.Stat(filepath.Join("/d", producerStateDir, partition.SnapshotName(p.TopicID(), p.ID()))); err != nil {
				t.Fatalf("no snapshot after a clean close: %v", err)
			}
		}
		b = open(t, fs, "/d")
		p, _ = b.Partition("i", 0)
		res, err := p.Append(ctx, idempotent(t, pid, 27, 3), AcksAll)
		if err != nil || !res.Duplicate || res.BaseOffset != 27 {
			t.Fatalf("crash=%v: retry after restart: %+v %v", crash, res, err)
		}
		if _, err := p.Append(ctx, idempotent(t, pid, 31, 1), AcksAll); !errors.Is(err, producer.ErrOutOfOrderSequence) {
			t.Fatalf("crash=%v: gap after restart: %v", crash, err)
		}
		if res, err := p.Append(ctx, idempotent(t, pid, 30, 1), AcksAll); err != nil || res.BaseOffset != 30 {
			t.Fatalf("crash=%v: next batch: %+v %v", crash, res, err)
		}
		next, _, err := b.AllocateProducerID()
		if err != nil || next == pid {
			t.Fatalf("crash=%v: producer id %d reused (%v)", crash, next, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeftoverPartitionDirsRemoved: a partition directory meta.json does not
// list (a delete interrupted by a crash) is removed on open, so a new topic
// of the same name starts empty.
func TestLeftoverPartitionDirsRemoved(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	b := open(t, fs, "/d")
	mustCreate(t, b, TopicSpec{Name: "keep", Partitions: 1})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/d/ghost-0", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fs.MkdirAll("/d/keep-1", 0o755); err != nil {
		t.Fatal(err)
	}
	b = open(t, fs, "/d")
	defer b.Close()
	for _, dir := range []string{"/d/ghost-0", "/d/keep-1"} {
		if _, err := fs.Stat(dir); err == nil {
			t.Fatalf("%s survived", dir)
		}
	}
	if _, err := fs.Stat("/d/keep-0"); err != nil {
		t.Fatalf("live partition removed: %v", err)
	}
}

// TestCorruptBatchRefused: a CRC mismatch is refused on both timestamp
// types (LogAppendTime rewrites the CRC, so it must check first).
func TestCorruptBatchRefused(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	for _, ts := range []string{"CreateTime", "LogAppendTime"} {
		mustCreate(t, b, TopicSpec{Name: ts, Partitions: 1, Configs: map[string]string{ConfigMessageTimestampType: ts}})
		p, _ := b.Partition(ts, 0)
		batch := encode(t, 3, record.DefaultBatchOptions())
		batch[len(batch)-1] ^= 1
		if _, err := p.Append(context.Background(), batch, AcksAll); !errors.Is(err, ErrCorruptMessage) {
			t.Fatalf("%s: %v, want ErrCorruptMessage", ts, err)
		}
		if p.LogEndOffset() != 0 {
			t.Fatalf("%s: corrupt batch written", ts)
		}
	}
}

// Every partition log of a broker shares its data directory's write gate
// (Config.LogWriters; partlog.WriteGate), and a negative LogWriters leaves
// the logs unbounded.
func TestLogsShareTheWriteGate(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	a, c := b.logConfig(TopicConfig{}, "a-0"), b.logConfig(TopicConfig{}, "c-3")
	if a.WriteGate == nil || a.WriteGate != c.WriteGate {
		t.Errorf("default broker: logs' gates %p and %p, want one shared gate", a.WriteGate, c.WriteGate)
	}
	u := open(t, vfs.NewMem(), "/data", func(c *Config) { c.LogWriters = -1 })
	defer u.Close()
	if g := u.logConfig(TopicConfig{}, "a-0").WriteGate; g != nil {
		t.Errorf("LogWriters -1: gate %p, want none", g)
	}
}
