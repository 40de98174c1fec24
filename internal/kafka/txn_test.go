package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/broker"
)

// A franz-go transactional producer commits some transactions and aborts
// others; a read_committed consumer sees exactly the committed records, in
// order, and a read_uncommitted one sees them all.
func TestTxnCommitAbortReadCommitted(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "tx", 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("tx"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const txns, per = 20, 15
	want := map[string]bool{}
	for i := range txns {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		commit := i%3 != 1
		for j := range per {
			v := fmt.Sprintf("t%02d-r%02d", i, j)
			if err := cl.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatalf("txn %d: %v", i, err)
			}
			if commit {
				want[v] = true
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end txn %d: %v", i, err)
		}
	}
	read := func(level kgo.IsolationLevel, n int) map[string]int {
		c, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("tx"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := map[string]int{}
		total := 0
		for total < n && ctx.Err() == nil {
			fs := c.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; total++ })
		}
		return got
	}
	got := read(kgo.ReadCommitted(), len(want))
	if len(got) != len(want) {
		t.Fatalf("read_committed saw %d distinct records, want %d", len(got), len(want))
	}
	for v, n := range got {
		if !want[v] || n != 1 {
			t.Fatalf("read_committed saw %q %d times (committed: %v)", v, n, want[v])
		}
	}
	all := read(kgo.ReadUncommitted(), txns*per)
	if len(all) != txns*per {
		t.Fatalf("read_uncommitted saw %d records, want %d", len(all), txns*per)
	}
}

// A-T6: a producer that stops mid-transaction never blocks read_committed
// readers beyond its timeout. The sweep aborts the transaction (its record
// is never delivered read_committed), the last stable offset catches up
// with the high watermark, and the producer, when it comes back, is fenced.
func TestTxnTimeoutAbortsAndFences(t *testing.T) {
	ts := startServer(t, broker.Config{TransactionSweepInterval: 100 * time.Millisecond}, Config{})
	createTopic(t, ts.b, "slow", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.TransactionalID("slow-1"), kgo.DefaultProduceTopic("slow"),
		kgo.TransactionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("stalled")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p, _ := ts.b.Partition("slow", 0)
	if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != 0 || hw != 1 {
		t.Fatalf("open transaction: LSO %d HW %d, want 0 and 1", lso, hw)
	}
	start := time.Now()
	for p.LastStableOffset() != p.HighWatermark() {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("LSO still %d (HW %d) 10 s after a 1 s transaction timeout", p.LastStableOffset(), p.HighWatermark())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("transaction with a 1 s timeout aborted; LSO reached HW %v after its record", time.Since(start).Round(time.Millisecond))
	if st := ts.b.TxnStats(); st.TimedOut != 1 || st.Aborted != 1 || st.Ongoing != 0 {
		t.Fatalf("coordinator stats %+v, want one timed-out abort", st)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	} else {
		t.Logf("the timed-out producer's commit: %v", err)
	}
	// A read_committed reader sees nothing: the one record was aborted.
	rc, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("slow"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if n := rc.PollFetches(pctx).NumRecords(); n != 0 {
		t.Fatalf("read_committed delivered %d records of an aborted transaction", n)
	}
}
