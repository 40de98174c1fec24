package bench

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The server-cost load generator against the null broker (in this
// process, for the smoke test): requests are acknowledged, counted, and
// the /proc readers parse this process's own figures.
func TestServerCostLoadGenerator(t *testing.T) {
	nb, err := startNullBroker()
	if err != nil {
		t.Fatal(err)
	}
	defer nb.close()
	o := CostOptions{Partitions: 2, RecordBytes: 100, RecordsPerBatch: 10, InFlight: 2}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createCostTopic(ctx, nb.addr(), o.Partitions, nil); err != nil {
		t.Fatal(err)
	}
	reqs, payload, err := costRequests(o)
	if err != nil || payload != 1000 {
		t.Fatalf("requests: payload %d, %v", payload, err)
	}
	gen := &loadGen{addr: nb.addr(), reqs: reqs, inFlight: o.InFlight, check: checkProduceResponse}
	gctx, gcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer gcancel()
	if err := gen.run(gctx, 2); err != context.DeadlineExceeded {
		t.Fatalf("load generator: %v", err)
	}
	if gen.acked.Load() == 0 {
		t.Fatal("no produce request acknowledged")
	}
	gen.measure(true)
	mctx, mcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer mcancel()
	gen.run(mctx, 1)
	if lat := gen.measure(false); len(lat) == 0 || lat[0] <= 0 {
		t.Fatalf("%d latencies measured", len(lat))
	}
	nb.mu.Lock()
	next := nb.topics[costTopic].next
	took := next[0] + next[1]
	nb.mu.Unlock()
	if took < gen.acked.Load()*int64(o.RecordsPerBatch) {
		t.Fatalf("the broker took %d records for %d acknowledged requests", took, gen.acked.Load())
	}
	cpu, sys, err := procCPU(os.Getpid())
	if err != nil || cpu <= 0 || sys > cpu {
		t.Fatalf("procCPU: %v %v %v", cpu, sys, err)
	}
	if rss, err := procRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("procRSS: %d %v", rss, err)
	}
	// A log shorter than one step is read from 0 only; a longer one from
	// every step below its end.
	if n := len(fetchRequests(o, 10)); n != o.Partitions {
		t.Fatalf("%d fetch requests for a short log, want one per partition", n)
	}
	if n := len(fetchRequests(o, 100)); n != 2*o.Partitions {
		t.Fatalf("%d fetch requests for 100 records in steps of 40, want offsets 0 and 40 per partition", n)
	}
}

// Requests that carry several partitions' batches: each partition gets
// its batch, the payload counts them all, and a partition count the
// grouping does not divide is refused.
func TestServerCostPartitionsPerRequest(t *testing.T) {
	nb, err := startNullBroker()
	if err != nil {
		t.Fatal(err)
	}
	defer nb.close()
	o := CostOptions{Partitions: 4, PartitionsPerRequest: 2, RecordBytes: 100, RecordsPerBatch: 10, InFlight: 1}
	if _, _, err := costRequests(CostOptions{Partitions: 3, PartitionsPerRequest: 2, RecordBytes: 1, RecordsPerBatch: 1}); err == nil {
		t.Fatal("3 partitions in requests of 2: no error")
	}
	reqs, payload, err := costRequests(o)
	if err != nil || len(reqs) != 2 || payload != 2000 {
		t.Fatalf("%d requests of %d payload bytes, %v; want 2 of 2000", len(reqs), payload, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := createCostTopic(ctx, nb.addr(), o.Partitions, nil); err != nil {
		t.Fatal(err)
	}
	gen := &loadGen{addr: nb.addr(), reqs: reqs, inFlight: o.InFlight, check: checkProduceResponse}
	gctx, gcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer gcancel()
	if err := gen.run(gctx, 1); err != context.DeadlineExceeded {
		t.Fatalf("load generator: %v", err)
	}
	acked := gen.acked.Load()
	if acked < 2 {
		t.Fatalf("%d requests acknowledged, want both shapes of request", acked)
	}
	nb.mu.Lock()
	defer nb.mu.Unlock()
	var took int64
	for p, n := range nb.topics[costTopic].next {
		if n == 0 {
			t.Fatalf("partition %d got no records", p)
		}
		took += n
	}
	if took < acked*2*int64(o.RecordsPerBatch) {
		t.Fatalf("the broker took %d records for %d acknowledged requests of 2 batches", took, acked)
	}
}

// The spread table puts each connection count's two shapes side by side
// and gives the wide one's share of the narrow one's throughput.
func TestSpreadTableMarkdown(t *testing.T) {
	narrow := CostOptions{Partitions: 8, RecordsPerBatch: 256, Conns: []int{4}, Runs: 1}
	wide := narrow
	wide.Partitions, wide.RecordsPerBatch, wide.PartitionsPerRequest = 10000, 10, 25
	tb := SpreadTable{Title: "spread", Narrow: narrow, Wide: wide, Results: []CostResult{
		{Peer: SpreadLabel(narrow), Conns: 4, Run: 1, MBps: 800},
		{Peer: SpreadLabel(wide), Conns: 4, Run: 1, MBps: 200},
	}}
	md := tb.Markdown()
	for _, want := range []string{"| 4 | 8 partitions | 800.0 |", "| 4 | 10000 partitions | 200.0 |", "| 25% |", "25 batches of 10 records"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
