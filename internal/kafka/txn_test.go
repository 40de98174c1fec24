package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// A-T7 (KIP-447): offsets committed in an open transaction answer
// UNSTABLE_OFFSET_COMMIT to an OffsetFetch that requires stable offsets,
// and the committed value once the transaction commits; a TxnOffsetCommit
// from a member of an older generation (a zombie) is ILLEGAL_GENERATION.
func TestTxnOffsetCommitStableAndFenced(t *testing.T) {
	ts := startServer(t, broker.Config{GroupInitialRebalanceDelay: -1}, Config{})
	createTopic(t, ts.b, "t7", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr("t7-txn"), 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v %v", err, ir)
	}
	commit := func(group string, gen int32, member string, offset int64) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "t7-txn", group, ir.ProducerID, ir.ProducerEpoch
		req.Generation, req.MemberID = gen, member
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t7", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group, req.RequireStable = "t7-group", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t7", Partitions: []int32{0}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) > 0 {
			p := resp.Groups[0].Topics[0].Partitions[0]
			return p.Offset, p.ErrorCode
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if code := commit("t7-group", -1, "", 42); code != 0 {
		t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(code))
	}
	if _, code := fetch(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("OffsetFetch RequireStable with the commit pending: %v, want UNSTABLE_OFFSET_COMMIT", kerr.ErrorForCode(code))
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "t7-txn", ir.ProducerID, ir.ProducerEpoch, true
	er, err := end.RequestWith(ctx, cl)
	if err != nil || er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", err, er)
	}
	ir.ProducerID, ir.ProducerEpoch = er.ProducerID, er.ProducerEpoch // EndTxn v5 bumps the epoch (KIP-890)
	for {
		off, code := fetch()
		if code == 0 && off == 42 {
			break
		}
		if code != kerr.UnstableOffsetCommit.Code || ctx.Err() != nil {
			t.Fatalf("after the commit: offset %d, %v; want 42", off, kerr.ErrorForCode(code))
		}
		time.Sleep(10 * time.Millisecond) // the markers are being written
	}

	// A live group member; a commit naming an older generation is a zombie's.
	member, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumerGroup("t7-live"), kgo.ConsumeTopics("t7"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	var id string
	var gen int32
	for id == "" && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollFetches(pctx)
		pcancel()
		id, gen = member.GroupMetadata()
	}
	if code := commit("t7-live", gen-1, id, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("zombie TxnOffsetCommit (generation %d of %d): %v, want ILLEGAL_GENERATION", gen-1, gen, kerr.ErrorForCode(code))
	}
}
