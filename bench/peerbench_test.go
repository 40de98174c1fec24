package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRunSmall checks the harness works end to end against both peers with
// a small workload: every record produced, consumed back exactly once with
// intact values, and latency measured. It asserts nothing about speed.
func TestRunSmall(t *testing.T) {
	o := Options{
		Records:         2_000,
		Size:            1024,
		SmallRecords:    3_000,
		SmallSize:       100,
		ScaleRecords:    500,
		ScalePartitions: []int{1, 8, 64},
		Partitions:      8,
		Runs:            1,
		Peers:           AllPeers,
		LatencyRecords:  50,
		E2ERate:         2_000,
		E2EDuration:     300 * time.Millisecond,
		Warmup:          100,
		Window:          500,
		Linger:          10 * time.Millisecond,
		BatchBytes:      256 << 10,
		Timeout:         time.Minute,
		Dir:             t.TempDir(),
		Logf:            t.Logf,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	rows := rep.Options.Rows()
	for _, name := range o.Peers {
		p := rep.Peer(name)
		if p == nil || len(p.Runs) != 1 {
			t.Fatalf("%s: want 1 run, got %+v", name, p)
		}
		m := p.Median
		for _, rw := range rows {
			if name == "null" && (strings.HasPrefix(rw.Metric, MetricConsume) || strings.HasPrefix(rw.Metric, MetricE2E)) {
				if _, ok := m[rw.Metric]; ok {
					t.Errorf("null broker has %s", rw.Metric)
				}
				continue
			}
			if m[rw.Metric] <= 0 {
				t.Errorf("%s: %s (%s) = %v", name, rw.Name, rw.Metric, m[rw.Metric])
			}
		}
		if m[MetricRTT+"_p99"] < m[MetricRTT+"_p50"] || m[MetricE2E+"_p99"] < m[MetricE2E+"_p50"] {
			t.Errorf("%s: p99 below p50: %v", name, m)
		}
	}
	table := rep.Table()
	md := rep.Markdown("go test", time.Now(), "chart.png")
	for _, want := range []string{"produce 1 KB", "produce 100 B", "consume 1 KB", "produce round trip p99",
		"end-to-end p99", "64 partition(s)", "Strand vs kfake", "Strand vs JetStream", "Strand vs null broker"} {
		if !strings.Contains(table, want) || !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s\n%s", want, table, md)
		}
	}
	png := filepath.Join(t.TempDir(), "chart.png")
	if err := rep.WriteChart(png); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(png); err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatalf("chart: %d bytes, %v", len(b), err)
	}
	t.Logf("\n%s", table)
}

// TestConsumeDetectsLoss checks the consumer's verification fails loudly
// when it is told to expect more records than the log holds.
func TestConsumeDetectsLoss(t *testing.T) {
	o := Options{Records: 100, Size: 64, Partitions: 2, Runs: 1, LatencyRecords: 1, Window: 10, Timeout: 3 * time.Second}
	o.fill()
	ctx := context.Background()
	p, err := startKafka(ctx, o, "kfake", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	pl, err := newPayload(o.Size)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(ClientOpts(p.addr, o.Linger, o.BatchBytes)...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := createTopic(ctx, kadm.NewClient(prod), "t", 2, o.Timeout); err != nil {
		t.Fatal(err)
	}
	stats, err := produce(ctx, o, prod, pl, "t", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := consume(ctx, o, p.addr, pl, "t", 100, stats.parts); err != nil {
		t.Fatalf("exact count: %v", err)
	}
	if _, _, err := consume(ctx, o, p.addr, pl, "t", 101, nil); err == nil {
		t.Fatal("consuming 101 of 100 records succeeded")
	}
}
