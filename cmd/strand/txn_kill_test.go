package main

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
)

// TestTxnETLBrokerKilled is the exactly-once ETL with the broker SIGKILLed
// and restarted twice while it runs: three GroupTransactSession members
// copy 20,000 records from "in" to "out", each input record inside a
// transaction that also commits the input offsets. A member whose session
// fails (its broker died under it) starts a new one with the same
// transactional id, which fences and aborts what the old one left open.
// Reading "out" read_committed must give every input record exactly once.
func TestTxnETLBrokerKilled(t *testing.T) {
	const n = 20_000
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"--data-dir", dir, "--listen", addr, "--transaction-max-timeout", "1m"}
	broker := startServe(t, args...)
	defer func() { broker.stop(t) }()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admCl)
	for topic, parts := range map[string]int32{"in": 6, "out": 4} {
		if r, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	admCl.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i % 97)), Value: []byte(strconv.Itoa(i))}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	prod.Close()

	var sessions, txns atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	member := func(id string) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			sessions.Add(1)
			sess, err := kgo.NewGroupTransactSession(
				kgo.SeedBrokers(addr), kgo.TransactionalID("kill-"+id), kgo.TransactionTimeout(20*time.Second),
				kgo.ConsumerGroup("etl-kill"), kgo.ConsumeTopics("in"), kgo.Balancers(kgo.RangeBalancer()),
				kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
				kgo.SessionTimeout(10*time.Second), kgo.DefaultProduceTopic("out"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(4<<10),
				kgo.RetryTimeout(30*time.Second),
			)
			if err != nil {
				t.Error(err)
				return
			}
			for failed := false; !failed; {
				select {
				case <-stop:
					sess.Close()
					return
				default:
				}
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fs := sess.PollRecords(pctx, 250)
				pcancel()
				if fs.NumRecords() == 0 {
					continue
				}
				if err := sess.Begin(); err != nil {
					failed = true
					break
				}
				fs.EachRecord(func(r *kgo.Record) { sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil) })
				if committed, err := sess.End(ctx, kgo.TryCommit); err != nil {
					failed = true // the broker died under it: a new session fences this one
				} else if committed {
					txns.Add(1)
				}
			}
			sess.Close()
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		wg.Add(1)
		go member(id)
	}

	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	seen := map[string]int{}
	kills := 0
	for len(seen) < n && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		out.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		pcancel()
		if kills < 2 && len(seen) > (kills+1)*n/3 {
			kills++
			if err := broker.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = broker.wait(t, 10*time.Second)
			t.Logf("SIGKILLed the broker with %d of %d records copied; restarting it", len(seen), n)
			broker = startServe(t, args...)
		}
	}
	close(stop)
	wg.Wait()
	dups := 0
	for v, c := range seen {
		if c != 1 {
			if dups++; dups <= 5 {
				t.Errorf("input record %s is in out %d times", v, c)
			}
		}
	}
	t.Logf("%d kills, %d member sessions, %d committed transactions; out holds %d of %d input records, %d more than once",
		kills, sessions.Load(), txns.Load(), len(seen), n, dups)
	if len(seen) != n || dups > 0 || kills != 2 {
		t.Fatal(fmt.Sprintf("exactly-once broken or the run did not finish: %d of %d records, %d duplicated, %d kills", len(seen), n, dups, kills))
	}
}
