package metrics

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// A tiered partition's scrape says how much is remote and how far uploads
// lag, and lints.
func TestTieredFamilies(t *testing.T) {
	st := storetest.Start(t)
	s3, err := tiered.NewS3(tiered.S3Config{Endpoint: st.URL, Bucket: st.Bucket, Region: st.Region, AccessKey: st.AccessKey, SecretKey: st.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	tier, err := tiered.New(tiered.Config{Store: s3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.Open(broker.Config{Dir: t.TempDir(), GroupInitialRebalanceDelay: -1,
		Tiered: broker.TieredConfig{Tier: tier, Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.CreateTopic(broker.TopicSpec{Name: "tiered", Partitions: 1, Configs: map[string]string{
		"remote.storage.enable": "true", "segment.bytes": "1024"}}); err != nil {
		t.Fatal(err)
	}
	p, err := b.Partition("tiered", 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		batch, err := record.Encode(0, []record.Record{{Timestamp: time.Now().Add(-time.Minute).UnixMilli(), Value: bytes.Repeat([]byte("v"), 100)}},
			record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(context.Background(), batch, broker.AcksLeader); err != nil {
			t.Fatal(err)
		}
	}
	m := New(b)
	labels := map[string]string{"topic": "tiered", "partition": "0"}
	b.TierPass(false) // the partition's tier is known from the first pass on
	if v := mustValue(t, m, "strand_partition_upload_lag_seconds", labels); v != 0 {
		t.Fatalf("upload lag %v s with every sealed segment uploaded", v)
	}
	for range 20 { // more sealed segments, written a minute ago, not uploaded yet
		batch, err := record.Encode(0, []record.Record{{Timestamp: time.Now().Add(-time.Minute).UnixMilli(), Value: bytes.Repeat([]byte("v"), 100)}},
			record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Append(context.Background(), batch, broker.AcksLeader); err != nil {
			t.Fatal(err)
		}
	}
	if v := mustValue(t, m, "strand_partition_upload_lag_seconds", labels); v < 59 {
		t.Fatalf("upload lag %v s with segments of a minute ago waiting, want ≥ 59", v)
	}
	b.TierPass(false)
	if v := mustValue(t, m, "strand_partition_remote_bytes", labels); v <= 0 {
		t.Fatalf("remote bytes %v after an upload pass", v)
	}
	segs := mustValue(t, m, "strand_tiered_uploaded_segments_total", nil)
	if segs < 5 || segs != mustValue(t, m, "strand_partition_remote_segments", labels) {
		t.Fatalf("%v segments uploaded, %v remote", segs, mustValue(t, m, "strand_partition_remote_segments", labels))
	}
	if v := mustValue(t, m, "strand_partition_upload_lag_seconds", labels); v != 0 {
		t.Fatalf("upload lag %v s after the pass uploaded every sealed segment", v)
	}
	lag := mustValue(t, m, "strand_partition_upload_lag_records", labels)
	if lag <= 0 || lag >= 100 {
		t.Fatalf("upload lag %v: want the active segment's records only", lag)
	}

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
	for _, pr := range problems {
		t.Errorf("promlint: %s: %s", pr.Metric, pr.Text)
	}
}
