package kafka

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// TestDescribeLogDirsAndProducers drives DescribeLogDirs and
// DescribeProducers with kadm, as admin tools do: partition sizes grow with
// what was produced, the data directory and its disk are reported, and an
// idempotent producer shows up on the partitions it wrote with its epoch
// and last sequence.
func TestDescribeLogDirsAndProducers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "sized", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("sized"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 10 {
		v := make([]byte, 1000)
		rand.Read(v) // incompressible: the size on disk is at least the values
		r := &kgo.Record{Partition: 0, Value: v}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	adm := kadm.NewClient(cl)

	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := dirs[0][ts.b.Dir()]
	if !ok || d.Err != nil {
		t.Fatalf("log dirs %+v: want %s on broker 0", dirs, ts.b.Dir())
	}
	p0, ok0 := d.Topics.Lookup("sized", 0)
	p1, ok1 := d.Topics.Lookup("sized", 1)
	if !ok0 || !ok1 || p0.Size < 10_000 || p1.Size != 0 {
		t.Fatalf("sizes: p0 %+v (%v), p1 %+v (%v); want p0 >= 10000 bytes, p1 empty", p0, ok0, p1, ok1)
	}
	if d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Fatalf("disk: total %d, usable %d", d.TotalBytes, d.UsableBytes)
	}
	some, err := adm.DescribeBrokerLogDirs(ctx, 0, kadm.TopicsSet{"sized": {1: {}}, "nope": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if ps := some[ts.b.Dir()].Topics; len(ps) != 1 || len(ps["sized"]) != 1 {
		t.Fatalf("asked for sized-1 and an unknown topic, got %+v", ps)
	}

	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"sized": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	pp := producers["sized"].Partitions[0]
	if pp.Err != nil || len(pp.ActiveProducers) != 1 {
		t.Fatalf("sized-0 producers: %+v", pp)
	}
	for _, ap := range pp.ActiveProducers {
		if ap.ProducerID < 0 || ap.LastSequence != 9 || ap.CurrentTxnStartOffset != -1 {
			t.Fatalf("active producer %+v: want its 10th batch (sequence 9)", ap)
		}
	}
	if p := producers["sized"].Partitions[1]; p.Err != nil || len(p.ActiveProducers) != 0 {
		t.Fatalf("sized-1 producers: %+v", p)
	}

	// kadm checks metadata first; ask for an unknown topic directly.
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "nope", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := dial(t, ts.addr).do(req, 0).(*kmsg.DescribeProducersResponse)
	wantCode(t, "unknown topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
}
