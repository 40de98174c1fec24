package kafka_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDeletedTopicOffsetsRemoved: a group's committed offsets die with
// their topic. After a delete and re-create of the same name, a fresh
// member of the group (reset policy: earliest) reads every new record,
// and lag counts them all, also across a restart.
func TestDeletedTopicOffsetsRemoved(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	b := startGroups(t, dir)
	const topic, group = "orders", "billing"
	adm := adminClient(t, b.Addr())
	produceN := func(n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = kgo.StringRecord(strconv.Itoa(i))
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(want int) int {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := 0
		idle, stop := context.WithTimeout(ctx, 10*time.Second)
		defer stop()
		for got < want && idle.Err() == nil {
			fs := cl.PollFetches(idle)
			got += fs.NumRecords()
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
		return got
	}
	lag := func() int64 {
		t.Helper()
		lags, err := adm.Lag(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return lags[group].Lag.Total()
	}

	if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	produceN(1577)
	if got := consume(1577); got != 1577 {
		t.Fatalf("first pass read %d", got)
	}
	if r, err := adm.DeleteTopics(ctx, topic); err != nil || r.Error() != nil {
		t.Fatalf("delete: %v %v", err, r.Error())
	}
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("re-create: %v %v", err, r.Err)
	}
	produceN(3000)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.At >= 0 {
		t.Fatalf("the re-created topic inherited committed offset %d", o.At)
	}
	if got := consume(3000); got != 3000 {
		t.Fatalf("a fresh member read %d of the re-created topic's 3000 records", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startGroups(t, dir)
	defer b.Close()
	adm = adminClient(t, b.Addr())
	if l := lag(); l != 0 {
		t.Fatalf("lag after restart: %d", l)
	}
}
