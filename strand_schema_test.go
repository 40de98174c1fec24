package strand_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/record"
)

// TestSchemaRegistryListener drives the embedded registry with franz-go's
// pkg/sr client: schemas are kept in _schemas, which clients cannot write,
// and a restart serves them again with ids going on from there.
func TestSchemaRegistryListener(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func() (*strand.Broker, *sr.Client) {
		b, err := strand.Start(ctx, strand.Config{Dir: dir, SchemaRegistryAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr()))
		if err != nil {
			t.Fatal(err)
		}
		return b, cl
	}
	b, cl := start()
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	s, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: v1})
	if err != nil || s.ID != 1 {
		t.Fatalf("create: %+v %v", s, err)
	}

	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	err = kc.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte(`{"keytype":"NOOP","magic":0}`)}).FirstErr()
	kc.Close()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("a client's produce to _schemas: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, cl = start()
	defer b.Close()
	got, err := cl.SchemaByID(ctx, 1)
	if err != nil || got.Schema != v1 {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	s2, err := cl.CreateSchema(ctx, "names-value", sr.Schema{Schema: `{"type":"string"}`})
	if err != nil || s2.ID != 2 {
		t.Fatalf("create after restart: %+v %v", s2, err)
	}
}

type order struct {
	ID   int64  `avro:"id"`
	Item string `avro:"item"`
}

type payment struct {
	Amount int64 `avro:"amount"`
}

const (
	orderSchema   = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	paymentSchema = `{"type":"record","name":"Payment","namespace":"shop","fields":[{"name":"amount","type":"long"}]}`
)

// schemaFixture is a broker with its registry, a topic validated against
// it, and franz-go's serde for an Order (of the topic's subject) and a
// Payment (of another subject).
type schemaFixture struct {
	b                  *strand.Broker
	kc                 *kgo.Client
	serde              *sr.Serde
	orderID, paymentID int
}

func newSchemaFixture(t *testing.T, ctx context.Context, topic string, configs map[string]string) *schemaFixture {
	t.Helper()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), SchemaRegistryAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr()))
	if err != nil {
		t.Fatal(err)
	}
	os, err := cl.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderSchema})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cl.CreateSchema(ctx, "payments-value", sr.Schema{Schema: paymentSchema})
	if err != nil {
		t.Fatal(err)
	}
	oa, pa := avro.MustParse(orderSchema), avro.MustParse(paymentSchema)
	serde := new(sr.Serde)
	serde.Register(os.ID, order{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(oa, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(oa, b, v) }))
	serde.Register(ps.ID, payment{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(pa, v) }))
	if err := b.CreateTopic(topic, 1, configs); err != nil {
		t.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(2), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return &schemaFixture{b: b, kc: kc, serde: serde, orderID: os.ID, paymentID: ps.ID}
}

// mixedRecords are valid Orders interleaved with the four kinds of poison,
// each with the reason the broker must give.
func (f *schemaFixture) mixedRecords(t *testing.T, topic string) (recs []*kgo.Record, reasons map[string]string) {
	t.Helper()
	reasons = map[string]string{}
	valid, err := f.serde.Encode(order{ID: 1, Item: "book"})
	if err != nil {
		t.Fatal(err)
	}
	unknown := append([]byte{0, 0, 0, 0, 99}, valid[5:]...)
	other, err := f.serde.Encode(payment{Amount: 7})
	if err != nil {
		t.Fatal(err)
	}
	undecodable := append(append([]byte(nil), valid[:5]...), 0x02) // id 1, then a string cut short
	poison := []struct {
		key, reason string
		value       []byte
	}{
		{"unknown", "schema: id 99: unknown schema id", unknown},
		{"other", fmt.Sprintf("schema: id %d is not a schema of subject %q (it is registered under payments-value)", f.paymentID, topic+"-value"), other},
		{"undecodable", fmt.Sprintf("schema: id %d (AVRO): avro:", f.orderID), undecodable},
		{"plain", "schema: no Confluent wire-format header", []byte("hello")},
	}
	for i := range 12 {
		if i%3 == 2 {
			p := poison[(i/3)%len(poison)]
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(p.key), Value: p.value})
			reasons[p.key] = p.reason
			continue
		}
		v, err := f.serde.Encode(order{ID: int64(i), Item: "item"})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("ok-%d", i)), Value: v})
	}
	return recs, reasons
}

func consumeAll(t *testing.T, ctx context.Context, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: got %d of %d records: %v", topic, len(out), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// TestSchemaValidationDLQ: a producer mixing valid Avro records (franz-go's
// serde) with unknown ids, another subject's ids, undecodable payloads and
// values without the wire format. Every valid record is at the offset the
// producer was told; every other is in orders.dlq with its reason; the
// producer never fails.
func TestSchemaValidationDLQ(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newSchemaFixture(t, ctx, "orders", map[string]string{"strand.validation": "schema"})
	recs, reasons := f.mixedRecords(t, "orders")
	if err := f.kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	told := map[string]int64{}
	for _, r := range recs {
		if _, bad := reasons[string(r.Key)]; !bad {
			told[string(r.Key)] = r.Offset
		}
	}
	got := consumeAll(t, ctx, f.b.Addr(), "orders", len(told))
	for _, r := range got {
		want, ok := told[string(r.Key)]
		if !ok || want != r.Offset {
			t.Errorf("orders: %s at %d; the producer was told %d (valid: %v)", r.Key, r.Offset, want, ok)
		}
		var o order
		if err := f.serde.Decode(r.Value, &o); err != nil || o.Item != "item" {
			t.Errorf("orders: %s does not decode: %+v %v", r.Key, o, err)
		}
	}
	dlq := consumeAll(t, ctx, f.b.Addr(), "orders.dlq", len(recs)-len(told))
	for _, r := range dlq {
		var reason string
		for _, h := range r.Headers {
			if h.Key == "strand.dlq.reason" {
				reason = string(h.Value)
			}
		}
		if want := reasons[string(r.Key)]; want == "" || !strings.HasPrefix(reason, want) {
			t.Errorf("orders.dlq: %s with reason %q, want %q…", r.Key, reason, want)
		}
	}
}

// TestSchemaValidationReject: with strand.validation.action=reject a batch
// holding one invalid record fails INVALID_RECORD, with one error per
// invalid record naming its place in the batch, and nothing of it is
// written; a batch of valid records then lands from offset 0.
func TestSchemaValidationReject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newSchemaFixture(t, ctx, "strict", map[string]string{"strand.validation": "schema", "strand.validation.action": "reject"})
	recs, reasons := f.mixedRecords(t, "strict")
	batch := make([]record.Record, len(recs))
	for i, r := range recs {
		batch[i] = record.Record{Offset: record.Offset(i), Key: r.Key, Value: r.Value, Timestamp: time.Now().UnixMilli()}
	}
	raw, err := record.Encode(0, batch, record.DefaultBatchOptions())
	if err != nil {
		t.Fatal(err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("strict")
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, f.kc)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "strict", mresp.Topics[0].TopicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, f.kc)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("mixed batch: error %d, want INVALID_RECORD", p.ErrorCode)
	}
	if len(p.ErrorRecords) != len(reasons) {
		t.Fatalf("%d record errors, want %d: %+v", len(p.ErrorRecords), len(reasons), p.ErrorRecords)
	}
	for _, er := range p.ErrorRecords {
		key := string(recs[er.RelativeOffset].Key)
		if msg := *er.ErrorMessage; !strings.HasPrefix(msg, reasons[key]) {
			t.Errorf("record %d (%s): %q, want %q…", er.RelativeOffset, key, msg, reasons[key])
		}
	}
	var valid []*kgo.Record
	for _, r := range recs {
		if _, bad := reasons[string(r.Key)]; !bad {
			valid = append(valid, r)
		}
	}
	if err := f.kc.ProduceSync(ctx, valid...).FirstErr(); err != nil {
		t.Fatalf("valid records: %v", err)
	}
	if valid[0].Offset != 0 {
		t.Fatalf("the first valid record is at %d: the rejected batch was written", valid[0].Offset)
	}
	bad := &kgo.Record{Topic: "strict", Value: []byte("hello")}
	if err := f.kc.ProduceSync(ctx, bad).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a client's invalid record: %v, want INVALID_RECORD", err)
	}
	hresp, err := http.Get("http://" + f.b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if want := fmt.Sprintf(`strand_topic_records_rejected_total{topic="strict"} %d`, len(reasons)+1); !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %q", want)
	}
}
