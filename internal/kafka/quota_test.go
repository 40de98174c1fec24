package kafka

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/record"
)

// TestMeter: the rate meter throttles only past its limit, for (rate −
// limit) / limit × window, at most the window; old samples leave the
// window. A pure function of the times given.
func TestMeter(t *testing.T) {
	t.Parallel()
	var m meter
	t0 := time.Unix(1000, 0)
	if d := m.record(t0, 500, 1000); d != 0 {
		t.Fatalf("half the limit in the first second throttled %v", d)
	}
	if d := m.record(t0.Add(500*time.Millisecond), 1500, 1000); d != time.Second {
		t.Fatalf("2,000 in the first second at 1,000/s: throttle %v, want 1s", d)
	}
	if d := m.record(t0.Add(time.Second), 1e9, 1000); d != quotaMaxDelay {
		t.Fatalf("a huge burst: throttle %v, want the cap %v", d, quotaMaxDelay)
	}
	if d := m.record(t0.Add(30*time.Second), 1, 1000); d != 0 {
		t.Fatalf("after the window passed: throttle %v", d)
	}
}

// TestQuotaResolution: Kafka's precedence of quota entities, and one meter
// per user under a default-user quota.
func TestQuotaResolution(t *testing.T) {
	t.Parallel()
	q := newQuotas()
	d := cluster.QuotaDefault
	q.set(map[cluster.QuotaEntity]map[string]float64{
		{User: "alice", ClientID: "etl"}: {quotaProduce: 1},
		{User: "alice"}:                  {quotaProduce: 2},
		{User: d}:                        {quotaProduce: 3},
		{ClientID: "etl"}:                {quotaProduce: 4, quotaFetch: 5},
	})
	for _, c := range []struct {
		kind, user, client string
		want               float64
		key                meterKey
	}{
		{quotaProduce, "alice", "etl", 1, meterKey{quotaProduce, "alice", "etl"}},
		{quotaProduce, "alice", "web", 2, meterKey{quotaProduce, "alice", ""}},
		{quotaProduce, "bob", "etl", 3, meterKey{quotaProduce, "bob", ""}},
		{quotaFetch, "bob", "etl", 5, meterKey{quotaFetch, "", "etl"}},
	} {
		got, key, ok := q.limit(c.kind, c.user, c.client)
		if !ok || got != c.want || key != c.key {
			t.Errorf("%s for %s/%s: %v %+v %v, want %v %+v", c.kind, c.user, c.client, got, key, ok, c.want, c.key)
		}
	}
	if _, _, ok := q.limit(quotaFetch, "bob", "web"); ok {
		t.Error("a quota for an entity nothing sets")
	}
}

// TestClientQuotasOverTheWire: kadm sets, describes and removes quotas
// (bad keys refused); a producer past its producer_byte_rate is told to
// back off (ThrottleMillis) and its connection is muted, while another
// client's produces are not throttled.
func TestClientQuotasOverTheWire(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	noisy := kadm.ClientQuotaEntity{kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr("noisy")}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: noisy, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 25000}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	bad, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: noisy, Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 50}}}})
	if err != nil || !errors.Is(bad[0].Err, kerr.InvalidRequest) {
		t.Fatalf("controller_mutation_rate (not enforced): %v %+v", err, bad)
	}
	desc, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: kmsg.StringPtr("noisy")}})
	if err != nil || len(desc) != 1 || len(desc[0].Values) != 1 || desc[0].Values[0].Value != 25000 {
		t.Fatalf("describe: %v %+v", err, desc)
	}

	// The noisy client sends 100 KB in 10 KB batches, 4× its 25 KB/s
	// quota in the first second: answers carry a throttle, and the
	// connection is muted for it.
	c := dial(t, ts.addr)
	throttled := 0
	value := make([]byte, 10_000)
	for i := range 10 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "q"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = batchOf(t, value, int64(i))
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		req.SetVersion(9)
		resp := c.doAs(req, 9, "noisy").(*kmsg.ProduceResponse)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce %d: error %d", i, resp.Topics[0].Partitions[0].ErrorCode)
		}
		if resp.ThrottleMillis > 0 {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("100 KB at a 25 KB/s quota was never throttled")
	}
	// Another client id has no quota: never throttled.
	quiet := dial(t, ts.addr)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "q", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: batchOf(t, value, 0)}}}}
	if r := quiet.doAs(req, 9, "quiet").(*kmsg.ProduceResponse); r.ThrottleMillis != 0 {
		t.Fatalf("a client without a quota throttled %d ms", r.ThrottleMillis)
	}
	// A consumer held to 25 KB/s that fetches the 100 KB back in one
	// response is throttled for it (spans are counted alike:
	// TestFetchRecordBytesCountsSpans).
	reader := kadm.ClientQuotaEntity{kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr("reader")}}
	if res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: reader, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 25000}}}}); err != nil || res[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	fr := dial(t, ts.addr).doAs(fetchFromStart("q", 0), 11, "reader").(*kmsg.FetchResponse)
	if got := len(fr.Topics[0].Partitions[0].RecordBatches); got < 100_000 || fr.ThrottleMillis == 0 {
		t.Fatalf("a fetch of %d bytes at a 25 KB/s consumer_byte_rate: throttle %d ms, want > 0", got, fr.ThrottleMillis)
	}
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: noisy, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}},
		{Entity: reader, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}}}})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("remove: %v %+v", err, res)
	}
	if desc, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(desc) != 0 {
		t.Fatalf("describe after removal: %v %+v", err, desc)
	}
}

// TestQuotaIsolation measures (figures printed, no timing assertion) what
// a noisy producer running flat out at ten times its producer_byte_rate
// does to another client's produce latency: the quiet client's p50 and
// p99 alone, then beside the throttled noisy one.
func TestQuotaIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement of several seconds")
	}
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "quiet", 1, nil)
	createTopic(t, ts.b, "noisy", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const quota = 1 << 20 // 1 MiB/s for the noisy client
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(ts.addr)))
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr("noisy")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}}}}); err != nil {
		t.Fatal(err)
	}
	quiet := mustClient(t, kgo.SeedBrokers(ts.addr), kgo.ClientID("quiet"), kgo.DefaultProduceTopic("quiet"), kgo.ProducerLinger(0))
	measure := func(d time.Duration) (p50, p99 time.Duration, n int) {
		var lat []time.Duration
		value := make([]byte, 1024)
		for end := time.Now().Add(d); time.Now().Before(end); {
			start := time.Now()
			if err := quiet.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100], len(lat)
	}
	a50, a99, an := measure(3 * time.Second)

	// Uncompressed: a quota counts the bytes on the wire.
	noisy := mustClient(t, kgo.SeedBrokers(ts.addr), kgo.ClientID("noisy"), kgo.DefaultProduceTopic("noisy"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // a quota counts the bytes on the wire
		kgo.MaxBufferedRecords(64))                        // flat out, not gigabytes queued in the client
	// beside runs the noisy producer flat out (random, incompressible
	// 64 KiB records) while the quiet client is measured.
	beside := func(d time.Duration) (p50, p99 time.Duration, n int, noisyMiBps float64) {
		var sent atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := make([]byte, 64<<10)
			_, _ = rand.Read(value)
			for {
				select {
				case <-stop:
					return
				default:
				}
				noisy.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
					if err == nil {
						sent.Add(int64(len(value)))
					}
				})
			}
		}()
		start := time.Now()
		p50, p99, n = measure(d)
		elapsed := time.Since(start)
		close(stop)
		wg.Wait()
		noisy.PurgeTopicsFromProducing("noisy") // what the quota still holds back
		return p50, p99, n, float64(sent.Load()) / elapsed.Seconds() / (1 << 20)
	}
	b50, b99, bn, held := beside(5 * time.Second)
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr("noisy")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}}); err != nil {
		t.Fatal(err)
	}
	c50, c99, cn, free := beside(3 * time.Second)
	t.Logf("quota isolation: quiet client alone p50 %v p99 %v (%d produces); beside a noisy producer offered flat out "+
		"and held by its 1 MiB/s quota to %.2f MiB/s: p50 %v p99 %v (%d produces), p99 ×%.2f; "+
		"beside the same producer without a quota (%.0f MiB/s): p50 %v p99 %v (%d produces), p99 ×%.2f",
		a50, a99, an, held, b50, b99, bn, float64(b99)/float64(a99), free, c50, c99, cn, float64(c99)/float64(a99))
}

func mustClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// doAs is do with clientID as the request header's client id.
func (c *rawClient) doAs(req kmsg.Request, v int16, clientID string) kmsg.Response {
	c.t.Helper()
	req.SetVersion(v)
	c.corr++
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, c.corr)
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return c.recv(req, c.corr)
}

// batchOf is a one-record batch of value.
func batchOf(t *testing.T, value []byte, ts int64) []byte {
	t.Helper()
	b, err := record.Encode(0, []record.Record{{Timestamp: 1_700_000_000_000 + ts, Value: value}}, record.DefaultBatchOptions())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRequestPercentageQuota: request_percentage is the CPU time of
// handling a client's requests as a percentage of one core. A client id
// held to 0.05% (0.5 ms of CPU a second) that sends Metadata requests flat
// out is throttled within a bounded number of requests, and its connection
// muted; another client id is never throttled; and a consumer held to 5%
// whose Fetch long-polls an empty partition for 3 × 400 ms is not
// throttled — waiting costs no CPU (a wall-clock meter would read 100%).
func TestRequestPercentageQuota(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "rp", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, kgo.SeedBrokers(ts.addr)))
	entity := func(id string) kadm.ClientQuotaEntity {
		return kadm.ClientQuotaEntity{kadm.ClientQuotaEntityComponent{Type: "client-id", Name: kmsg.StringPtr(id)}}
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: entity("busy"), Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 0.05}}},
		{Entity: entity("poller"), Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 5}}},
	})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("alter: %v %+v", err, res)
	}
	desc, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchName: kmsg.StringPtr("busy")}})
	if err != nil || len(desc) != 1 || desc[0].Values[0].Key != "request_percentage" || desc[0].Values[0].Value != 0.05 {
		t.Fatalf("describe: %v %+v", err, desc)
	}

	metadata := func() *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = nil // all topics
		return req
	}
	const maxRequests = 5000
	busy := dial(t, ts.addr)
	n, throttle := 0, int32(0)
	start := time.Now()
	for n < maxRequests && throttle == 0 {
		n++
		throttle = busy.doAs(metadata(), 9, "busy").(*kmsg.MetadataResponse).ThrottleMillis
	}
	t.Logf("busy (0.05%% of a core): throttled %d ms after %d Metadata requests in %v", throttle, n, time.Since(start).Round(time.Millisecond))
	if throttle == 0 {
		t.Fatalf("%d Metadata requests at a 0.05%% request_percentage quota were never throttled", n)
	}
	quiet := dial(t, ts.addr)
	for i := range 2 * n {
		if r := quiet.doAs(metadata(), 9, "quiet").(*kmsg.MetadataResponse); r.ThrottleMillis != 0 {
			t.Fatalf("request %d of a client without a quota throttled %d ms", i, r.ThrottleMillis)
		}
	}

	poller := dial(t, ts.addr)
	for i := range 3 {
		r := poller.doAs(fetchFromStart("rp", 400), 11, "poller").(*kmsg.FetchResponse)
		if r.ThrottleMillis != 0 {
			t.Fatalf("long poll %d of a 5%% consumer throttled %d ms: waiting was counted as CPU", i, r.ThrottleMillis)
		}
	}
}

// fetchFromStart is a consumer's Fetch of partition 0 of topic from offset
// 0, up to 1 MiB, waiting up to maxWaitMillis for at least a byte.
func fetchFromStart(topic string, maxWaitMillis int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, maxWaitMillis, 1, 1<<20
	tp := kmsg.NewFetchRequestTopic()
	tp.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.PartitionMaxBytes = 1 << 20
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	return req
}
