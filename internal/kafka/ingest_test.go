package kafka

// Validation at ingress over the wire (DESIGN.md invariant 7): franz-go
// producers and consumers, kadm for configs, raw kmsg for exact batches.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

func ingestClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads a partition from the start until it has want records
// (more, if a fetch brings them: the caller checks the count).
func consumeAll(t *testing.T, addr, topic string, partition int32, want int) []*kgo.Record {
	t.Helper()
	cl := ingestClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {partition: kgo.NewOffset().AtStart()},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: consumed %d records, want %d", topic, partition, len(out), want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func recHeader(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestValidationOverTheWire: franz-go producers, one per codec, send a mix
// of valid and invalid JSON to a strand.validation=json topic: every
// produce succeeds, consumers of the topic get exactly the valid records at
// the offsets their producer was told, and the DLQ holds exactly the
// invalid ones with reasons and source coordinates.
func TestValidationOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	adm := kadm.NewClient(ingestClient(t, ts.addr))
	ctx := context.Background()
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{broker.ConfigValidation: kadm.StringPtr("json")}, "orders")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	bad := `{"type":"object","properties":{"a":{"type":"nope"}}}`
	resp, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{
		broker.ConfigValidation: kadm.StringPtr("jsonschema"), broker.ConfigValidationSchema: &bad}, "bad-schema")
	if !errors.Is(err, kerr.InvalidConfig) && !errors.Is(resp.Err, kerr.InvalidConfig) {
		t.Fatalf("bad schema: %v %v, want INVALID_CONFIG", err, resp.Err)
	}

	valid := map[int64]string{}   // offset → value the producer was told
	invalid := map[int64]string{} // offset → value
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	for ci, codec := range codecs {
		// A long linger and one ProduceSync: the records travel as one
		// batch, so each batch mixes valid and invalid records.
		cl := ingestClient(t, ts.addr, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond),
			kgo.DefaultProduceTopic("orders"))
		var recs []*kgo.Record
		for i := range 20 {
			v := fmt.Sprintf(`{"codec":%d,"i":%d,"pad":"%0100d"}`, ci, i, i)
			if i%3 == 1 {
				v = fmt.Sprintf(`{"codec":%d,"i":%d,`, ci, i) // truncated
			}
			recs = append(recs, &kgo.Record{Key: []byte("k"), Value: []byte(v), Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}})
		}
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				t.Fatalf("codec %d: produce: %v", ci, r.Err)
			}
			if idx, _ := strconv.Atoi(string(r.Record.Headers[0].Value)); idx%3 == 1 {
				invalid[r.Record.Offset] = string(r.Record.Value)
			} else {
				valid[r.Record.Offset] = string(r.Record.Value)
			}
		}
	}
	got := consumeAll(t, ts.addr, "orders", 0, len(valid))
	if len(got) != len(valid) {
		t.Fatalf("consumed %d records, want the %d valid ones", len(got), len(valid))
	}
	for _, r := range got {
		if valid[r.Offset] != string(r.Value) {
			t.Fatalf("offset %d holds %q, the producer was told %q", r.Offset, r.Value, valid[r.Offset])
		}
	}
	dlq := consumeAll(t, ts.addr, "orders.dlq", 0, len(invalid))
	if len(dlq) != len(invalid) {
		t.Fatalf("DLQ holds %d records, want %d", len(dlq), len(invalid))
	}
	for _, r := range dlq {
		off, _ := strconv.ParseInt(recHeader(r, ingest.HeaderSourceOffset), 10, 64)
		if invalid[off] != string(r.Value) || recHeader(r, ingest.HeaderSourceTopic) != "orders" ||
			recHeader(r, ingest.HeaderSourcePartition) != "0" || string(r.Key) != "k" || recHeader(r, "n") == "" {
			t.Fatalf("DLQ record %+v does not match the quarantined offset %d (%q)", r, off, invalid[off])
		}
		if reason := recHeader(r, ingest.HeaderReason); reason != "json: unexpected end of input after "+strconv.Itoa(len(r.Value))+" bytes" {
			t.Fatalf("reason %q", reason)
		}
	}
	if s := ts.b.TopicIngestStats("orders"); s.Validated != 100 || s.Quarantined != int64(len(invalid)) {
		t.Fatalf("stats %+v", s)
	}
}

// TestValidationWholeBatchAndIdempotentRetry: a batch whose every record is
// invalid still takes its offsets (the producer's base offset is honest and
// the next batch follows it), and an idempotent retry of a partially
// invalid batch is answered from producer state and quarantines nothing
// again.
func TestValidationWholeBatchAndIdempotentRetry(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "v", 1, map[string]string{broker.ConfigValidation: "json"})
	c := dial(t, ts.addr)
	pid, epoch := initProducerID(t, c)

	encode := func(seq int32, values ...string) []byte {
		recs := make([]record.Record, len(values))
		for i, v := range values {
			recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1_700_000_000_000, Value: []byte(v)}
		}
		opts := record.DefaultBatchOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Codec = pid, epoch, seq, record.CodecZstd
		b, err := record.Encode(0, recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(b []byte) int64 {
		t.Helper()
		r := producePartition(t, c.do(produceReq("v", 0, b), 9))
		if r.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		return r.BaseOffset
	}
	if off := produce(encode(0, "x", "y", "z")); off != 0 {
		t.Fatalf("all-invalid batch at %d", off)
	}
	mixed := encode(3, `1`, `oops`, `3`)
	for range 2 {
		if off := produce(mixed); off != 3 {
			t.Fatalf("mixed batch at %d, want 3", off)
		}
	}
	if off := produce(encode(6, `7`)); off != 6 {
		t.Fatalf("next batch at %d, want 6", off)
	}
	got := consumeAll(t, ts.addr, "v", 0, 3)
	want := map[int64]string{3: "1", 5: "3", 6: "7"}
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d", len(got), len(want))
	}
	for _, r := range got {
		if want[r.Offset] != string(r.Value) {
			t.Fatalf("offset %d: %q", r.Offset, r.Value)
		}
	}
	dlq := consumeAll(t, ts.addr, "v.dlq", 0, 4)
	var offs []string
	for _, r := range dlq {
		offs = append(offs, recHeader(r, ingest.HeaderSourceOffset))
	}
	if fmt.Sprint(offs) != "[0 1 2 4]" {
		t.Fatalf("DLQ source offsets %v, want [0 1 2 4] (the retry must not quarantine twice)", offs)
	}
}

// TestRedriveOverTheWire: a jsonschema topic quarantines records of the
// wrong shape; after AlterConfigs accepts that shape, a redrive moves them
// into the topic; a rerun writes nothing; an interrupted redrive resumed
// writes nothing twice.
func TestRedriveOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "pay", 1, map[string]string{broker.ConfigValidation: "jsonschema",
		broker.ConfigValidationSchema: `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`})
	ctx := context.Background()
	cl := ingestClient(t, ts.addr, kgo.DefaultProduceTopic("pay"), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
	for i := range 12 {
		v := fmt.Sprintf(`{"amount":%d}`, i)
		if i%2 == 1 {
			v = fmt.Sprintf(`{"amount":"%d"}`, i)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dlq := consumeAll(t, ts.addr, "pay.dlq", 0, 6)
	if len(dlq) != 6 || recHeader(dlq[0], ingest.HeaderReason) != "jsonschema: /amount: got string, want number" {
		t.Fatalf("DLQ: %d records, reason %q", len(dlq), recHeader(dlq[0], ingest.HeaderReason))
	}
	adm := kadm.NewClient(cl)
	accept := `{"type":"object","properties":{"amount":{"type":["number","string"]}},"required":["amount"]}`
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: broker.ConfigValidationSchema, Value: &accept}}, "pay")
	if err != nil || rs[0].Err != nil {
		t.Fatalf("alter: %v %v", err, rs)
	}
	// Interrupted after its first step (one DLQ batch: one record here).
	cctx, cancel := context.WithCancel(ctx)
	res, err := ts.b.Redrive(cctx, "pay", broker.RedriveOptions{ChunkBytes: 1, Progress: func(broker.RedriveResult, int64) { cancel() }})
	if !errors.Is(err, context.Canceled) || res.Redriven != 1 {
		t.Fatalf("interrupted: %+v %v", res, err)
	}
	res, err = ts.b.Redrive(ctx, "pay", broker.RedriveOptions{})
	if err != nil || res != (broker.RedriveResult{Redriven: 5, AlreadyDone: 1}) {
		t.Fatalf("resumed: %+v %v", res, err)
	}
	res, err = ts.b.Redrive(ctx, "pay", broker.RedriveOptions{})
	if err != nil || res != (broker.RedriveResult{AlreadyDone: 6}) {
		t.Fatalf("rerun: %+v %v", res, err)
	}
	got := consumeAll(t, ts.addr, "pay", 0, 12)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Fatalf("%s written twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
	if len(seen) != 12 {
		t.Fatalf("%d distinct records in the topic, want 12", len(seen))
	}
	// The redrive's progress is an ordinary group: visible over the wire.
	lags, err := adm.Lag(ctx, ingest.RedriveGroup("pay"))
	if err != nil {
		t.Fatal(err)
	}
	if l := lags[ingest.RedriveGroup("pay")]; l.Lag.Total() != 0 {
		t.Fatalf("redrive group lag %d, want 0", l.Lag.Total())
	}
}
