package strand_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// metricsClient scrapes /metrics uncompressed: the long runs scrape
// several times a second while they measure, and the handler's gzip of
// every page took CPU from the broker being measured (13% of the
// process's in a profile of the sustained phase).
var metricsClient = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// metricValue scrapes one unlabelled or labelled sample whose line starts
// with prefix (name and labels) from a broker's /metrics.
func metricValue(t *testing.T, b *strand.Broker, prefix string) float64 {
	t.Helper()
	resp, err := metricsClient.Get("http://" + b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no metric %s", prefix)
	return 0
}

// The object store down under load: produce goes on, nothing is deleted
// locally that the store does not hold, the metrics say uploads fail and
// lag, and /healthz says uploads are behind (past a 1 s bound here); once
// the store answers the uploads catch up on their own (the broker's
// upload loop, every 100 ms here), local retention follows, /healthz is
// "ok" again, and every record reads back from offset 0.
func TestTieredStoreOutage(t *testing.T) {
	st := storetest.Start(t)
	store := &strand.TieredStorageConfig{Endpoint: st.URL, Bucket: st.Bucket, AccessKey: st.AccessKey, SecretKey: st.SecretKey,
		UploadInterval: 100 * time.Millisecond, UploadLagAlert: time.Second}
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), TieredStorage: store,
		RetentionCheckInterval: 100 * time.Millisecond, MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	const topic = "outage"
	createTieredTopic(t, cl, topic, 1)
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 100)
	for deadline := time.Now().Add(20 * time.Second); listOffset(t, cl, topic, -4) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing was uploaded and deleted locally before the outage")
		}
	}

	st.SetDown(true)
	errorsBefore := metricValue(t, b, "strand_tiered_upload_errors_total")
	localBefore := listOffset(t, cl, topic, -4)
	produce(100, 400) // about 15 segments
	for deadline := time.Now().Add(20 * time.Second); metricValue(t, b, "strand_tiered_upload_errors_total") == errorsBefore; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no upload error counted with the store down")
		}
	}
	time.Sleep(time.Second) // retention passes run meanwhile
	if local := listOffset(t, cl, topic, -4); local != localBefore {
		t.Fatalf("local log start moved from %d to %d with the store down: data not in the store was deleted", localBefore, local)
	}
	labels := `{partition="0",topic="outage"}`
	if lag := metricValue(t, b, "strand_partition_upload_lag_records"+labels); lag < 300 {
		t.Fatalf("upload lag %v records with the store down, want the outage's records", lag)
	}
	if lag := metricValue(t, b, "strand_partition_upload_lag_seconds"+labels); lag <= 0 {
		t.Fatalf("upload lag %v s with the store down", lag)
	}
	// Past the 1 s bound, /healthz says uploads are behind, and still
	// answers 200: a liveness probe must not restart the broker for it.
	health := awaitHealth(t, b, "degraded", 20*time.Second)
	if !strings.Contains(health, "object store: every request has failed") || !strings.Contains(health, "outage-0: its oldest sealed segment") {
		t.Fatalf("/healthz with the store down names neither the store nor the partition:\n%s", health)
	}

	st.SetDown(false)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		local, tiered := listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -5)
		if local > 400 && local == tiered+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("uploads did not catch up after the outage: local start %d, latest tiered %d", local, tiered)
		}
	}
	if lag := metricValue(t, b, "strand_partition_upload_lag_seconds"+labels); lag != 0 {
		t.Errorf("upload lag %v s after catching up", lag)
	}
	awaitHealth(t, b, "ok", 20*time.Second)
	for i, r := range consumeFromZero(t, b.Addr(), topic, 500)[:500] {
		if r.Offset != int64(i) || string(r.Value) != tieredValue(i) {
			t.Fatalf("record %d: offset %d", i, r.Offset)
		}
	}
}

// awaitHealth polls the broker's /healthz until its answer (always 200
// here) starts with want, and returns it.
func awaitHealth(t *testing.T, b *strand.Broker, want string, within time.Duration) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + b.MetricsAddr() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		last = string(body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz answered %d:\n%s", resp.StatusCode, last)
		}
		if strings.HasPrefix(last, want) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never said %q in %v; last:\n%s", want, within, last)
		}
	}
}
