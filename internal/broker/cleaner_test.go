package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/compact"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// countRecords returns how many records the partition holds from its start.
func countRecords(t *testing.T, b *Broker, topic string) int {
	t.Helper()
	p, err := b.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for off := p.Log().LogStartOffset(); off < p.Log().HighWatermark(); {
		buf, err := p.Log().Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		sc := record.Batches(buf)
		for sc.Next() {
			h := sc.Header()
			n += int(h.NumRecords)
			off = h.NextOffset()
		}
	}
	return n
}

// TestCleanerCompactsConsumerOffsets: __consumer_offsets is compacted by the
// same cleaner, and the latest commit survives it and a restart.
func TestCleanerCompactsConsumerOffsets(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		ctx := context.Background()
		b := open(t, fs, dir, noDelay)
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
		for range 20 {
			if _, err := b.ProduceRecords(ctx, "t", 0, []record.Record{{Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20 {
			if err := b.Group("g").CommitThrough(ctx, "t", 0, record.Offset(i)); err != nil {
				t.Fatal(err)
			}
		}
		p, _ := b.Partition(ConsumerOffsetsTopic, 0)
		if err := p.Roll(); err != nil {
			t.Fatal(err)
		}
		before := countRecords(t, b, ConsumerOffsetsTopic)
		b.CleanLogs()
		after := countRecords(t, b, ConsumerOffsetsTopic)
		if before < 20 || after >= before/2 {
			t.Fatalf("__consumer_offsets: %d records before cleaning, %d after", before, after)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, dir, noDelay)
		defer b.Close()
		if o, err := b.Group("g").Committed(ctx, "t", 0); err != nil || o != 20 {
			t.Fatalf("committed after cleaning and restart: %d, %v; want 20", o, err)
		}
	})
}

// TestCompactOnlyTopicHasNoTimeRetention: cleanup.policy=compact turns
// retention.ms and retention.bytes off, as in Kafka; compact,delete keeps
// them.
func TestCompactOnlyTopicHasNoTimeRetention(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	b := open(t, vfs.NewMem(), "/data", func(c *Config) { c.Now = clock })
	defer b.Close()
	ctx := context.Background()
	topics := map[string]string{"compact": "compact", "both": "compact,delete", "delete": "delete"}
	for name, policy := range topics {
		mustCreate(t, b, TopicSpec{Name: name, Partitions: 1, Configs: map[string]string{
			ConfigCleanupPolicy: policy, ConfigRetentionMs: "1000", ConfigSegmentBytes: "100"}})
		for i := range 3 {
			rec := record.Record{Key: []byte{'k', byte('0' + i)}, Value: []byte("v"), Timestamp: clock().UnixMilli()}
			if _, err := b.ProduceRecords(ctx, name, 0, []record.Record{rec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	now.Add(int64(time.Hour))
	b.ApplyRetention()
	for name, want := range map[string]record.Offset{"compact": 0, "both": 3, "delete": 3} {
		if got, err := b.ListOffsets(name, 0, TimestampEarliest); err != nil || got != want {
			t.Errorf("%s: earliest %d, %v; want %d", name, got, err, want)
		}
	}
}

func TestCompactionConfigs(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	tp := mustCreate(t, b, TopicSpec{Name: "c", Partitions: 1, Configs: map[string]string{
		ConfigCleanupPolicy: "compact", ConfigMinCleanableDirtyRatio: "0.25",
		ConfigMinCompactionLagMs: "1000", ConfigMaxCompactionLagMs: "60000", ConfigDeleteRetentionMs: "5000"}})
	p := tp.Config.CompactPolicy()
	if !tp.Config.Compacted() || p.MinDirtyRatio != 0.25 || p.MinCompactionLag != time.Second ||
		p.MaxCompactionLag != time.Minute || p.DeleteRetention != 5*time.Second {
		t.Fatalf("policy %+v", p)
	}
	if d := mustCreate(t, b, TopicSpec{Name: "d", Partitions: 1}).Config; d.Compacted() || d.CompactPolicy().MaxCompactionLag != 0 ||
		d.CompactPolicy().MinDirtyRatio != 0.5 || d.CompactPolicy().DeleteRetention != 24*time.Hour {
		t.Fatalf("defaults: compacted %v policy %+v", d.Compacted(), d.CompactPolicy())
	}
	var ce *ConfigError
	for _, bad := range []string{"1.5", "-0.1", "x"} {
		_, err := b.CreateTopic(TopicSpec{Name: "e", Partitions: 1, Configs: map[string]string{ConfigMinCleanableDirtyRatio: bad}})
		if !errors.As(err, &ce) {
			t.Errorf("ratio %q: %v", bad, err)
		}
	}
	if _, ok := LookupConfig(ConfigMaxCompactionLagMs); !ok {
		t.Fatal("max.compaction.lag.ms is not described")
	}
}

// TestCleanWhileProducingAndReading: cleaning runs while a producer appends
// (rolling small segments) and a reader scans the partition from its start;
// the reader never sees a torn or out-of-order batch, and the final log folds
// to the view of everything produced.
func TestCleanWhileProducingAndReading(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "c", Partitions: 1, Configs: map[string]string{
		ConfigCleanupPolicy: "compact", ConfigSegmentBytes: "1024", ConfigMinCleanableDirtyRatio: "0"}})
	p, _ := b.Partition("c", 0)
	ctx := context.Background()
	var (
		all  []record.Record
		done = make(chan struct{})
		errs = make(chan error, 2)
	)
	go func() { // producer
		defer close(done)
		for i := 0; i < 1500; {
			n := 1 + i%4
			var batch []record.Record
			for j := range n {
				r := record.Record{Key: []byte{'k', byte('a' + (i+j)%40)}, Value: []byte{byte(i + j)}}
				if (i+j)%13 == 0 {
					r.Value = nil
				}
				batch = append(batch, r)
			}
			base, err := b.ProduceRecords(ctx, "c", 0, batch)
			if err != nil {
				errs <- err
				return
			}
			for j := range batch {
				batch[j].Offset = base + record.Offset(j)
			}
			all = append(all, batch...)
			i += n
		}
	}()
	go func() { // reader
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			last := record.Offset(-1)
			for off := p.Log().LogStartOffset(); off < p.Log().HighWatermark(); {
				buf, err := p.Log().Read(off, 4096)
				if err != nil {
					errs <- err
					return
				}
				sc := record.Batches(buf)
				for sc.Next() {
					batch, err := record.Decode(sc.Batch())
					if err != nil {
						errs <- err
						return
					}
					if batch.BaseOffset <= last {
						errs <- fmt.Errorf("batch at %d after one ending at %d", batch.BaseOffset, last)
						return
					}
					last, off = batch.LastOffset(), batch.NextOffset()
				}
			}
		}
	}()
	for cleaning := true; cleaning; {
		select {
		case <-done:
			cleaning = false
		default:
			b.CleanLogs()
		}
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := p.Roll(); err != nil {
		t.Fatal(err)
	}
	b.CleanLogs()
	want := compact.View(all)
	got := map[string][]byte{}
	for off := p.Log().LogStartOffset(); off < p.Log().HighWatermark(); {
		buf, err := p.Log().Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := compact.FoldBatches(got, buf); err != nil {
			t.Fatal(err)
		}
		sc := record.Batches(buf)
		for sc.Next() {
			h := sc.Header()
			off = h.NextOffset()
		}
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("view after cleaning %q, want %q", got, want)
	}
	if n := countRecords(t, b, "c"); n > 40 {
		t.Fatalf("%d records left for 40 keys", n)
	}
}

// TestCompactedTopicRefusesKeylessRecords: a record without a key is
// INVALID_RECORD on a compacted topic (its whole batch is refused, nothing
// is written), accepted on a delete topic, and a compressed batch is looked
// into too; switching a topic to compact applies at once.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	ctx := context.Background()
	mustCreate(t, b, TopicSpec{Name: "table", Partitions: 1, Configs: map[string]string{ConfigCleanupPolicy: "compact"}})
	mustCreate(t, b, TopicSpec{Name: "events", Partitions: 1})
	keyed := record.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1000}
	keyless := record.Record{Value: []byte("v"), Timestamp: 1000}
	batch := func(codec record.Codec, recs ...record.Record) []byte {
		for i := range recs {
			recs[i].Offset = record.Offset(i)
		}
		opts := record.DefaultBatchOptions()
		opts.Codec = codec
		out, err := record.Encode(0, recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	table, _ := b.Partition("table", 0)
	for _, codec := range []record.Codec{record.CodecNone, record.CodecLZ4} {
		if _, err := table.Append(ctx, batch(codec, keyed, keyless, keyed), AcksAll); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%v batch with a keyless record on a compacted topic: %v", codec, err)
		}
	}
	if hw := table.HighWatermark(); hw != 0 {
		t.Fatalf("a refused batch wrote records: high watermark %d", hw)
	}
	if _, err := table.Append(ctx, batch(record.CodecNone, keyed, keyed), AcksAll); err != nil {
		t.Fatalf("keyed records: %v", err)
	}
	events, _ := b.Partition("events", 0)
	if _, err := events.Append(ctx, batch(record.CodecNone, keyless), AcksAll); err != nil {
		t.Fatalf("keyless record on a delete topic: %v", err)
	}
	if err := b.AlterConfigs("events", map[string]string{ConfigCleanupPolicy: "compact,delete"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Append(ctx, batch(record.CodecNone, keyless), AcksAll); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("keyless record after switching to compact,delete: %v", err)
	}
}
