package bench

import (
	"context"
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
		Records:        2_000,
		Size:           1024,
		Partitions:     8,
		Runs:           1,
		Peers:          []string{"strand", "kfake"},
		LatencyRecords: 50,
		Warmup:         100,
		Window:         500,
		Linger:         10 * time.Millisecond,
		Timeout:        time.Minute,
		Dir:            t.TempDir(),
		Logf:           t.Logf,
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
	for _, name := range o.Peers {
		p := rep.Peer(name)
		if p == nil || len(p.Runs) != 1 {
			t.Fatalf("%s: want 1 run, got %+v", name, p)
		}
		m := p.Median
		if m.ProduceMiBps <= 0 || m.ConsumeMiBps <= 0 || m.LatencyP50 <= 0 || m.LatencyP99 < m.LatencyP50 {
			t.Errorf("%s: implausible figures %+v", name, m)
		}
	}
	table := rep.Table()
	md := rep.Markdown("go test", time.Now())
	for _, want := range []string{"A produce throughput", "B consume throughput", "C produce latency p99", "Strand/kfake", "kfake/Strand"} {
		if !strings.Contains(table, want) || !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s\n%s", want, table, md)
		}
	}
	t.Logf("\n%s", table)
}

// TestConsumeDetectsLoss checks the consumer's verification fails loudly
// when it is told to expect more records than the log holds.
func TestConsumeDetectsLoss(t *testing.T) {
	o := Options{Records: 100, Size: 64, Partitions: 2, Runs: 1, LatencyRecords: 1, Window: 10, Timeout: 3 * time.Second}
	o.fill()
	ctx := context.Background()
	p, err := startPeer(ctx, "kfake", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	pl, err := newPayload(o.Size)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(ClientOpts(p.addr, o.Linger)...)
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
