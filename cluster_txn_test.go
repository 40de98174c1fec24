package strand

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strandmq/strand/internal/broker"
)

// TestClusterTxnETL is consume → transform → produce with exactly-once on
// a 3-node cluster: the transaction coordinators, the group coordinator
// (whose __consumer_offsets partition joins every transaction through
// AddOffsetsToTxn or TxnOffsetCommit) and the input and output partitions
// are spread over the nodes, so every commit writes markers to other nodes
// through WriteTxnMarkers. Member b aborts every second transaction (its
// records are read again and written in a later one). Reading "out"
// read_committed must give every input record exactly once, and the group's committed offsets must reach
// the end of "in".
//
// The coordinator-move runs stop, a third of the way through, the node that
// coordinates member a's transactions (controlled shutdown): its
// __transaction_state partition moves to another node, which replays it
// and finishes or aborts what was in flight; the members carry on there.
func TestClusterTxnETL(t *testing.T) {
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) { runClusterTxnETL(t, tv, false) })
	}
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d/coordinator-moves", tv), func(t *testing.T) { runClusterTxnETL(t, tv, true) })
	}
}

func runClusterTxnETL(t *testing.T, tv int, moveCoordinator bool) {
	const n = 3_000
	var c *testCluster
	if moveCoordinator { // the runs with the most traffic between nodes: over mutual TLS
		c, _ = startTLSCluster(t, 3, nil)
	} else {
		c = startCluster(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{seeds, kgo.RetryTimeout(time.Minute)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(newClient())
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 4, 3, nil, "out"); err != nil {
		t.Fatal(err)
	}
	prod := newClient(kgo.DefaultProduceTopic("in"))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte(strconv.Itoa(i))}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	const group = "cluster-etl"
	var endErrors atomic.Int32
	member := func(id string, stop <-chan struct{}) error {
		opts := append(clusterTxnVersionOpts(tv), seeds, kgo.RetryTimeout(time.Minute),
			kgo.TransactionalID("cetl-"+id), kgo.TransactionTimeout(30*time.Second),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics("in"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
			kgo.SessionTimeout(10*time.Second), kgo.DefaultProduceTopic("out"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(4<<10),
		)
		sess, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			return err
		}
		defer func() { sess.Close() }()
		txns := 0
		for {
			select {
			case <-stop:
				return nil
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := sess.PollRecords(pctx, 250)
			pcancel()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fs.NumRecords() == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				return fmt.Errorf("%s begin: %w", id, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
			})
			txns++
			// Every member aborts its first transaction, so the run
			// aborts one even when the group hands all of in to one
			// member before the other joins; b goes on aborting every
			// other one.
			commit := kgo.TransactionEndTry(txns > 1 && (id != "b" || txns%2 == 0))
			if !commit {
				// Send the batch first: End drops records still
				// buffered, and a transaction that never produced
				// sends no EndTxn at all, so its abort would not
				// reach the coordinator (CI: "0 aborted").
				if err := sess.Client().Flush(ctx); err != nil {
					return fmt.Errorf("%s flush: %w", id, err)
				}
			}
			if _, err := sess.End(ctx, commit); err != nil {
				// A node going away can fail a commit on the client's
				// side (franz-go: "unknown broker" for a coordinator it
				// just dropped from its metadata), and the abort that
				// follows can leave the producer in a fatal state. The
				// member then does what an application does: it starts
				// a new session with the same transactional id, whose
				// InitProducerId fences the old one and aborts what it
				// left open, and reads the input again from the
				// committed offsets. Exactly-once is the output's check;
				// a member that keeps failing is not.
				if endErrors.Add(1) > 5 || !moveCoordinator {
					return fmt.Errorf("%s end: %w", id, err)
				}
				t.Logf("%s end failed, session restarted: %v", id, err)
				sess.Close()
				if sess, err = kgo.NewGroupTransactSession(opts...); err != nil {
					return err
				}
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, id := range []string{"a", "b"} {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- member(id, stop) }()
	}

	out := newClient(kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	moved := !moveCoordinator
	var gone broker.TxnStats // the stopped node's counters
	for len(seen) < n && ctx.Err() == nil {
		out.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		if !moved && len(seen) > n/3 {
			moved = true
			var coord int32 = -1
			for _, b := range c.nodes {
				if id, err := b.b.TxnCoordinatorNode("cetl-a"); err == nil {
					coord = int32(id)
					break
				}
			}
			if coord < 0 {
				t.Fatal("no node knows the coordinator of cetl-a")
			}
			t.Logf("stopping node %d, the coordinator of cetl-a, at %d of %d records", coord, len(seen), n)
			gone = c.nodes[coord].b.TxnStats() // counted before it stops
			if err := c.nodes[coord].Close(); err != nil {
				t.Fatal(err)
			}
			delete(c.nodes, coord)
		}
	}
	if len(seen) < n {
		for id, b := range c.nodes {
			for _, name := range []string{"in", "out", "__consumer_offsets"} {
				tp, err := b.b.Topic(name)
				if err != nil {
					continue
				}
				for i := range tp.Partitions() {
					p, err := tp.Partition(broker.PartitionID(i))
					if err != nil || p.HighWatermark() == 0 {
						continue
					}
					t.Logf("node %d %s-%d: HW %d LSO %d open txns %d", id, name, i, p.HighWatermark(), p.LastStableOffset(), p.OpenTransactions())
				}
			}
			for _, md := range b.b.Transactions() {
				t.Logf("node %d txn %s: pid %d epoch %d state %s partitions %v", id, md.TransactionalID, md.ProducerID, md.Epoch, md.State, md.Partitions)
			}
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	committed, aborted := gone.Committed, gone.Aborted
	for _, b := range c.nodes {
		st := b.b.TxnStats()
		committed, aborted = committed+st.Committed, aborted+st.Aborted
	}
	t.Logf("tv%d: %d transactions committed, %d aborted", tv, committed, aborted)
	if aborted == 0 {
		t.Error("no transaction was aborted: the members' aborts never ran")
	}
	if len(seen) != n {
		t.Fatalf("out holds %d of %d input records (read_committed)", len(seen), n)
	}
	for v, k := range seen {
		if k != 1 {
			t.Errorf("input record %s is in out %d times", v, k)
		}
	}
	// Every input record's offset is committed: the group's offsets,
	// committed only inside transactions, reach each partition's end.
	var lag int64
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		l, err := adm.Lag(ctx, group)
		if gl := l[group]; err == nil && gl.Error() == nil {
			lag = gl.Lag.Total()
			if lag == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: lag %d (err %v), want 0: committed offsets never reached the end of in", group, lag, err)
		}
	}
}

// clusterTxnVersionOpts caps a client at transaction.version 1's requests
// (explicit AddPartitionsToTxn and AddOffsetsToTxn).
func clusterTxnVersionOpts(tv int) []kgo.Opt {
	if tv >= 2 {
		return nil
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return []kgo.Opt{kgo.MaxVersions(v)}
}
