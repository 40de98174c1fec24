package kafka_test

// The interop tests drive a real Strand broker, started with strand.Start on
// a free loopback port, with real Kafka clients: franz-go (kgo), IBM/sarama
// and segmentio/kafka-go. Each test produces keyed records with headers to a
// six-partition topic and consumes them back, checking that every record is
// present exactly once, at the partition its key maps to (Kafka's murmur2,
// partitioner.ForKey) and at the offset the producer was told, with key,
// value and headers intact.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/partitioner"
)

const (
	numRecords    = 10_000
	numPartitions = 6
	testTimeout   = 3 * time.Minute
)

func testLogger() *slog.Logger {
	level := slog.LevelError + 4
	if os.Getenv("STRAND_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// start runs a broker on dir; the caller closes it (tests that restart it
// close it themselves).
func start(t *testing.T, dir string) *strand.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: dir, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type header struct {
	key   string
	value []byte
}

// rec is a record the test produces, and what it expects to read back.
type rec struct {
	idx     int
	key     []byte
	value   []byte
	headers []header
}

func testRecords(client string) []rec {
	out := make([]rec, numRecords)
	for i := range out {
		out[i] = rec{
			idx:   i,
			key:   fmt.Appendf(nil, "user-%d", i%997),
			value: fmt.Appendf(nil, "%s value %d %s", client, i, bytes.Repeat([]byte{byte('a' + i%26)}, i%50)),
			headers: []header{
				{"idx", []byte(strconv.Itoa(i))},
				{"client", []byte(client)},
				{"empty", nil},
			},
		}
	}
	return out
}

// position is where a record landed.
type position struct {
	partition int32
	offset    int64
}

// got is a consumed record.
type got struct {
	position
	key, value []byte
	headers    []header
}

func idxOf(t *testing.T, hs []header) int {
	t.Helper()
	for _, h := range hs {
		if h.key == "idx" {
			i, err := strconv.Atoi(string(h.value))
			if err != nil {
				t.Fatalf("bad idx header %q", h.value)
			}
			return i
		}
	}
	t.Fatal("record without idx header")
	return -1
}

// verify checks what was consumed against what was produced and
// acknowledged.
func verify(t *testing.T, recs []rec, acked map[int]position, consumed []got) {
	t.Helper()
	if len(acked) != len(recs) {
		t.Fatalf("%d of %d records acknowledged", len(acked), len(recs))
	}
	seen := make(map[int]bool, len(recs))
	perPartition := make(map[int32][]got)
	for _, g := range consumed {
		i := idxOf(t, g.headers)
		if i < 0 || i >= len(recs) || seen[i] {
			t.Fatalf("record %d consumed twice or unknown", i)
		}
		seen[i] = true
		r := recs[i]
		if !bytes.Equal(g.key, r.key) || !bytes.Equal(g.value, r.value) {
			t.Fatalf("record %d: key/value %q/%q, want %q/%q", i, g.key, g.value, r.key, r.value)
		}
		if len(g.headers) != len(r.headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.headers), len(r.headers))
		}
		for j, h := range g.headers {
			if h.key != r.headers[j].key || !bytes.Equal(h.value, r.headers[j].value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, h.key, h.value, r.headers[j].key, r.headers[j].value)
			}
		}
		if want := int32(partitioner.ForKey(r.key, numPartitions)); g.partition != want {
			t.Fatalf("record %d (key %q) in partition %d, partitioner.ForKey says %d", i, r.key, g.partition, want)
		}
		if g.position != acked[i] {
			t.Fatalf("record %d consumed at %+v, acknowledged at %+v", i, g.position, acked[i])
		}
		perPartition[g.partition] = append(perPartition[g.partition], g)
	}
	if len(seen) != len(recs) {
		t.Fatalf("consumed %d of %d records", len(seen), len(recs))
	}
	for p, gs := range perPartition {
		lastByKey := make(map[string]int)
		for j, g := range gs {
			// Offsets are dense from 0: nothing was written twice.
			if g.offset != int64(j) {
				t.Fatalf("partition %d: record %d of the partition at offset %d", p, j, g.offset)
			}
			i := idxOf(t, g.headers)
			if last, ok := lastByKey[string(g.key)]; ok && last > i {
				t.Fatalf("partition %d: key %q record %d after record %d", p, g.key, i, last)
			}
			lastByKey[string(g.key)] = i
		}
	}
}

func createTopic(t *testing.T, ctx context.Context, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, numPartitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
}

// kgoProduce produces recs with an idempotent kgo producer (the default) and
// returns where each landed.
func kgoProduce(t *testing.T, ctx context.Context, addr, topic string, recs []rec) map[int]position {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type ack struct {
		idx int
		pos position
		err error
	}
	acks := make(chan ack, len(recs))
	for _, r := range recs {
		kr := &kgo.Record{Key: r.key, Value: r.value}
		for _, h := range r.headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.key, Value: h.value})
		}
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			acks <- ack{r.idx, position{kr.Partition, kr.Offset}, err}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	out := make(map[int]position, len(recs))
	for range recs {
		a := <-acks
		if a.err != nil {
			t.Fatalf("produce record %d: %v", a.idx, a.err)
		}
		out[a.idx] = a.pos
	}
	return out
}

// kgoConsume reads n records from the start of every partition.
func kgoConsume(t *testing.T, ctx context.Context, addr, topic string, n int) []got {
	t.Helper()
	offsets := make(map[int32]kgo.Offset)
	for p := range int32(numPartitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []got
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			g := got{position: position{r.Partition, r.Offset}, key: r.Key, value: r.Value}
			for _, h := range r.Headers {
				g.headers = append(g.headers, header{h.Key, h.Value})
			}
			out = append(out, g)
		})
	}
	return out
}

func TestFranzGo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start(t, t.TempDir())
	defer b.Close()
	createTopic(t, ctx, b.Addr(), "franz")
	recs := testRecords("franz-go")
	acked := kgoProduce(t, ctx, b.Addr(), "franz", recs)
	verify(t, recs, acked, kgoConsume(t, ctx, b.Addr(), "franz", len(recs)))
}

// TestFranzGoRestart restarts the broker between produce and consume:
// nothing acknowledged may be lost (a clean shutdown), and the producer
// state and topic metadata come back.
func TestFranzGoRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	b := start(t, dir)
	createTopic(t, ctx, b.Addr(), "restart")
	recs := testRecords("franz-go-restart")
	acked := kgoProduce(t, ctx, b.Addr(), "restart", recs)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = start(t, dir)
	defer b.Close()
	verify(t, recs, acked, kgoConsume(t, ctx, b.Addr(), "restart", len(recs)))
}

// javaPartitioner is sarama's hook for Kafka's Java default partitioner
// (murmur2), which sarama does not ship: its default hashes with FNV-1a.
type javaPartitioner struct{}

func (javaPartitioner) Partition(m *sarama.ProducerMessage, n int32) (int32, error) {
	key, err := m.Key.Encode()
	if err != nil {
		return -1, err
	}
	return int32(partitioner.ForKey(key, int(n))), nil
}

func (javaPartitioner) RequiresConsistency() bool { return true }

func saramaConfig(v sarama.KafkaVersion) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = "strand-interop"
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = func(string) sarama.Partitioner { return javaPartitioner{} }
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Return.Errors = true
	return cfg
}

// TestSarama runs sarama at three protocol generations: 0.11 (the oldest
// with record headers and idempotence: Produce v3, Fetch v4-5), 2.1 (its
// default) and 3.6.
func TestSarama(t *testing.T) {
	t.Parallel()
	for _, v := range []sarama.KafkaVersion{sarama.V0_11_0_0, sarama.V2_1_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			testSarama(t, v)
		})
	}
}

func testSarama(t *testing.T, version sarama.KafkaVersion) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start(t, t.TempDir())
	defer b.Close()
	createTopic(t, ctx, b.Addr(), "sarama")
	recs := testRecords("sarama")

	prod, err := sarama.NewAsyncProducer([]string{b.Addr()}, saramaConfig(version))
	if err != nil {
		t.Fatal(err)
	}
	acked := make(map[int]position, len(recs))
	go func() {
		for _, r := range recs {
			m := &sarama.ProducerMessage{Topic: "sarama", Key: sarama.ByteEncoder(r.key), Value: sarama.ByteEncoder(r.value), Metadata: r.idx}
			for _, h := range r.headers {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.key), Value: h.value})
			}
			prod.Input() <- m
		}
	}()
	for len(acked) < len(recs) {
		select {
		case m := <-prod.Successes():
			acked[m.Metadata.(int)] = position{m.Partition, m.Offset}
		case perr := <-prod.Errors():
			t.Fatalf("sarama produce: %v", perr.Err)
		case <-ctx.Done():
			t.Fatalf("sarama: %d of %d acknowledged: %v", len(acked), len(recs), ctx.Err())
		}
	}
	if err := prod.Close(); err != nil {
		t.Fatal(err)
	}

	cons, err := sarama.NewConsumer([]string{b.Addr()}, saramaConfig(version))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	msgs := make(chan *sarama.ConsumerMessage)
	var pcs []sarama.PartitionConsumer
	for p := range int32(numPartitions) {
		pc, err := cons.ConsumePartition("sarama", p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-ctx.Done():
				}
			}
		}()
	}
	var consumed []got
	for len(consumed) < len(recs) {
		select {
		case m := <-msgs:
			g := got{position: position{m.Partition, m.Offset}, key: m.Key, value: m.Value}
			for _, h := range m.Headers {
				g.headers = append(g.headers, header{string(h.Key), h.Value})
			}
			consumed = append(consumed, g)
		case <-ctx.Done():
			t.Fatalf("sarama: consumed %d of %d: %v", len(consumed), len(recs), ctx.Err())
		}
	}
	for _, pc := range pcs {
		pc.AsyncClose()
	}
	cancel() // release the forwarding goroutines
	verify(t, recs, acked, consumed)
}

func TestKafkaGo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start(t, t.TempDir())
	defer b.Close()
	createTopic(t, ctx, b.Addr(), "kafkago")
	recs := testRecords("kafka-go")

	var mu sync.Mutex
	acked := make(map[int]position, len(recs))
	var werr error
	transport := &kafkago.Transport{}
	defer transport.CloseIdleConnections()
	w := &kafkago.Writer{
		Addr:         kafkago.TCP(b.Addr()),
		Transport:    transport,
		Topic:        "kafkago",
		Balancer:     kafkago.Murmur2Balancer{},
		RequiredAcks: kafkago.RequireAll,
		BatchSize:    500,
		BatchTimeout: time.Millisecond,
		Completion: func(msgs []kafkago.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				werr = err
				return
			}
			for _, m := range msgs {
				acked[idxOf(t, kafkaGoHeaders(m.Headers))] = position{int32(m.Partition), m.Offset}
			}
		},
	}
	msgs := make([]kafkago.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafkago.Message{Key: r.key, Value: r.value}
		for _, h := range r.headers {
			msgs[i].Headers = append(msgs[i].Headers, kafkago.Header{Key: h.key, Value: h.value})
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatal(werr)
	}

	var consumed []got
	for p := range numPartitions {
		want := 0
		for _, pos := range acked {
			if pos.partition == int32(p) {
				want++
			}
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{b.Addr()}, Topic: "kafkago", Partition: p, MaxBytes: 1 << 20,
			// Close waits for an in-flight long poll: keep it short.
			MaxWait: 250 * time.Millisecond})
		for range want {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("kafka-go read partition %d: %v", p, err)
			}
			consumed = append(consumed, got{position: position{int32(m.Partition), m.Offset}, key: m.Key, value: m.Value, headers: kafkaGoHeaders(m.Headers)})
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	verify(t, recs, acked, consumed)
}

func kafkaGoHeaders(hs []kafkago.Header) []header {
	out := make([]header, 0, len(hs))
	for _, h := range hs {
		out = append(out, header{h.Key, h.Value})
	}
	return out
}

// TestKadmAdmin drives the admin APIs through franz-go's kadm, at the
// versions kgo picks (the newest both sides speak).
func TestKadmAdmin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start(t, t.TempDir())
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	retention := "3600000"
	if r, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &retention}, "admin"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "rf3"); err == nil && r.Err == nil {
		t.Fatal("replication factor 3 on one broker must fail")
	}
	md, err := adm.Metadata(ctx, "admin")
	if err != nil || len(md.Brokers) != 1 || len(md.Topics["admin"].Partitions) != 2 {
		t.Fatalf("metadata: %v %+v", err, md)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("admin", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			found = c.MaybeValue() == retention
		}
	}
	if !found {
		t.Fatal("retention.ms not described as set")
	}
	lat := "LogAppendTime"
	acr, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: &lat}}, "admin")
	if err != nil || acr[0].Err != nil {
		t.Fatalf("alter: %v %v", err, acr)
	}
	bad := "x"
	acr, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &bad}}, "admin")
	if len(acr) != 1 || !errors.Is(acr[0].Err, kerr.InvalidConfig) {
		t.Fatalf("bad value: %+v", acr)
	}
	if _, err := adm.DescribeBrokerConfigs(ctx); err != nil {
		t.Fatalf("broker configs: %v", err)
	}
	cpr, err := adm.CreatePartitions(ctx, 2, "admin")
	if err != nil || cpr.Error() != nil {
		t.Fatalf("create partitions: %v %v", err, cpr.Error())
	}

	before := time.Now().UnixMilli()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "admin", Partition: 0, Key: []byte{byte(i)}, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "admin")
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets: %v", err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 20 {
		t.Fatalf("end offsets sum to %d, want 20", total)
	}
	after, err := adm.ListOffsetsAfterMilli(ctx, before-1, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := after.Lookup("admin", 0); !ok || o.Offset != 0 {
		t.Fatalf("offset after %d: %+v", before, o)
	}
	if _, err := adm.ListMaxTimestampOffsets(ctx, "admin"); err != nil {
		t.Fatalf("max timestamp: %v", err)
	}
	del := kadm.Offsets{}
	for p := range int32(4) {
		o, _ := ends.Lookup("admin", p)
		del.Add(kadm.Offset{Topic: "admin", Partition: p, At: o.Offset / 2})
	}
	drs, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := drs.Lookup("admin", 0); d.Err != nil || d.LowWatermark != ends["admin"][0].Offset/2 {
		t.Fatalf("delete records: %+v", d)
	}
	starts, err := adm.ListStartOffsets(ctx, "admin")
	if o, _ := starts.Lookup("admin", 0); err != nil || o.Offset != ends["admin"][0].Offset/2 {
		t.Fatalf("start offset after delete records: %+v %v", o, err)
	}
	dtr, err := adm.DeleteTopics(ctx, "admin")
	if err != nil || dtr.Error() != nil {
		t.Fatalf("delete topics: %v %v", err, dtr.Error())
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || topics.Has("admin") {
		t.Fatalf("topic still listed after delete (%v)", err)
	}
}
