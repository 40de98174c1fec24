package broker

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/txn"
	"github.com/strandmq/strand/internal/vfs"
)

// TestTxnCrashAnywhereNeverTorn is A-T2: a three-partition transaction is
// committed and the machine crashes at each write of the commit in turn —
// before PrepareCommit, after it, after each marker (they are written in
// parallel, so the order varies), after CompleteCommit — then at random
// moments (the commit's writes are fsynced, flush.messages=1, the
// durability A-T2 assumes). After every restart the transaction is whole:
// each partition shows its record to read_committed readers, or none does
// (an ongoing transaction the restarted coordinator's timeout aborts), and
// no partition is left hanging (its LSO reaches the high watermark within
// 15 s). STRAND_TXN_CRASHES sets the number of random crash points
// (default 25).
func TestTxnCrashAnywhereNeverTorn(t *testing.T) {
	runs := 25
	if n, err := strconv.Atoi(os.Getenv("STRAND_TXN_CRASHES")); err == nil && n > 0 {
		runs = n
	}
	outcomes := map[string]int{}
	// Write k of the commit: 0 is PrepareCommit, 1–3 the markers, 4
	// CompleteCommit; -1 crashes before any of them.
	for k := -1; k <= 4; k++ {
		outcomes[crashOneCommit(t, k, 0)]++
	}
	t.Logf("crash at each write: %v", outcomes)
	rng := rand.New(rand.NewPCG(1, 2))
	for range runs {
		outcomes[crashOneCommit(t, -2, time.Duration(rng.IntN(300))*time.Microsecond)]++
	}
	t.Logf("%d crash points in all: %v", runs+6, outcomes)
	if outcomes["torn"] > 0 || outcomes["hanging"] > 0 {
		t.Fatalf("torn or hanging transactions after crashes: %v", outcomes)
	}
}

// crashOneCommit runs one transaction and crashes at its write number at
// (-1: before EndTxn; -2: delay after EndTxn starts), restarts, and says
// what the transaction became.
func crashOneCommit(t *testing.T, at int, delay time.Duration) string {
	t.Helper()
	fs := vfs.NewMem()
	cfg := func(c *Config) {
		c.TopicDefaults = map[string]string{ConfigFlushMessages: "1"}
		c.TransactionSweepInterval = 50 * time.Millisecond
	}
	b := open(t, fs, "/d", cfg)
	mustCreate(t, b, TopicSpec{Name: "t", Partitions: 3})
	ctx := context.Background()
	c, err := b.TxnCoordinatorFor("crash")
	if err != nil {
		t.Fatal(err)
	}
	r := c.InitProducerID(ctx, txn.InitRequest{TransactionalID: "crash", TimeoutMs: 500, ProducerID: producer.NoID, Epoch: txn.NoEpoch})
	if r.Code != txn.CodeNone {
		t.Fatalf("init: %s", r.Code)
	}
	var parts []txn.Partition
	for i := range int32(3) {
		parts = append(parts, txn.Partition{Topic: "t", Partition: i})
	}
	if r := c.AddPartitions(ctx, txn.AddRequest{TransactionalID: "crash", ProducerID: r.ProducerID, Epoch: r.Epoch, Partitions: parts}); r.Code != txn.CodeNone {
		t.Fatalf("add: %s", r.Code)
	}
	for i := range 3 {
		p, _ := b.Partition("t", PartitionID(i))
		if _, err := txnAppend(ctx, p, txnBatch(t, r.ProducerID, 0, "k", "v"+strconv.Itoa(i)), AcksAll); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu      sync.Mutex
		writes  int
		crashed vfs.FS
	)
	if at == -1 {
		crashed = fs.CrashClone(vfs.CrashOptions{})
	}
	if at >= 0 {
		txnWriteHook = func(string) {
			mu.Lock()
			defer mu.Unlock()
			if writes == at {
				crashed = fs.CrashClone(vfs.CrashOptions{})
			}
			writes++
		}
		defer func() { txnWriteHook = nil }()
	}
	end := make(chan txn.Reply, 1)
	go func() {
		end <- c.EndTxn(ctx, txn.EndRequest{TransactionalID: "crash", ProducerID: r.ProducerID, Epoch: r.Epoch, Commit: true})
	}()
	if at == -2 {
		time.Sleep(delay)
		crashed = fs.CrashClone(vfs.CrashOptions{})
	}
	<-end
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		done := crashed != nil
		mu.Unlock()
		if done || time.Now().After(wait) {
			break
		}
	}
	_ = b.Close()
	txnWriteHook = nil
	if crashed == nil {
		t.Fatalf("write %d of the commit never happened", at)
	}

	b = open(t, crashed, "/d", cfg)
	defer b.Close()
	// The restarted coordinator finishes a prepared commit, or its timeout
	// sweep aborts an ongoing transaction: either way every partition's
	// LSO reaches its high watermark.
	deadline := time.Now().Add(15 * time.Second)
	visible := make([]int, 3)
	for i := range 3 {
		p, _ := b.Partition("t", PartitionID(i))
		for p.LastStableOffset() < p.HighWatermark() {
			if time.Now().After(deadline) {
				return "hanging"
			}
			time.Sleep(10 * time.Millisecond)
		}
		visible[i] = len(readCommitted(t, p))
	}
	switch {
	case visible[0] == 1 && visible[1] == 1 && visible[2] == 1:
		return "committed"
	case visible[0] == 0 && visible[1] == 0 && visible[2] == 0:
		return "aborted"
	}
	t.Logf("torn after a crash %v into the commit: read_committed records per partition %v", delay, visible)
	return "torn"
}
