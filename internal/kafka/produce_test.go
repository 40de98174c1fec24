package kafka

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

func initProducerID(t *testing.T, c *rawClient) (int64, int16) {
	t.Helper()
	resp := c.do(kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// TestIdempotentRetryWrittenOnce sends the same idempotent ProduceRequest
// twice: the second is acknowledged with the first's offset and nothing is
// written again.
func TestIdempotentRetryWrittenOnce(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "idem", 1, nil)
	c := dial(t, ts.addr)
	pid, epoch := initProducerID(t, c)

	for _, v := range []int16{3, 7, 9, 12} {
		p, _ := ts.b.Partition("idem", 0)
		end := p.LogEndOffset()
		seq := int32(end) // one producer, so its sequence is the offset
		req := produceReq("idem", 0, batch(t, 5, pid, epoch, seq))
		first := producePartition(t, c.do(req, v))
		req = produceReq("idem", 0, batch(t, 5, pid, epoch, seq))
		second := producePartition(t, c.do(req, v))
		if first.ErrorCode != 0 || second.ErrorCode != 0 {
			t.Fatalf("v%d: errors %v, %v", v, kerr.ErrorForCode(first.ErrorCode), kerr.ErrorForCode(second.ErrorCode))
		}
		if first.BaseOffset != int64(end) || second.BaseOffset != first.BaseOffset {
			t.Fatalf("v%d: offsets %d then %d, want %d twice", v, first.BaseOffset, second.BaseOffset, end)
		}
		if got := p.LogEndOffset(); got != end+5 {
			t.Fatalf("v%d: log end %d after the retry, want %d (written once)", v, got, end+5)
		}
	}
}

func TestIdempotentSequenceAndEpochErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "seq", 1, nil)
	c := dial(t, ts.addr)
	pid, _ := initProducerID(t, c)

	code := func(n int, epoch int16, seq int32) int16 {
		return producePartition(t, c.do(produceReq("seq", 0, batch(t, n, pid, epoch, seq)), 9)).ErrorCode
	}
	steps := []struct {
		name  string
		n     int
		epoch int16
		seq   int32
		want  *kerr.Error
	}{
		{"first", 3, 0, 0, nil},
		{"next", 2, 0, 3, nil},
		{"gap", 1, 0, 9, kerr.OutOfOrderSequenceNumber},
		{"old batch not cached shape", 1, 0, 1, kerr.OutOfOrderSequenceNumber},
		{"new epoch must start at 0", 1, 1, 5, kerr.OutOfOrderSequenceNumber},
		{"new epoch", 1, 1, 0, nil},
		{"fenced epoch", 1, 0, 5, kerr.InvalidProducerEpoch},
	}
	for _, s := range steps {
		got := code(s.n, s.epoch, s.seq)
		want := int16(0)
		if s.want != nil {
			want = s.want.Code
		}
		if got != want {
			t.Fatalf("%s: %v, want %v", s.name, kerr.ErrorForCode(got), s.want)
		}
	}
}

func TestProduceErrors(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{DisableAutoCreateTopics: true}, Config{})
	createTopic(t, ts.b, "small", 2, map[string]string{broker.ConfigMaxMessageBytes: "200"})
	c := dial(t, ts.addr)

	good := batch(t, 1, -1, -1, -1)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-1] ^= 0xff
	twoBatches := append(append([]byte(nil), good...), good...)
	for _, tc := range []struct {
		name      string
		topic     string
		partition int32
		records   []byte
		acks      int16
		want      *kerr.Error
	}{
		{"ok", "small", 0, good, -1, nil},
		{"bad crc", "small", 0, badCRC, -1, kerr.CorruptMessage},
		{"truncated", "small", 0, good[:len(good)-3], -1, kerr.CorruptMessage},
		{"null records", "small", 0, nil, -1, kerr.CorruptMessage},
		{"two batches", "small", 0, twoBatches, 1, kerr.InvalidRecord},
		{"too large", "small", 1, batch(t, 20, -1, -1, -1), -1, kerr.MessageTooLarge},
		{"unknown topic", "nope", 0, good, -1, kerr.UnknownTopicOrPartition},
		{"unknown partition", "small", 7, good, -1, kerr.UnknownTopicOrPartition},
		{"bad acks", "small", 0, good, 2, kerr.InvalidRequiredAcks},
	} {
		req := produceReq(tc.topic, tc.partition, tc.records)
		req.Acks = tc.acks
		got := producePartition(t, c.do(req, 9))
		want := int16(0)
		if tc.want != nil {
			want = tc.want.Code
		}
		if got.ErrorCode != want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(got.ErrorCode), tc.want)
		}
		if tc.want != nil && (got.ErrorMessage == nil || *got.ErrorMessage == "") {
			t.Errorf("%s: no error message", tc.name)
		}
	}
	p, _ := ts.b.Partition("small", 0)
	if end := p.LogEndOffset(); end != 1 {
		t.Fatalf("log end %d, want 1: only the good batch is written", end)
	}
}

// TestProduceAcksZero: no response is sent, the next request's response
// comes next; an acks=0 failure closes the connection.
func TestProduceAcksZero(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{DisableAutoCreateTopics: true}, Config{})
	createTopic(t, ts.b, "z", 1, nil)
	c := dial(t, ts.addr)
	req := produceReq("z", 0, batch(t, 2, -1, -1, -1))
	req.Acks = 0
	c.send(req, 7)
	md := kmsg.NewPtrMetadataRequest()
	resp := c.do(md, 9).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 2 { // z and __consumer_offsets
		t.Fatalf("metadata: %d topics", len(resp.Topics))
	}
	p, _ := ts.b.Partition("z", 0)
	if p.LogEndOffset() != 2 {
		t.Fatalf("log end %d, want 2", p.LogEndOffset())
	}
	bad := produceReq("missing", 0, batch(t, 1, -1, -1, -1))
	bad.Acks = 0
	c.send(bad, 7)
	c.expectClosed()
}

func TestProduceLogAppendTime(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "lat", 1, map[string]string{broker.ConfigMessageTimestampType: "LogAppendTime"})
	c := dial(t, ts.addr)
	got := producePartition(t, c.do(produceReq("lat", 0, batch(t, 3, -1, -1, -1)), 9))
	if got.ErrorCode != 0 || got.LogAppendTime <= 0 {
		t.Fatalf("error %v, log append time %d", kerr.ErrorForCode(got.ErrorCode), got.LogAppendTime)
	}
	recs, err := ts.b.Fetch("lat", 0, 0, 1<<20)
	if err != nil || len(recs) != 3 {
		t.Fatalf("fetch: %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.Timestamp != got.LogAppendTime {
			t.Fatalf("record timestamp %d, want log append time %d", r.Timestamp, got.LogAppendTime)
		}
	}
}

// TestProduceByTopicID covers v13, which names topics by id.
func TestProduceByTopicID(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "byid", 1, nil)
	c := dial(t, ts.addr)
	req := produceReq("", 0, batch(t, 1, -1, -1, -1))
	req.Topics[0].TopicID = tp.ID
	if got := producePartition(t, c.do(req, 13)); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("v13 produce: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	req.Topics[0].TopicID = [16]byte{1}
	if got := producePartition(t, c.do(req, 13)); got.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	if off, _ := ts.b.ListOffsets("byid", 0, broker.TimestampLatest); off != record.Offset(1) {
		t.Fatalf("latest %d", off)
	}
}

// TestPipelinedLargeProducesKeepTheirBytes pipelines produce requests of
// mixed sizes (kilobytes to megabytes, so frames are read into pooled
// buffers, grown, returned and reused while later requests arrive) and
// then reads the log back: every value is exactly what was sent.
func TestPipelinedLargeProducesKeepTheirBytes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "big", 1, map[string]string{"max.message.bytes": "8388608"})
	c := dial(t, ts.addr)
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := []int{300 << 10, 3 << 20, 100 << 10, 1500 << 10, 5 << 10, 2 << 20}
	var values [][]byte
	var reqs []kmsg.Request
	for i := range 18 {
		v := make([]byte, sizes[i%len(sizes)])
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		values = append(values, v)
		b, err := record.Encode(0, []record.Record{{Timestamp: 1_700_000_000_000, Value: v}}, record.DefaultBatchOptions())
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, produceReq("big", 0, b))
	}
	// Send everything before reading anything (the responses are small
	// enough to wait in the socket buffers).
	var corrs []int32
	for _, r := range reqs {
		corrs = append(corrs, c.send(r, 9))
	}
	for i, corr := range corrs {
		if pp := producePartition(t, c.recv(reqs[i], corr)); pp.ErrorCode != 0 || pp.BaseOffset != int64(i) {
			t.Fatalf("produce %d: %v at offset %d", i, kerr.ErrorForCode(pp.ErrorCode), pp.BaseOffset)
		}
	}
	tp, _ := ts.b.Topic("big")
	for off := int64(0); off < int64(len(values)); {
		req := fetchReq("big", tp.ID, map[int32]int64{0: off})
		req.Topics[0].Partitions[0].PartitionMaxBytes = 8 << 20
		sp := fetchPartition(t, c.do(req, 12))
		s := record.Batches(sp.RecordBatches)
		for s.Next() {
			b, err := record.Decode(s.Batch())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Records {
				if int64(r.Offset) != off || !bytes.Equal(r.Value, values[off]) {
					t.Fatalf("record at offset %d (want %d) differs from what was produced", r.Offset, off)
				}
				off++
			}
		}
	}
}
