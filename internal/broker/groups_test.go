package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func noDelay(c *Config) { c.GroupInitialRebalanceDelay = -1 }

func TestConsumerOffsetsTopic(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		defer b.Close()
		tp, err := b.Topic(ConsumerOffsetsTopic)
		if err != nil {
			t.Fatal(err)
		}
		if tp.Partitions() != 1 || !IsInternalTopic(tp.Name) {
			t.Fatalf("%d partitions, internal %v", tp.Partitions(), IsInternalTopic(tp.Name))
		}
		ov := tp.Config.Overrides()
		if ov[ConfigCleanupPolicy] != "compact" || ov[ConfigRetentionMs] != "-1" || ov[ConfigRetentionBytes] != "-1" {
			t.Fatalf("configs %v", ov)
		}
		if err := b.DeleteTopic(ConsumerOffsetsTopic); !errors.Is(err, ErrInternalTopic) {
			t.Fatalf("delete internal topic: %v", err)
		}
		if _, err := b.CreateTopic(offsetsTopicSpec(1)); !errors.Is(err, ErrTopicExists) {
			t.Fatalf("create it again: %v", err)
		}
	})
}

// TestCommittedOffsetsSurviveRestart: commits and deletions go through
// __consumer_offsets and come back after a reopen; tombstones are honoured.
func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		ctx := context.Background()
		b := open(t, fs, dir, noDelay)
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 3})
		for i := range 30 {
			if _, err := b.ProduceRecords(ctx, "t", PartitionID(i%3), []record.Record{{Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
		}
		for p := range PartitionID(3) {
			if err := b.Group("g").CommitThrough(ctx, "t", p, record.Offset(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Group("other").CommitThrough(ctx, "t", 0, 4); err != nil {
			t.Fatal(err)
		}
		if code, _ := coordOf(t, b, "g").DeleteOffsets(ctx, "g", []group.TopicPartition{{Topic: "t", Partition: 2}}); code != group.CodeNone {
			t.Fatal(code)
		}
		if codes := coordOf(t, b, "other").Delete(ctx, []string{"other"}); codes["other"] != group.CodeNone {
			t.Fatal(codes)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}

		b = open(t, fs, dir, noDelay)
		defer b.Close()
		for p, want := range []record.Offset{1, 2, record.NoOffset} {
			got, err := b.Group("g").Committed(ctx, "t", PartitionID(p))
			if err != nil || got != want {
				t.Fatalf("partition %d: committed %d, %v; want %d", p, got, err, want)
			}
		}
		if got, _ := b.Group("other").Committed(ctx, "t", 0); got != record.NoOffset {
			t.Fatalf("deleted group has offset %d", got)
		}
		lag, err := b.GroupLag(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		if lag.Total != 9+8+10 || len(lag.Partitions) != 3 {
			t.Fatalf("lag %+v", lag)
		}
	})
}

// TestSeekReplaysAndLagJumpsBack is the seed's "seek(0, 0) makes lag jump
// back up".
func TestSeekReplaysAndLagJumpsBack(t *testing.T) {
	ctx := context.Background()
	b := open(t, vfs.NewMem(), "/data", noDelay)
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "orders", Partitions: 2})
	for i := range 10 {
		if _, err := b.ProduceRecords(ctx, "orders", 0, []record.Record{{Value: fmt.Appendf(nil, "v%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	g := b.Group("billing")
	if lag, _ := g.Lag(ctx); lag.Total != 0 || len(lag.Partitions) != 0 {
		t.Fatalf("unknown group lag %+v", lag)
	}
	recs, err := g.Poll(ctx, "orders", 0, 1<<20)
	if err != nil || len(recs) != 10 {
		t.Fatalf("poll: %d records, %v", len(recs), err)
	}
	if err := g.CommitThrough(ctx, "orders", 0, recs[len(recs)-1].Offset); err != nil {
		t.Fatal(err)
	}
	lag, err := g.Lag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if lag.Total != 0 || len(lag.Partitions) != 2 || lag.Partitions[0].Committed != 10 || lag.Partitions[0].End != 10 ||
		lag.Partitions[1].Committed != record.NoOffset {
		t.Fatalf("after commit: %+v", lag)
	}
	if recs, _ := g.Poll(ctx, "orders", 0, 1<<20); len(recs) != 0 {
		t.Fatalf("poll after commit: %d records", len(recs))
	}

	if err := g.Seek(ctx, "orders", 0, 0); err != nil {
		t.Fatal(err)
	}
	if lag, _ := g.Lag(ctx); lag.Total != 10 || lag.Partitions[0].Lag != 10 {
		t.Fatalf("after seek(0, 0): %+v", lag)
	}
	if recs, _ := g.Poll(ctx, "orders", 0, 1<<20); len(recs) != 10 || string(recs[0].Value) != "v0" {
		t.Fatalf("replay after seek: %d records", len(recs))
	}
	// Retention moves the log start; lag without a commit counts from it.
	if _, err := b.ProduceRecords(ctx, "orders", 1, []record.Record{{Value: []byte("a")}, {Value: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	p1, _ := b.Partition("orders", 1)
	if _, err := p1.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	if lag, _ := g.Lag(ctx); lag.Total != 11 || lag.Partitions[1].Lag != 1 {
		t.Fatalf("after delete records: %+v", lag)
	}

	if err := g.Seek(ctx, "orders", 0, 11); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("seek past the end: %v", err)
	}
	if err := g.Seek(ctx, "nope", 0, 0); !errors.Is(err, ErrUnknownTopicOrPartition) {
		t.Fatalf("seek unknown topic: %v", err)
	}
	if err := g.CommitThrough(ctx, "orders", 7, 0); !errors.Is(err, ErrUnknownTopicOrPartition) {
		t.Fatalf("commit unknown partition: %v", err)
	}
}

func TestSeekRefusedWithLiveMembers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := open(t, vfs.NewMem(), "/data", noDelay)
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "orders", Partitions: 1})
	join := coordOf(t, b, "live").Join(ctx, group.JoinRequest{
		GroupID: "live", ProtocolType: "consumer", Protocols: []group.Protocol{{Name: "range"}},
		SessionTimeout: 30 * time.Second, RebalanceTimeout: 30 * time.Second,
	})
	if join.Code != group.CodeNone {
		t.Fatal(join.Code)
	}
	err := b.Group("live").Seek(ctx, "orders", 0, 0)
	if !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("seek with a live member: %v", err)
	}
	t.Log(err)
	leave := coordOf(t, b, "live").Leave(ctx, group.LeaveRequest{GroupID: "live", Members: []group.LeaveMember{{MemberID: join.MemberID}}})
	if leave.Code != group.CodeNone {
		t.Fatal(leave.Code)
	}
	if err := b.Group("live").Seek(ctx, "orders", 0, 0); err != nil {
		t.Fatalf("seek after the member left: %v", err)
	}
}

// TestOffsetsTopicIgnoresHostileDefaults: broker-wide topic defaults that
// would drop or divert records (retention, ingress validation) do not apply
// to __consumer_offsets, and validation cannot be switched on there later.
func TestOffsetsTopicIgnoresHostileDefaults(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	hostile := func(c *Config) {
		c.GroupInitialRebalanceDelay = -1
		c.TopicDefaults = map[string]string{
			ConfigValidation: "json", ConfigRetentionRecords: "1", ConfigRetentionMs: "1", ConfigRetentionBytes: "1",
		}
	}
	b := open(t, fs, "/data", hostile)
	mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
	if _, err := b.ProduceRecords(ctx, "t", 0, []record.Record{{Value: []byte(`{"a":1}`)}, {Value: []byte(`{"a":2}`)}}); err != nil {
		t.Fatal(err)
	}
	for i := range record.Offset(2) {
		if err := b.Group("g").CommitThrough(ctx, "t", 0, i); err != nil {
			t.Fatal(err)
		}
	}
	b.ApplyRetention()
	err := b.IncrementalAlterConfigs(ConsumerOffsetsTopic, []ConfigChange{{Name: ConfigValidation, Op: OpSet, Value: "json"}}, false)
	if !errors.Is(err, ErrPolicyViolation) {
		t.Fatalf("validation on __consumer_offsets: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, fs, "/data", hostile)
	defer b.Close()
	if got, err := b.Group("g").Committed(ctx, "t", 0); err != nil || got != 2 {
		t.Fatalf("committed after restart: %d, %v", got, err)
	}
	p, _ := b.Partition(ConsumerOffsetsTopic, 0)
	if p.LogStartOffset() != 0 || p.LogEndOffset() != 2 {
		t.Fatalf("__consumer_offsets log [%d, %d)", p.LogStartOffset(), p.LogEndOffset())
	}
}

// TestApplyRetentionExpiresOffsets: the broker's retention pass expires
// committed offsets older than OffsetsRetention, durably; with retention
// off they stay.
func TestApplyRetentionExpiresOffsets(t *testing.T) {
	t.Parallel()
	for _, retention := range []time.Duration{time.Millisecond, -1} {
		fs := vfs.NewMem()
		ctx := context.Background()
		b := open(t, fs, "/d", noDelay, func(c *Config) { c.OffsetsRetention = retention })
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
		if _, err := b.ProduceRecords(ctx, "t", 0, []record.Record{{Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if err := b.Group("g").CommitThrough(ctx, "t", 0, 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // past a 1 ms retention
		b.ApplyRetention()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, "/d", noDelay, func(c *Config) { c.OffsetsRetention = retention })
		got, err := b.Group("g").Committed(ctx, "t", 0)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if expired := got == record.NoOffset; expired != (retention > 0) {
			t.Fatalf("retention %v: committed offset after the retention pass and a restart: %d", retention, got)
		}
	}
}

// TestTimeLag: a group's time lag is how long the next record it would
// read has waited, per partition and at most; caught up, it is zero.
func TestTimeLag(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	ctx := context.Background()
	b := open(t, vfs.NewMem(), "/d", noDelay, func(c *Config) { c.Now = clock })
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "t", Partitions: 2, Configs: map[string]string{ConfigMessageTimestampType: "LogAppendTime"}})
	for i := range 3 { // offsets 0, 1, 2 of partition 0, a minute apart
		if _, err := b.ProduceRecords(ctx, "t", 0, []record.Record{{Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			now.Add(int64(time.Minute))
		}
	}
	if _, err := b.ProduceRecords(ctx, "t", 1, []record.Record{{Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Group("g").CommitThrough(ctx, "t", 0, 0); err != nil { // next to read: offset 1
		t.Fatal(err)
	}
	if err := b.Group("g").CommitThrough(ctx, "t", 1, 0); err != nil { // caught up
		t.Fatal(err)
	}
	now.Add(int64(30 * time.Second))
	lag, err := b.GroupLag(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if p0 := lag.Partitions[0]; p0.Lag != 2 || p0.TimeLag != 90*time.Second {
		t.Errorf("partition 0: lag %d, time lag %v; want 2 and 1m30s (offset 1 was written a minute after offset 0)", p0.Lag, p0.TimeLag)
	}
	if p1 := lag.Partitions[1]; p1.Lag != 0 || p1.TimeLag != 0 {
		t.Errorf("caught-up partition: %+v", p1)
	}
	if lag.MaxTimeLag != 90*time.Second {
		t.Errorf("max time lag %v", lag.MaxTimeLag)
	}
}

// coordOf returns the coordinator of group id on b.
func coordOf(t *testing.T, b *Broker, id string) *group.Coordinator {
	t.Helper()
	g, err := b.GroupCoordinator(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
