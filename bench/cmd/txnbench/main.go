// Command txnbench measures what transactions cost (A-T9): against one
// Strand broker started in-process, it alternates an idempotent producer
// and a transactional one that commits every -commit-every (100 ms), both
// sending -size-byte records with acks=all for -duration, and prints each
// run's throughput, the per-record produce latency p50/p99 and, for the
// transactional runs, the EndTxn p50/p99 — with the median ratio of
// transactional to idempotent throughput.
//
//	cd bench && go run ./cmd/txnbench -runs 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

type options struct {
	runs        int
	duration    time.Duration
	commitEvery time.Duration
	size        int
	partitions  int
	dir         string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "runs of each producer, alternated")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long each run produces")
	flag.DurationVar(&o.commitEvery, "commit-every", 100*time.Millisecond, "the transactional producer's commit interval")
	flag.IntVar(&o.size, "size", 1024, "record value bytes")
	flag.IntVar(&o.partitions, "partitions", 3, "partitions of the topic")
	flag.StringVar(&o.dir, "dir", "", "data directory (default: a temporary one, removed after)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "txnbench:", err)
		os.Exit(1)
	}
}

// result is one run.
type result struct {
	mibps          float64
	p50, p99       time.Duration // per-record produce latency
	endP50, endP99 time.Duration // EndTxn latency (transactional runs)
	txns, records  int
}

func run(o options) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "txnbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctx := context.Background()
	b, err := strand.Start(ctx, strand.Config{Dir: dir, Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer b.Close()
	var idem, txn []result
	for i := range o.runs {
		for _, transactional := range []bool{false, true} {
			topic := fmt.Sprintf("bench-%d-%v", i, transactional)
			r, err := produce(ctx, b.Addr(), topic, o, transactional)
			if err != nil {
				return err
			}
			kind := "idempotent"
			if transactional {
				kind = "transactional"
				txn = append(txn, r)
			} else {
				idem = append(idem, r)
			}
			fmt.Printf("run %d %-13s %7.1f MiB/s  %8d records  produce p50 %v p99 %v", i+1, kind, r.mibps, r.records, r.p50, r.p99)
			if transactional {
				fmt.Printf("  %d txns, EndTxn p50 %v p99 %v", r.txns, r.endP50, r.endP99)
			}
			fmt.Println()
		}
	}
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	mi, mt := med(idem, func(r result) float64 { return r.mibps }), med(txn, func(r result) float64 { return r.mibps })
	fmt.Printf("median: idempotent %.1f MiB/s, transactional (commit every %v) %.1f MiB/s: %.0f%% of idempotent\n", mi, o.commitEvery, mt, 100*mt/mi)
	fmt.Printf("median produce p99: idempotent %v, transactional %v; median EndTxn p99 %v\n",
		time.Duration(med(idem, func(r result) float64 { return float64(r.p99) })),
		time.Duration(med(txn, func(r result) float64 { return float64(r.p99) })),
		time.Duration(med(txn, func(r result) float64 { return float64(r.endP99) })))
	return nil
}

func produce(ctx context.Context, addr, topic string, o options, transactional bool) (result, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(0)}
	if transactional {
		opts = append(opts, kgo.TransactionalID("txnbench-"+topic), kgo.TransactionTimeout(time.Minute))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		return result{}, err
	}
	value := make([]byte, o.size)
	var (
		mu       sync.Mutex
		lat      []time.Duration
		firstErr error
		ends     []time.Duration
	)
	done := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		lat = append(lat, time.Since(r.Context.Value(startKey{}).(time.Time)))
	}
	sendUntil := func(deadline time.Time) {
		for time.Now().Before(deadline) {
			r := &kgo.Record{Value: value, Context: context.WithValue(ctx, startKey{}, time.Now())}
			cl.Produce(ctx, r, done)
		}
	}
	start := time.Now()
	end := start.Add(o.duration)
	txns := 0
	if !transactional {
		sendUntil(end)
		if err := cl.Flush(ctx); err != nil {
			return result{}, err
		}
	} else {
		for time.Now().Before(end) {
			if err := cl.BeginTransaction(); err != nil {
				return result{}, err
			}
			sendUntil(minTime(end, time.Now().Add(o.commitEvery)))
			if err := cl.Flush(ctx); err != nil {
				return result{}, err
			}
			t0 := time.Now()
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return result{}, fmt.Errorf("commit: %w", err)
			}
			ends = append(ends, time.Since(t0))
			txns++
		}
	}
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	if len(lat) == 0 {
		return result{}, errors.New("no record acknowledged")
	}
	slices.Sort(lat)
	slices.Sort(ends)
	r := result{mibps: float64(len(lat)) * float64(o.size) / (1 << 20) / elapsed.Seconds(), records: len(lat), txns: txns,
		p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}
	if len(ends) > 0 {
		r.endP50, r.endP99 = ends[len(ends)/2], ends[len(ends)*99/100]
	}
	return r, nil
}

type startKey struct{}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
