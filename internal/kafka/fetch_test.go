package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

func fetchReq(topic string, id broker.TopicID, offsets map[int32]int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes = 0, 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for p := range int32(len(offsets) + 8) {
		off, ok := offsets[p]
		if !ok {
			continue
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchPartition(t *testing.T, resp kmsg.Response) kmsg.FetchResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.FetchResponse)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response: %v, %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
	}
	return r.Topics[0].Partitions[0]
}

// countRecords counts the records in fetched batches from offset from on.
func countRecords(t *testing.T, b []byte, from int64) int {
	t.Helper()
	n := 0
	s := record.Batches(b)
	for s.Next() {
		batch, err := record.Decode(s.Batch())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range batch.Records {
			if int64(r.Offset) >= from {
				n++
			}
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	return n
}

func TestFetchEveryVersion(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "f", 1, nil)
	c := dial(t, ts.addr)
	for range 3 {
		if got := producePartition(t, c.do(produceReq("f", 0, batch(t, 4, -1, -1, -1)), 7)); got.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(got.ErrorCode))
		}
	}
	for v := int16(4); v <= 18; v++ {
		sp := fetchPartition(t, c.do(fetchReq("f", tp.ID, map[int32]int64{0: 5}), v))
		if sp.ErrorCode != 0 || sp.HighWatermark != 12 || sp.LastStableOffset != 12 {
			t.Fatalf("v%d: %v hwm %d lso %d", v, kerr.ErrorForCode(sp.ErrorCode), sp.HighWatermark, sp.LastStableOffset)
		}
		if v >= 5 && sp.LogStartOffset != 0 {
			t.Fatalf("v%d: log start %d", v, sp.LogStartOffset)
		}
		// Offset 5 is inside the second batch: it comes whole.
		if n := countRecords(t, sp.RecordBatches, 0); n != 8 {
			t.Fatalf("v%d: %d records from offset 5's batch on, want 8", v, n)
		}
		if n := countRecords(t, sp.RecordBatches, 5); n != 7 {
			t.Fatalf("v%d: %d records at or after 5, want 7", v, n)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "fe", 1, nil)
	c := dial(t, ts.addr)
	producePartition(t, c.do(produceReq("fe", 0, batch(t, 10, -1, -1, -1)), 7))
	p, _ := tp.Partition(0)
	if _, err := p.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		topic  string
		part   int32
		offset int64
		epoch  int32
		want   *kerr.Error
	}{
		{"below log start", "fe", 0, 2, -1, kerr.OffsetOutOfRange},
		{"past log end", "fe", 0, 11, -1, kerr.OffsetOutOfRange},
		{"at log end", "fe", 0, 10, -1, nil},
		{"unknown topic", "nope", 0, 0, -1, kerr.UnknownTopicOrPartition},
		{"unknown partition", "fe", 3, 0, -1, kerr.UnknownTopicOrPartition},
		{"future epoch", "fe", 0, 4, 7, kerr.UnknownLeaderEpoch},
	} {
		req := fetchReq(tc.topic, tp.ID, map[int32]int64{tc.part: tc.offset})
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = tc.epoch
		sp := fetchPartition(t, c.do(req, 12))
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		if sp.ErrorCode != want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(sp.ErrorCode), tc.want)
		}
		if sp.RecordBatches == nil {
			t.Errorf("%s: null record set (librdkafka rejects size -1)", tc.name)
		}
		if tc.name == "below log start" && sp.LogStartOffset != 4 {
			t.Errorf("log start offset %d, want 4", sp.LogStartOffset)
		}
	}
	// v13+: unknown topic id.
	sp := fetchPartition(t, c.do(fetchReq("", broker.TopicID{9}, map[int32]int64{0: 0}), 13))
	if sp.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	// A request naming a session the server never created.
	req := fetchReq("fe", tp.ID, map[int32]int64{0: 4})
	req.SessionID, req.SessionEpoch = 42, 3
	if r := c.do(req, 12).(*kmsg.FetchResponse); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// A new session request is answered sessionless.
	req.SessionID, req.SessionEpoch = 0, 0
	if r := c.do(req, 12).(*kmsg.FetchResponse); r.ErrorCode != 0 || r.SessionID != 0 {
		t.Fatalf("new session: %v, session id %d", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
}

// TestFetchLongPollWakesOnAppend: a fetch at the log end with a long
// MaxWait returns the records appended while it waits.
func TestFetchLongPollWakesOnAppend(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "lp", 2, nil)
	c := dial(t, ts.addr)
	req := fetchReq("lp", tp.ID, map[int32]int64{0: 0, 1: 0})
	req.MaxWaitMillis, req.MinBytes = 60_000, 1
	corr := c.send(req, 11)
	if _, _, err := ts.b.Produce("lp", []byte("wake"), []byte("up")); err != nil {
		t.Fatal(err)
	}
	r := c.recv(req, corr).(*kmsg.FetchResponse)
	n := 0
	for _, sp := range r.Topics[0].Partitions {
		n += countRecords(t, sp.RecordBatches, 0)
	}
	if n != 1 {
		t.Fatalf("long poll returned %d records, want 1", n)
	}
}

// TestFetchMaxBytes: the response budget is honoured across partitions,
// except for the first batch (KIP-74).
func TestFetchMaxBytes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "mb", 2, nil)
	c := dial(t, ts.addr)
	big := batch(t, 50, -1, -1, -1)
	for p := range int32(2) {
		for range 3 {
			producePartition(t, c.do(produceReq("mb", p, batch(t, 50, -1, -1, -1)), 7))
		}
	}
	req := fetchReq("mb", tp.ID, map[int32]int64{0: 0, 1: 0})
	req.MaxBytes = 10 // smaller than one batch
	r := c.do(req, 11).(*kmsg.FetchResponse)
	if got := len(r.Topics[0].Partitions[0].RecordBatches); got != len(big) {
		t.Fatalf("first partition got %d bytes, want exactly one batch (%d)", got, len(big))
	}
	if got := len(r.Topics[0].Partitions[1].RecordBatches); got != 0 {
		t.Fatalf("second partition got %d bytes past the budget", got)
	}
	req.MaxBytes = int32(2*len(big) + 1)
	req.Topics[0].Partitions[0].PartitionMaxBytes = int32(len(big))
	r = c.do(req, 11).(*kmsg.FetchResponse)
	if got := len(r.Topics[0].Partitions[0].RecordBatches); got != len(big) {
		t.Fatalf("partition max bytes: got %d bytes, want one batch", got)
	}
	if got := len(r.Topics[0].Partitions[1].RecordBatches); got != len(big) {
		t.Fatalf("second partition got %d bytes, want one batch within the remaining budget", got)
	}
}

// TestPipelinedResponsesInOrder sends many requests before reading any:
// the responses come back in request order.
func TestPipelinedResponsesInOrder(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "pipe", 1, nil)
	c := dial(t, ts.addr)
	type sent struct {
		req  kmsg.Request
		corr int32
	}
	var all []sent
	for i := range 200 {
		var req kmsg.Request
		switch i % 3 {
		case 0:
			req = produceReq("pipe", 0, batch(t, 1, -1, -1, -1))
		case 1:
			req = kmsg.NewPtrMetadataRequest()
		default:
			req = kmsg.NewPtrApiVersionsRequest()
		}
		v := map[int16]int16{0: 12, 3: 13, apiKeyApiVersions: 4}[req.Key()]
		all = append(all, sent{req, c.send(req, v)})
	}
	var offsets []int64
	for _, s := range all {
		resp := c.recv(s.req, s.corr) // fails on an out-of-order correlation id
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatal(kerr.ErrorForCode(code))
			}
			offsets = append(offsets, pr.Topics[0].Partitions[0].BaseOffset)
		}
	}
	for i, o := range offsets {
		if o != int64(i) {
			t.Fatalf("produce %d got offset %d", i, o)
		}
	}
}
