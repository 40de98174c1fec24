package kafka

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/broker"
)

// TestTxnQuarantineInsideTransaction: a record that validation sends to
// the DLQ from a transactional batch goes there inside the producer's
// transaction. While the transaction is open, a read_committed DLQ reader
// does not see it; a commit shows it, an abort takes it back: the DLQ's
// read_committed view, `strand dlq list` and the redrive hold only the poison
// records of committed transactions. Under transaction versions 2 and 1.
func TestTxnQuarantineInsideTransaction(t *testing.T) {
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) { runTxnQuarantine(t, tv) })
	}
}

func runTxnQuarantine(t *testing.T, tv int) {
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "orders", 1, map[string]string{"strand.validation": "json"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(txnVersionOpts(tv), kgo.SeedBrokers(ts.addr), kgo.TransactionalID("q-1"),
		kgo.DefaultProduceTopic("orders"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txn := func(valid, poison string, commit bool, beforeEnd func()) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		// One batch with both records: the poison one is quarantined.
		r1, r2 := kgo.StringRecord(valid), kgo.StringRecord(poison)
		r1.Key, r2.Key = []byte("a"), []byte("a")
		if err := cl.ProduceSync(ctx, r1, r2).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if beforeEnd != nil {
			beforeEnd()
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(topic string, level kgo.IsolationLevel) []string {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var got []string
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		defer rcancel()
		for rctx.Err() == nil {
			c.PollFetches(rctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	txn(`{"n":1}`, "poison 1", true, nil)
	txn(`{"n":2}`, "poison 2", false, func() {
		// Open: the DLQ's read_committed view does not have it yet.
		if got := read("orders.dlq", kgo.ReadCommitted()); !slices.Equal(got, []string{"poison 1"}) {
			t.Errorf("DLQ read_committed during an open transaction: %q, want [poison 1]", got)
		}
	})
	txn(`{"n":3}`, "poison 3", true, nil)
	if got := read("orders", kgo.ReadCommitted()); !slices.Equal(got, []string{`{"n":1}`, `{"n":3}`}) {
		t.Fatalf("topic read_committed: %q", got)
	}
	if got := read("orders.dlq", kgo.ReadCommitted()); !slices.Equal(got, []string{"poison 1", "poison 3"}) {
		t.Fatalf("DLQ read_committed: %q, want the poison records of the committed transactions", got)
	}
	if got := read("orders.dlq", kgo.ReadUncommitted()); !slices.Equal(got, []string{"poison 1", "poison 2", "poison 3"}) {
		t.Fatalf("DLQ read_uncommitted: %q, want all three (the aborted one was written inside its transaction)", got)
	}
	// The embedded redrive reads the DLQ read_committed: with validation
	// relaxed it brings back the committed poison records only.
	if err := ts.b.AlterConfigs("orders", map[string]string{}, false); err != nil {
		t.Fatal(err)
	}
	res, err := ts.b.Redrive(ctx, "orders", broker.RedriveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Redriven != 2 {
		t.Fatalf("redrive %+v: want the 2 committed poison records", res)
	}
	if got := read("orders", kgo.ReadCommitted()); !slices.Equal(got, []string{`{"n":1}`, `{"n":3}`, "poison 1", "poison 3"}) {
		t.Fatalf("topic after the redrive: %q", got)
	}
}
