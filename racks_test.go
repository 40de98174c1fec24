package strand

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRackAwareConsumerReadsItsRack (KIP-392): on three nodes in three
// racks, a consumer that names a follower's rack (client.rack) is sent
// there by the leader's PreferredReadReplica and reads every record, in
// order, once, from that follower: the leader and the other follower
// serve it none. A consumer without a rack reads from the leader. The
// per-node counts are the brokers' own strand_topic_records_out_total.
func TestRackAwareConsumerReadsItsRack(t *testing.T) {
	racks := map[int32]string{1: "az-a", 2: "az-b", 3: "az-c"}
	c := startClusterWith(t, 3, nil, func(cfg *Config) { cfg.Cluster.Rack = racks[cfg.NodeID] })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, n = "racked", 500
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := c.client(1, kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	leader := c.leaders(1, topic)[0]
	follower := leader%3 + 1
	c.waitFullISR(ctx, adm, topic)

	consume := func(opts ...kgo.Opt) {
		t.Helper()
		cl := c.client(1, append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		next := 0
		for next < n {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d records: %v", next, err)
			}
			for _, r := range fs.Records() {
				if r.Offset != int64(next) || string(r.Value) != strconv.Itoa(next) {
					t.Fatalf("record at %d = %q, want offset %d value %d", r.Offset, r.Value, next, next)
				}
				next++
			}
		}
		cl.Close()
	}
	before, bytesBefore := c.recordsOut(topic), c.topicCounter("strand_topic_bytes_out_total", topic)
	consume(kgo.Rack(racks[follower]))
	after, bytesWith := c.recordsOut(topic), c.topicCounter("strand_topic_bytes_out_total", topic)
	for id := int32(1); id <= 3; id++ {
		got := after[id] - before[id]
		switch {
		case id == follower && got < n:
			t.Fatalf("the follower in the consumer's rack (node %d) served %d records, want all %d (leader %d; per node %v → %v)", id, got, n, leader, before, after)
		case id != follower && got != 0:
			t.Fatalf("node %d, outside the consumer's rack, served %d records (follower %d, leader %d)", id, got, follower, leader)
		}
	}
	before = after
	consume()
	after, bytesWithout := c.recordsOut(topic), c.topicCounter("strand_topic_bytes_out_total", topic)
	if got := after[leader] - before[leader]; got < n {
		t.Fatalf("a consumer without a rack: the leader served %d records, want %d", got, n)
	}
	// The figure KIP-392 is for: the bytes a consumer in the follower's
	// rack reads from other racks, with client.rack and without it.
	crossWith, crossWithout := int64(0), int64(0)
	for id := int32(1); id <= 3; id++ {
		if id != follower {
			crossWith += bytesWith[id] - bytesBefore[id]
			crossWithout += bytesWithout[id] - bytesWith[id]
		}
	}
	if crossWith != 0 || crossWithout == 0 {
		t.Fatalf("bytes read across racks: %d with client.rack, %d without; want 0 and more than 0", crossWith, crossWithout)
	}
	t.Logf("a consumer in rack %s read %d bytes from other racks with client.rack, %d without", racks[follower], crossWith, crossWithout)
}

// recordsOut is each node's strand_topic_records_out_total of topic.
func (c *testCluster) recordsOut(topic string) map[int32]int64 {
	c.t.Helper()
	return c.topicCounter("strand_topic_records_out_total", topic)
}

// topicCounter is each node's value of the per-topic counter name.
func (c *testCluster) topicCounter(name, topic string) map[int32]int64 {
	c.t.Helper()
	out := map[int32]int64{}
	for id := range c.nodes {
		for _, line := range c.scrape(id, fmt.Sprintf("%s{topic=%q}", name, topic)) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				c.t.Fatalf("node %d: %q: %v", id, line, err)
			}
			out[id] = int64(v)
		}
	}
	return out
}

// waitFullISR waits until every partition of topic has all its replicas
// in sync.
func (c *testCluster) waitFullISR(ctx context.Context, adm *kadm.Client, topic string) {
	c.t.Helper()
	for {
		td, err := adm.ListTopics(ctx, topic)
		full := err == nil && td[topic].Err == nil
		for _, p := range td[topic].Partitions {
			full = full && len(p.ISR) == len(p.Replicas)
		}
		if full {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("ISR of %s never whole: %v %+v", topic, err, td[topic].Partitions)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
