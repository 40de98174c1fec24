package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
)

// TestShareFetchProtocol drives ShareGroupHeartbeat, ShareFetch and
// ShareAcknowledge by hand: the share-session epoch rules, the error
// codes of a bad acknowledgement, delivery counts on redelivery, and the
// release of a member's records when its connection closes.
func TestShareFetchProtocol(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "q", 1, nil)
	for i := range 5 {
		if _, err := ts.b.ProduceRecords(context.Background(), "q", 0, []record.Record{{Value: []byte{byte('a' + i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	v := "earliest"
	if err := ts.b.Share().Coordinator.AlterConfigs(context.Background(), "g", map[string]*string{share.ConfigAutoOffsetReset: &v}, false); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", "m1", []string{"q"}
	if r := c.do(hb, 1).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch < 1 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 {
		t.Fatalf("join: %+v", r)
	}

	fetch := func(epoch int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m1"), epoch
		req.MaxRecords, req.MaxBytes, req.MaxWaitMillis = 3, 1<<20, 0
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tp.ID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}}}
		return c.do(req, 2).(*kmsg.ShareFetchResponse)
	}
	ack := func(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
	}
	acquired := func(r *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		if len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
			return nil
		}
		return r.Topics[0].Partitions[0].AcquiredRecords
	}

	if r := fetch(3); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Errorf("epoch 3 without a session: code %d, want SHARE_SESSION_NOT_FOUND", r.ErrorCode)
	}
	if r := fetch(0, ack(0, 0, 1)); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("acknowledgements on epoch 0: code %d, want INVALID_REQUEST", r.ErrorCode)
	}
	r := fetch(0)
	if got := acquired(r); r.ErrorCode != 0 || len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("first fetch: code %d, acquired %+v; want offsets 0-2, delivered once", r.ErrorCode, got)
	}
	if r.AcquisitionLockTimeoutMillis != 30000 {
		t.Errorf("lock timeout %d ms, want Kafka's default 30000", r.AcquisitionLockTimeoutMillis)
	}
	if r := fetch(5); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("a stale epoch: code %d, want INVALID_SHARE_SESSION_EPOCH", r.ErrorCode)
	}
	// Accept 0, release 1-2, and an acknowledgement of an offset not held.
	r = fetch(1, ack(0, 0, 1), ack(1, 2, 2))
	if p := r.Topics[0].Partitions[0]; p.AcknowledgeErrorCode != 0 {
		t.Fatalf("accept and release: acknowledge code %d", p.AcknowledgeErrorCode)
	}
	// Three records at most: the released two again (delivered twice
	// now), then the next new one.
	type rng struct {
		first, last int64
		count       int16
	}
	var got []rng
	for _, a := range acquired(r) {
		got = append(got, rng{a.FirstOffset, a.LastOffset, a.DeliveryCount})
	}
	if len(got) != 2 || got[0] != (rng{1, 2, 2}) || got[1] != (rng{3, 3, 1}) {
		t.Errorf("after the release: acquired %+v; want 1-2 delivered twice, then 3", got)
	}
	if r := fetch(2, ack(4, 4, 1)); r.Topics[0].Partitions[0].AcknowledgeErrorCode != kerr.InvalidRecordState.Code {
		t.Errorf("accepting an offset not acquired: %+v, want INVALID_RECORD_STATE", r.Topics[0].Partitions[0])
	}
	st := ts.b.Share().Manager.Stats("g")
	if len(st) != 1 || st[0].Start != 1 || st[0].Acquired != 4 { // 1-3, and 4 by the last fetch
		t.Fatalf("before the connection closes: %+v", st)
	}

	// The connection closes: its session closes and the records it held
	// are available at once.
	c.conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	for ts.b.Share().Manager.Stats("g")[0].Acquired != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("records still acquired after the connection closed: %+v", ts.b.Share().Manager.Stats("g"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShareFetchSessionKeepsUnknownPartitions: a partition a ShareFetch
// lists joins the member's share session even when this node cannot
// resolve it yet (its topic or partition not in this node's metadata, as
// on a cluster node a moment behind a topic's creation): the partition is
// answered with its error, and once the node knows it, fetches of the
// session deliver its records although the client — which counts it as
// in the session — never lists it again.
func TestShareFetchSessionKeepsUnknownPartitions(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "q", 1, nil)
	v := "earliest"
	if err := ts.b.Share().Coordinator.AlterConfigs(context.Background(), "g", map[string]*string{share.ConfigAutoOffsetReset: &v}, false); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	fetch := func(epoch int32, parts ...int32) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m1"), epoch
		req.MaxRecords, req.MaxBytes, req.MaxWaitMillis = 10, 1<<20, 0
		if len(parts) > 0 {
			rt := kmsg.ShareFetchRequestTopic{TopicID: tp.ID}
			for _, p := range parts {
				rt.Partitions = append(rt.Partitions, kmsg.ShareFetchRequestTopicPartition{Partition: p})
			}
			req.Topics = []kmsg.ShareFetchRequestTopic{rt}
		}
		return c.do(req, 2).(*kmsg.ShareFetchResponse)
	}
	partition := func(r *kmsg.ShareFetchResponse, p int32) *kmsg.ShareFetchResponseTopicPartition {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if r.Topics[i].Partitions[j].Partition == p {
					return &r.Topics[i].Partitions[j]
				}
			}
		}
		return nil
	}

	r := fetch(0, 0, 1)
	if p := partition(r, 1); r.ErrorCode != 0 || p == nil || p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("opening with a partition the node does not have: %+v, want UNKNOWN_TOPIC_OR_PARTITION for partition 1", r)
	}
	if p := partition(fetch(1), 1); p == nil || p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("partition 1 left the session: %+v", p)
	}
	if _, err := ts.b.CreatePartitions("q", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.b.ProduceRecords(context.Background(), "q", 1, []record.Record{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	p := partition(fetch(2), 1)
	if p == nil || p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 {
		t.Fatalf("partition 1 once the node has it: %+v, want its record at offset 0", p)
	}
}

// TestShareFetchAcquireModes: in the batch-optimized acquire mode (0, the
// default) a ShareFetch that reaches MaxRecords in the middle of a log
// batch acquires the rest of that batch too, and is sent that batch only;
// in the record-limit mode (1) it stops at MaxRecords.
func TestShareFetchAcquireModes(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "q", 1, nil)
	for range 2 { // two batches of four records: offsets 0-3 and 4-7
		rs := []record.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}, {Value: []byte("d")}}
		if _, err := ts.b.ProduceRecords(context.Background(), "q", 0, rs); err != nil {
			t.Fatal(err)
		}
	}
	v := "earliest"
	if err := ts.b.Share().Coordinator.AlterConfigs(context.Background(), "g", map[string]*string{share.ConfigAutoOffsetReset: &v}, false); err != nil {
		t.Fatal(err)
	}
	fetch := func(member string, mode int8) kmsg.ShareFetchResponseTopicPartition {
		c := dial(t, ts.addr)
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", member, []string{"q"}
		if r := c.do(hb, 1).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != 0 {
			t.Fatalf("%s joins: %+v", member, r)
		}
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr(member)
		req.MaxRecords, req.BatchSize, req.MaxBytes, req.MaxWaitMillis, req.ShareAcquireMode = 3, 3, 1<<20, 0, mode
		req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: tp.ID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
		r := c.do(req, 2).(*kmsg.ShareFetchResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("%s fetches: %+v", member, r)
		}
		return r.Topics[0].Partitions[0]
	}
	batches := func(b []byte) (out [][2]int64) {
		for s := record.Batches(b); s.Next(); {
			h := s.Header()
			out = append(out, [2]int64{int64(h.BaseOffset), int64(h.LastOffset())})
		}
		return out
	}
	p := fetch("m1", 0)
	if a := p.AcquiredRecords; len(a) != 1 || a[0].FirstOffset != 0 || a[0].LastOffset != 3 {
		t.Errorf("batch-optimized, 3 records asked: acquired %+v, want the whole first batch, 0-3", a)
	}
	if got := batches(p.Records); len(got) != 1 || got[0] != [2]int64{0, 3} {
		t.Errorf("batch-optimized: sent batches %v, want only 0-3", got)
	}
	p = fetch("m2", 1)
	if a := p.AcquiredRecords; len(a) != 1 || a[0].FirstOffset != 4 || a[0].LastOffset != 6 {
		t.Errorf("record-limit, 3 records asked: acquired %+v, want 4-6", a)
	}
}
