package metrics

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster/quorum"
	"github.com/strandmq/strand/internal/kafka"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/testnet"
	"github.com/strandmq/strand/internal/vfs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs a broker and a wire server observed by a Metrics.
func start(t *testing.T) (*Metrics, string) {
	t.Helper()
	b, err := broker.Open(broker.Config{Dir: t.TempDir(), GroupInitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := New(b)
	srv, err := kafka.NewServer(kafka.Config{Broker: b, Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveListener(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return m, ln.Addr().String()
}

// value returns the value of the sample of family name whose labels include
// want, and whether there is one.
func value(t *testing.T, m *Metrics, name string, want map[string]string) (float64, bool) {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue samples
				}
			}
			return sampleValue(f.GetType(), s), true
		}
	}
	return 0, false
}

func sampleValue(typ dto.MetricType, s *dto.Metric) float64 {
	switch typ {
	case dto.MetricType_COUNTER:
		return s.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return s.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(s.GetHistogram().GetSampleCount())
	}
	return 0
}

func mustValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := value(t, m, name, labels)
	if !ok {
		t.Fatalf("no sample %s%v", name, labels)
	}
	return v
}

// TestScrapeAfterProduceConsume produces, consumes and commits through the
// wire, then checks that every family moved as it should.
func TestScrapeAfterProduceConsume(t *testing.T) {
	m, addr := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders"),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	topic := map[string]string{"topic": "orders"}
	if v := mustValue(t, m, "strand_topic_partitions", topic); v != 2 {
		t.Fatalf("strand_topic_partitions = %v, want 2", v)
	}

	const n = 10
	for i := range n {
		r := &kgo.Record{Topic: "orders", Partition: 0, Value: []byte(strings.Repeat("x", 100+i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if v := mustValue(t, m, "strand_topic_records_in_total", topic); v != n {
		t.Errorf("records in = %v, want %d", v, n)
	}
	bytesIn := mustValue(t, m, "strand_topic_bytes_in_total", topic)
	if bytesIn < n*100 {
		t.Errorf("bytes in = %v, want ≥ %d", bytesIn, n*100)
	}
	p0 := map[string]string{"topic": "orders", "partition": "0"}
	if v := mustValue(t, m, "strand_partition_log_end_offset", p0); v != n {
		t.Errorf("log end offset = %v, want %d", v, n)
	}
	if v := mustValue(t, m, "strand_partition_log_start_offset", p0); v != 0 {
		t.Errorf("log start offset = %v, want 0", v)
	}
	if v := mustValue(t, m, "strand_partition_size_bytes", p0); v < bytesIn {
		t.Errorf("size = %v, want ≥ bytes in %v", v, bytesIn)
	}

	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if v := mustValue(t, m, "strand_topic_records_out_total", topic); v < n {
		t.Errorf("records out = %v, want ≥ %d", v, n)
	}
	if v := mustValue(t, m, "strand_topic_bytes_out_total", topic); v < bytesIn {
		t.Errorf("bytes out = %v, want ≥ bytes in %v", v, bytesIn)
	}

	// A group that committed offset 4 of partition 0 lags 10 − 4 there and
	// 0 on the empty partition 1.
	commit := func(at int64) {
		t.Helper()
		var offs kadm.Offsets
		offs.AddOffset("orders", 0, at, -1)
		resp, err := adm.CommitOffsets(ctx, "audit", offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	commit(4)
	if v := mustValue(t, m, "strand_group_lag", map[string]string{"group": "audit", "topic": "orders", "partition": "0"}); v != n-4 {
		t.Errorf("group lag = %v, want %d", v, n-4)
	}
	if v := mustValue(t, m, "strand_group_total_lag", map[string]string{"group": "audit"}); v != n-4 {
		t.Errorf("group lag total = %v, want %d", v, n-4)
	}
	// Seeking back (committing an earlier offset) makes the lag jump.
	commit(1)
	if v := mustValue(t, m, "strand_group_total_lag", map[string]string{"group": "audit"}); v != n-1 {
		t.Errorf("group lag total after seeking back = %v, want %d", v, n-1)
	}
	// Time lag: the unread record at offset 1 has waited since it was
	// produced; the empty partition has nothing waiting.
	lag0 := mustValue(t, m, "strand_group_lag_seconds", map[string]string{"group": "audit", "topic": "orders", "partition": "0"})
	lag1 := mustValue(t, m, "strand_group_lag_seconds", map[string]string{"group": "audit", "topic": "orders", "partition": "1"})
	if lag0 <= 0 || lag1 != 0 {
		t.Errorf("time lag: partition 0 %vs, partition 1 %vs; want > 0 and 0", lag0, lag1)
	}
	top := mustValue(t, m, "strand_group_lag_seconds_max", map[string]string{"group": "audit"})
	if top < lag0 {
		t.Errorf("max time lag %v below partition 0's %v", top, lag0)
	}

	produce := map[string]string{"api": "Produce"}
	if v := mustValue(t, m, "strand_requests_total", produce); v < n {
		t.Errorf("Produce requests = %v, want ≥ %d", v, n)
	}
	if v := mustValue(t, m, "strand_request_duration_seconds", produce); v < n {
		t.Errorf("Produce latency samples = %v, want ≥ %d", v, n)
	}
	if v := mustValue(t, m, "strand_connections", nil); v < 1 {
		t.Errorf("connections = %v, want ≥ 1", v)
	}
}

// TestQuarantineCounted: an invalid record on a validated topic is counted
// as quarantined, a valid one as validated only.
func TestQuarantineCounted(t *testing.T) {
	m, addr := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v := "json"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{broker.ConfigValidation: &v}, "payments"); err != nil {
		t.Fatal(err)
	}
	for _, val := range []string{`{"ok":true}`, `not json`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte(val)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	topic := map[string]string{"topic": "payments"}
	if v := mustValue(t, m, "strand_topic_records_validated_total", topic); v != 2 {
		t.Errorf("validated = %v, want 2", v)
	}
	if v := mustValue(t, m, "strand_dlq_quarantined_total", topic); v != 1 {
		t.Errorf("quarantined = %v, want 1", v)
	}
	if v := mustValue(t, m, "strand_topic_records_in_total", topic); v != 1 {
		t.Errorf("records in = %v, want 1 (the valid one)", v)
	}
}

func TestHandlerServesMetricsAndHealth(t *testing.T) {
	m, _ := start(t)
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	get := func(path string) string {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
		return string(body)
	}
	if got := get("/healthz"); got != "ok\n" {
		t.Errorf("/healthz = %q", got)
	}
	body := get("/metrics")
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "strand_connections"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestHealthzReportsFailedPartitions: once a partition's fsync fails,
// /healthz answers 503 naming it and strand_partitions_failed counts it.
func TestHealthzReportsFailedPartitions(t *testing.T) {
	fs := vfs.NewMem()
	b, err := broker.Open(broker.Config{FS: fs, Dir: "/d", GroupInitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close() // reports the failed partition; not this test's concern
	m := New(b)
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "durable", Partitions: 1, Configs: map[string]string{broker.ConfigFlushMessages: "1"}}); err != nil {
		t.Fatal(err)
	}
	health := healthz(t, m)
	if code, body := health(); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthy broker: %d %q", code, body)
	}
	fs.InjectError(vfs.ErrorOnce(vfs.OpSync, "durable-0/00000000000000000000.log", syscall.EIO))
	if _, err := b.ProduceRecords(context.Background(), "durable", 0, []record.Record{{Value: []byte("v")}}); err == nil {
		t.Fatal("produce with a failing fsync succeeded")
	}
	if code, body := health(); code != http.StatusServiceUnavailable || !strings.Contains(body, "durable-0") {
		t.Fatalf("after a failed fsync: %d %q", code, body)
	}
	if v := mustValue(t, m, "strand_partitions_failed", nil); v != 1 {
		t.Fatalf("strand_partitions_failed = %v", v)
	}
}

// TestHealthzReportsAFencedMember: a cluster member reports its raft
// state and, once it has lost its quorum for a session, /healthz answers
// 503 saying it is fenced and strand_broker_fenced is 1.
func TestHealthzReportsAFencedMember(t *testing.T) {
	addr := testnet.FreeAddr(t)
	rs, err := quorum.OpenRaftStore(quorum.RaftConfig{NodeID: 0, Dir: t.TempDir(), Bind: addr, Voters: []quorum.Voter{{ID: 0, Addr: addr}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Open(broker.Config{Dir: t.TempDir(), Metadata: rs, HeartbeatInterval: 50 * time.Millisecond,
		SessionTimeout: 500 * time.Millisecond, GroupInitialRebalanceDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := New(b)
	health := healthz(t, m)
	for deadline := time.Now().Add(10 * time.Second); b.Fenced(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member was never unfenced")
		}
	}
	if code, body := health(); code != http.StatusOK {
		t.Fatalf("an unfenced member: %d %q", code, body)
	}
	if v := mustValue(t, m, "strand_raft_state", map[string]string{"state": "leader"}); v != 1 {
		t.Fatalf("strand_raft_state{state=leader} = %v on a single voter", v)
	}
	if v := mustValue(t, m, "strand_broker_fenced", nil); v != 0 {
		t.Fatalf("strand_broker_fenced = %v", v)
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !b.Fenced(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the member without its quorum never fenced itself")
		}
	}
	if code, body := health(); code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced") {
		t.Fatalf("a fenced member: %d %q", code, body)
	}
	if v := mustValue(t, m, "strand_broker_fenced", nil); v != 1 {
		t.Fatalf("strand_broker_fenced = %v once fenced", v)
	}
}

// healthz serves m's handler for the test and returns a function that
// reads /healthz: status code and body.
func healthz(t *testing.T, m *Metrics) func() (int, string) {
	hs := httptest.NewServer(m.Handler())
	t.Cleanup(hs.Close)
	return func() (int, string) {
		t.Helper()
		resp, err := http.Get(hs.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
}

// TestExpositionLints: the scrape passes Prometheus's own linter (names,
// units, _total only on counters, help on every family) after traffic
// that fills every family, and keeps no series for APIs Strand does not
// serve.
func TestExpositionLints(t *testing.T) {
	m, addr := start(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("lint"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var offsets kadm.Offsets // a group, so the lag families are in the scrape too
	offsets.Add(kadm.Offset{Topic: "lint", Partition: 0, At: 0})
	if err := kadm.NewClient(cl).CommitAllOffsets(context.Background(), "lint-group", offsets); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, unserved := range []string{`api="CreateDelegationToken"`, `api="Vote"`, `api="BrokerHeartbeat"`} {
		if bytes.Contains(body, []byte(unserved)) {
			t.Errorf("the scrape has series for %s, an API Strand does not serve", unserved)
		}
	}
	if !bytes.Contains(body, []byte(`strand_group_total_lag{group="lint-group"} 1`)) {
		t.Errorf("no strand_group_total_lag for the group")
	}
	if !bytes.Contains(body, []byte(`strand_requests_total{api="Produce"} 1`)) {
		t.Errorf("no strand_requests_total for the one Produce")
	}
}
