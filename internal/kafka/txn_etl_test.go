package kafka

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strandmq/strand/internal/broker"
)

// TestTxnETL is consume → transform → produce with exactly-once, written
// as franz-go's own txn test is: 20,000 input records, a group of
// GroupTransactSession members that read "in" read_committed and, in one
// transaction per poll, write each record to "out" and commit their input
// offsets. One member quits after its first transaction and another after
// its second, each ending with an abort; one never quits, and one joins
// late. Whatever the rebalances, reading "out"
// read_committed must give every input record exactly once, and no
// (partition, offset) of "out" twice.
//
// Each classic balancer (range, sticky, cooperative-sticky) runs under
// transaction.version 2 (KIP-890: implicit adds on
// Produce v12 and TxnOffsetCommit v5, an epoch bump per EndTxn v5) and
// under version 1 (a client capped at Produce v11, EndTxn v4 and
// TxnOffsetCommit v4: explicit AddPartitionsToTxn and AddOffsetsToTxn).
//
// The KIP-848 runs (range/848, sticky/848: the broker's range and uniform
// assignors) are transaction version 2 only.
func TestTxnETL(t *testing.T) {
	for _, balancer := range []string{"range", "sticky", "cooperative-sticky"} {
		for _, tv := range []int{2, 1} {
			t.Run(fmt.Sprintf("%s/tv%d", balancer, tv), func(t *testing.T) { runTxnETL(t, balancer, tv) })
		}
	}
	for _, balancer := range []string{"range/848", "sticky/848"} {
		t.Run(balancer, func(t *testing.T) { runTxnETL(t, balancer, 2) })
	}
}

// txnVersionOpts caps a client at transaction.version 1's request versions.
func txnVersionOpts(tv int) []kgo.Opt {
	if tv >= 2 {
		return nil
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return []kgo.Opt{kgo.MaxVersions(v)}
}

func runTxnETL(t *testing.T, balancer string, tv int) {
	const n = 20_000
	ts := startServer(t, broker.Config{GroupInitialRebalanceDelay: -1}, Config{})
	createTopic(t, ts.b, "in", 6, nil)
	createTopic(t, ts.b, "out", 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte(strconv.Itoa(i))}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var totalTxns atomic.Int64
	var groupOpts []kgo.Opt
	switch balancer {
	case "range":
		groupOpts = []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}
	case "sticky":
		groupOpts = []kgo.Opt{kgo.Balancers(kgo.StickyBalancer())}
	case "cooperative-sticky":
		groupOpts = []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
	case "range/848":
		groupOpts = []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}
	case "sticky/848":
		groupOpts = []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}
	}
	member := func(id string, quitAfter int, stop <-chan struct{}) error {
		opts := append(txnVersionOpts(tv),
			kgo.SeedBrokers(ts.addr), kgo.TransactionalID("etl-"+id), kgo.TransactionTimeout(60*time.Second),
			kgo.ConsumerGroup("etl-"+strings.ReplaceAll(balancer, "/", "-")), kgo.ConsumeTopics("in"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
			kgo.SessionTimeout(10*time.Second), kgo.DefaultProduceTopic("out"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			// Small fetches: many transactions, so members join, quit and
			// rebalance between them.
			kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(4<<10),
		)
		sess, err := kgo.NewGroupTransactSession(append(opts, groupOpts...)...)
		if err != nil {
			return err
		}
		defer sess.Close()
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
			totalTxns.Add(1)
			quit := quitAfter > 0 && txns > quitAfter
			if _, err := sess.End(ctx, kgo.TransactionEndTry(!quit)); err != nil {
				return fmt.Errorf("%s end: %w", id, err)
			}
			if quit {
				return nil // the quitter's last transaction is an abort
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	start := func(id string, quitAfter int) {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- member(id, quitAfter, stop) }()
	}
	start("a", 0)
	start("b", 1)
	start("c", 2)

	// Read "out" read_committed until every input record is there.
	out, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.ConsumeTopics("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	seen := map[string]int{}
	where := map[string][]string{}
	type po struct {
		p int32
		o int64
	}
	offsets := map[po]bool{}
	lateJoined := false
	for len(seen) < n && ctx.Err() == nil {
		fs := out.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if offsets[po{r.Partition, r.Offset}] {
				t.Errorf("out %d/%d seen twice", r.Partition, r.Offset)
			}
			offsets[po{r.Partition, r.Offset}] = true
			if r.Attrs.IsControl() {
				return
			}
			seen[string(r.Value)]++
			where[string(r.Value)] = append(where[string(r.Value)], fmt.Sprintf("%d@%d pid %d epoch %d", r.Partition, r.Offset, r.ProducerID, r.ProducerEpoch))
		})
		if !lateJoined && len(seen) > n/3 {
			lateJoined = true
			start("d", 0)
		}
	}
	if len(seen) < n {
		for _, name := range []string{"in", "out"} {
			tp, _ := ts.b.Topic(name)
			for i := range tp.Partitions() {
				p, _ := tp.Partition(broker.PartitionID(i))
				t.Logf("%s-%d: HW %d LSO %d open txns %d", name, i, p.HighWatermark(), p.LastStableOffset(), p.OpenTransactions())
			}
		}
		for _, md := range ts.b.Transactions() {
			t.Logf("txn %s: pid %d epoch %d state %s partitions %v", md.TransactionalID, md.ProducerID, md.Epoch, md.State, md.Partitions)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s tv%d: %d transactions, %d out offsets (markers included)", balancer, tv, totalTxns.Load(), len(offsets))
	if len(seen) != n {
		t.Fatalf("out holds %d of %d input records (read_committed)", len(seen), n)
	}
	dups := 0
	for v, c := range seen {
		if c != 1 {
			dups++
			if dups < 5 {
				t.Errorf("input record %s is in out %d times: %v", v, c, where[v])
			}
		}
	}
	if dups > 0 {
		in := readAll(t, ctx, ts.addr, "in", n)
		t.Fatalf("%d input records duplicated in out (the input itself has %d distinct values in %d records)", dups, len(in), n)
	}
}

// readAll reads the first n records of topic and returns the count of each
// value.
func readAll(t *testing.T, ctx context.Context, addr, topic string, n int) map[string]int {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, total := map[string]int{}, 0
	for total < n && ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; total++ })
	}
	return got
}
