package bench

import (
	"context"
	"os"
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
