// Package bench compares Strand with franz-go's kfake under one franz-go
// client configuration: bulk produce throughput, bulk consume throughput and
// single-record produce round-trip latency.
//
// It lives in its own module so that kfake (and kadm) never reach Strand's
// main binary. The command is ./cmd/peerbench; Run is the harness it and the
// test drive.
package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// Options configures a Run. Zero fields take the defaults in DefaultOptions.
type Options struct {
	Records        int           // records produced (and consumed) per run
	Size           int           // value bytes per record
	Partitions     int           // partitions of the benchmark topic
	Runs           int           // repetitions per peer; figures are medians
	Peers          []string      // "strand", "kfake"
	LatencyRecords int           // sequential ProduceSync calls in workload C
	Warmup         int           // records produced and consumed before timing
	Window         int           // produce records in flight (not yet acknowledged)
	Linger         time.Duration // kgo.ProducerLinger, the same for every peer
	Timeout        time.Duration // bound on each workload of each run
	Dir            string        // parent of the per-run data directories; "" = os.TempDir()
	Logf           func(format string, args ...any)
}

// DefaultOptions are the workload: 500,000 records of 1 KiB into 8
// partitions, five runs per peer (a run of both peers takes a few seconds
// on two cores, and single runs vary by ±15%).
func DefaultOptions() Options {
	return Options{
		Records:        500_000,
		Size:           1024,
		Partitions:     8,
		Runs:           5,
		Peers:          []string{"strand", "kfake"},
		LatencyRecords: 2_000,
		Warmup:         10_000,
		Window:         50_000,
		Linger:         10 * time.Millisecond,
		Timeout:        2 * time.Minute,
	}
}

func (o *Options) fill() {
	d := DefaultOptions()
	if o.Records <= 0 {
		o.Records = d.Records
	}
	if o.Size <= 0 {
		o.Size = d.Size
	}
	if o.Partitions <= 0 {
		o.Partitions = d.Partitions
	}
	if o.Runs <= 0 {
		o.Runs = d.Runs
	}
	if len(o.Peers) == 0 {
		o.Peers = d.Peers
	}
	if o.LatencyRecords <= 0 {
		o.LatencyRecords = d.LatencyRecords
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.Window <= 0 {
		o.Window = d.Window
	}
	if o.Linger < 0 {
		o.Linger = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// RunResult is one run of all three workloads against one peer.
type RunResult struct {
	ProduceElapsed time.Duration
	ConsumeElapsed time.Duration
	ProduceMiBps   float64
	ProduceRecps   float64
	ConsumeMiBps   float64
	ConsumeRecps   float64
	LatencyP50     time.Duration
	LatencyP99     time.Duration
	LatencyMax     time.Duration
}

// PeerResult is every run against one peer and their medians.
type PeerResult struct {
	Peer   string
	Runs   []RunResult
	Median RunResult
	Err    error // the first failure; Runs holds the runs that succeeded
}

// Report is the outcome of Run.
type Report struct {
	Options Options
	Peers   []PeerResult
	// LoadStart and LoadEnd are the machine's load averages (see LoadAvg)
	// before and after the runs: other work skews every figure.
	LoadStart, LoadEnd string
}

// Peer returns the result for name, or nil.
func (r *Report) Peer(name string) *PeerResult {
	for i := range r.Peers {
		if r.Peers[i].Peer == name {
			return &r.Peers[i]
		}
	}
	return nil
}

// Err joins every peer's failure.
func (r *Report) Err() error {
	var errs []error
	for _, p := range r.Peers {
		if p.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Peer, p.Err))
		}
	}
	return errors.Join(errs...)
}

// peer is a running broker.
type peer struct {
	addr  string
	close func() error
}

// startPeer starts a fresh broker named name with its data in dir.
func startPeer(ctx context.Context, name, dir string) (*peer, error) {
	switch name {
	case "strand":
		// No fsync: Strand's default flush policy.
		b, err := strand.Start(ctx, strand.Config{
			Dir:    dir,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		})
		if err != nil {
			return nil, err
		}
		return &peer{addr: b.Addr(), close: b.Close}, nil
	case "kfake":
		// DataDir persists segments to dir; without SyncWrites nothing is
		// fsynced per batch (kfake's default, like Kafka's).
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dir))
		if err != nil {
			return nil, err
		}
		return &peer{addr: c.ListenAddrs()[0], close: func() error { c.Close(); return nil }}, nil
	default:
		return nil, fmt.Errorf("unknown peer %q (want strand or kfake)", name)
	}
}

// ClientOpts are the franz-go settings every peer gets; seed is the broker.
// Everything not listed is kgo's default (idempotent producer, 1 MB batches,
// 50 MiB / 1 MiB-per-partition fetches, FetchMaxWait 5s).
func ClientOpts(seed string, linger time.Duration) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seed),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(linger),
	}
}

// payload is the value pool: distinct crypto/rand values, reused round-robin
// (a pool of 16 MiB has no repeat inside any 1 MB batch, so nothing in a
// batch is compressible) with their CRC-32C precomputed so the consumer can
// verify it read every byte.
type payload struct {
	vals [][]byte
	crcs []uint32
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newPayload(size int) (*payload, error) {
	n := max(16<<20/size, 64)
	buf := make([]byte, n*size)
	if _, err := rand.Read(buf); err != nil {
		return nil, err
	}
	p := &payload{vals: make([][]byte, n), crcs: make([]uint32, n)}
	for i := range n {
		p.vals[i] = buf[i*size : (i+1)*size : (i+1)*size]
		p.crcs[i] = crc32.Checksum(p.vals[i], castagnoli)
	}
	return p, nil
}

func (p *payload) value(i int) []byte { return p.vals[i%len(p.vals)] }

// sum is the expected checksum of records 0..n-1: the sum of their CRCs, so
// the order the consumer sees them in does not matter.
func (p *payload) sum(n int) uint64 {
	var s uint64
	for i := range n {
		s += uint64(p.crcs[i%len(p.crcs)])
	}
	return s
}

// Run runs the workloads against every peer o.Runs times, each run on a
// fresh broker with a fresh data directory. The peers take turns (the order
// alternates each run) so neither always runs on a colder or hotter machine.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.fill()
	pl, err := newPayload(o.Size)
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: o, LoadStart: LoadAvg()}
	defer func() { rep.LoadEnd = LoadAvg() }()
	o.Logf("load average: %s", rep.LoadStart)
	for _, name := range o.Peers {
		rep.Peers = append(rep.Peers, PeerResult{Peer: name})
	}
	for run := range o.Runs {
		idx := make([]int, len(rep.Peers))
		for i := range idx {
			idx[i] = i
		}
		if run%2 == 1 {
			slices.Reverse(idx)
		}
		for _, i := range idx {
			pr := &rep.Peers[i]
			if pr.Err != nil {
				continue
			}
			o.Logf("run %d/%d: %s", run+1, o.Runs, pr.Peer)
			res, err := runOnce(ctx, o, pl, pr.Peer)
			if err != nil {
				pr.Err = fmt.Errorf("run %d: %w", run+1, err)
				o.Logf("run %d/%d: %s FAILED: %v", run+1, o.Runs, pr.Peer, err)
				continue
			}
			o.Logf("run %d/%d: %s produce %.0f MiB/s (%.0f rec/s), consume %.0f MiB/s, latency p50 %v p99 %v",
				run+1, o.Runs, pr.Peer, res.ProduceMiBps, res.ProduceRecps, res.ConsumeMiBps, res.LatencyP50, res.LatencyP99)
			pr.Runs = append(pr.Runs, res)
		}
		if ctx.Err() != nil {
			break
		}
	}
	for i := range rep.Peers {
		rep.Peers[i].Median = median(rep.Peers[i].Runs)
	}
	return rep, ctx.Err()
}

func runOnce(ctx context.Context, o Options, pl *payload, name string) (res RunResult, err error) {
	dir, err := os.MkdirTemp(o.Dir, "peerbench-"+name+"-")
	if err != nil {
		return res, err
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	// Start each run from the same heap state: the previous run's garbage
	// (kfake keeps its log in memory) must not be collected on our clock.
	runtime.GC()
	debug.FreeOSMemory()

	p, err := startPeer(ctx, name, dir)
	if err != nil {
		return res, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if cerr := p.close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()

	const (
		warmTopic    = "peerbench-warmup"
		benchTopic   = "peerbench"
		latencyTopic = "peerbench-latency"
	)
	admin, err := kgo.NewClient(ClientOpts(p.addr, o.Linger)...)
	if err != nil {
		return res, err
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	for _, t := range []string{warmTopic, benchTopic, latencyTopic} {
		if err := createTopic(ctx, adm, t, int32(o.Partitions), o.Timeout); err != nil {
			return res, err
		}
	}

	prod, err := kgo.NewClient(ClientOpts(p.addr, o.Linger)...)
	if err != nil {
		return res, err
	}
	defer prod.Close()

	// Warm-up, not timed: the producer's connections, producer id and
	// metadata; the broker's produce and fetch paths.
	if o.Warmup > 0 {
		if _, err := produce(ctx, o, prod, pl, warmTopic, o.Warmup); err != nil {
			return res, fmt.Errorf("warm-up produce: %w", err)
		}
		if _, _, err := consume(ctx, o, p.addr, pl, warmTopic, o.Warmup, nil); err != nil {
			return res, fmt.Errorf("warm-up consume: %w", err)
		}
	}

	bytes := float64(o.Records) * float64(o.Size)
	const mib = 1 << 20

	// Workload A: bulk produce.
	stats, err := produce(ctx, o, prod, pl, benchTopic, o.Records)
	if err != nil {
		return res, fmt.Errorf("produce: %w", err)
	}
	res.ProduceElapsed = stats.elapsed
	res.ProduceMiBps = bytes / mib / stats.elapsed.Seconds()
	res.ProduceRecps = float64(o.Records) / stats.elapsed.Seconds()

	// Workload B: bulk consume of everything A wrote.
	elapsed, _, err := consume(ctx, o, p.addr, pl, benchTopic, o.Records, stats.parts)
	if err != nil {
		return res, fmt.Errorf("consume: %w", err)
	}
	res.ConsumeElapsed = elapsed
	res.ConsumeMiBps = bytes / mib / elapsed.Seconds()
	res.ConsumeRecps = float64(o.Records) / elapsed.Seconds()

	// The log holds exactly what was acknowledged: no duplicates beyond
	// the records the consumer stopped at.
	if err := checkLogSize(ctx, adm, benchTopic, int64(o.Records), o.Timeout); err != nil {
		return res, err
	}

	// Workload C: sequential single-record produce round trips.
	lat, err := latency(ctx, o, prod, pl, latencyTopic)
	if err != nil {
		return res, fmt.Errorf("latency: %w", err)
	}
	res.LatencyP50 = percentile(lat, 50)
	res.LatencyP99 = percentile(lat, 99)
	res.LatencyMax = lat[len(lat)-1]
	return res, nil
}

func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	// Wait until metadata shows every partition with a leader.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, pd := range td.Partitions {
					if pd.Err != nil || pd.Leader < 0 {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s never became ready: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// partStats summarises the offsets of one partition.
type partStats struct {
	n        int64
	min, max int64
	sum      int64
}

func (s *partStats) add(off int64) {
	if s.n == 0 || off < s.min {
		s.min = off
	}
	if s.n == 0 || off > s.max {
		s.max = off
	}
	s.n++
	s.sum += off
}

type produceStats struct {
	elapsed time.Duration
	parts   map[int32]*partStats
}

// produce sends n records asynchronously with at most o.Window of them
// unacknowledged and returns once every one is acknowledged. The window is a
// pool of o.Window records: a record is reused once its promise has run, so
// the client side allocates no record per send and keeps no pointer-heavy
// garbage on the heap the broker shares.
func produce(ctx context.Context, o Options, cl *kgo.Client, pl *payload, topic string, n int) (produceStats, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	window := min(o.Window, n)
	free := make(chan *kgo.Record, window)
	pool := make([]kgo.Record, window)
	for i := range pool {
		free <- &pool[i]
	}
	var (
		mu       sync.Mutex
		firstErr error
		acked    int64
		parts    = make(map[int32]*partStats)
		wg       sync.WaitGroup
	)
	// Promises run serially per partition but possibly concurrently
	// across partitions, hence the mutex.
	promise := func(r *kgo.Record, err error) {
		mu.Lock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
		} else {
			ps := parts[r.Partition]
			if ps == nil {
				ps = new(partStats)
				parts[r.Partition] = ps
			}
			ps.add(r.Offset)
			acked++
		}
		mu.Unlock()
		free <- r
		wg.Done()
	}
	start := time.Now()
	for i := range n {
		var r *kgo.Record
		select {
		case r = <-free:
		case <-ctx.Done():
			return produceStats{}, fmt.Errorf("after %d of %d records: %w", i, n, ctx.Err())
		}
		*r = kgo.Record{Topic: topic, Value: pl.value(i)}
		wg.Add(1)
		cl.Produce(ctx, r, promise)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return produceStats{}, firstErr
	}
	if acked != int64(n) {
		return produceStats{}, fmt.Errorf("%d of %d records acknowledged", acked, n)
	}
	return produceStats{elapsed: elapsed, parts: parts}, nil
}

// consume reads topic from the start with a fresh direct (non-group) client
// until it has n records, checksumming every value byte. The clock includes
// the client's start (a connection and a metadata request on loopback).
// want, if set, is what the producer was told: each partition's consumed
// offsets must match it.
func consume(ctx context.Context, o Options, addr string, pl *payload, topic string, n int, want map[int32]*partStats) (time.Duration, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	cl, err := kgo.NewClient(append(ClientOpts(addr, o.Linger),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var (
		got   int
		sum   uint64
		bytes int64
		parts = make(map[int32]*partStats)
		last  = make(map[int32]int64)
		order error
	)
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, 0, fmt.Errorf("consumed %d of %d records: %w", got, n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, 0, fmt.Errorf("fetch %s[%d]: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
			sum += uint64(crc32.Checksum(r.Value, castagnoli))
			if l, ok := last[r.Partition]; ok && r.Offset <= l && order == nil {
				order = fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, l)
			}
			last[r.Partition] = r.Offset
			ps := parts[r.Partition]
			if ps == nil {
				ps = new(partStats)
				parts[r.Partition] = ps
			}
			ps.add(r.Offset)
		})
	}
	elapsed := time.Since(start)
	if order != nil {
		return 0, 0, order
	}
	if got != n {
		return 0, 0, fmt.Errorf("consumed %d records, want exactly %d", got, n)
	}
	if bytes != int64(n)*int64(o.Size) {
		return 0, 0, fmt.Errorf("consumed %d value bytes, want %d", bytes, int64(n)*int64(o.Size))
	}
	if exp := pl.sum(n); sum != exp {
		return 0, 0, fmt.Errorf("value checksum %d, want %d: records corrupted, duplicated or lost", sum, exp)
	}
	if want != nil {
		if len(parts) != len(want) {
			return 0, 0, fmt.Errorf("consumed from %d partitions, produced to %d", len(parts), len(want))
		}
		for p, w := range want {
			if g := parts[p]; g == nil || *g != *w {
				return 0, 0, fmt.Errorf("partition %d: consumed offsets %+v, acknowledged %+v", p, g, w)
			}
		}
	}
	return elapsed, sum, nil
}

// checkLogSize checks the topic holds exactly n records (end − start summed
// over partitions).
func checkLogSize(ctx context.Context, adm *kadm.Client, topic string, n int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list start offsets: %w", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	var total int64
	var ferr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			ferr = cmpErr(ferr, fmt.Errorf("end offset of %s[%d]: %w", e.Topic, e.Partition, e.Err))
			return
		}
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok || s.Err != nil {
			ferr = cmpErr(ferr, fmt.Errorf("no start offset for %s[%d]", e.Topic, e.Partition))
			return
		}
		total += e.Offset - s.Offset
	})
	if ferr != nil {
		return ferr
	}
	if total != n {
		return fmt.Errorf("log holds %d records (sum of end − start offsets), want %d", total, n)
	}
	return nil
}

func cmpErr(have, next error) error {
	if have != nil {
		return have
	}
	return next
}

// latency runs o.LatencyRecords sequential ProduceSync calls of one record
// each (after a few untimed ones) and returns the sorted round trips.
func latency(ctx context.Context, o Options, cl *kgo.Client, pl *payload, topic string) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	const warm = 50
	out := make([]time.Duration, 0, o.LatencyRecords)
	for i := range warm + o.LatencyRecords {
		r := &kgo.Record{Topic: topic, Value: pl.value(i)}
		start := time.Now()
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if d := time.Since(start); i >= warm {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// percentile returns the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank-1, 0)]
}

// median takes each figure's median across runs independently.
func median(runs []RunResult) RunResult {
	if len(runs) == 0 {
		return RunResult{}
	}
	f := func(get func(RunResult) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	d := func(get func(RunResult) time.Duration) time.Duration {
		return time.Duration(f(func(r RunResult) float64 { return float64(get(r)) }))
	}
	return RunResult{
		ProduceElapsed: d(func(r RunResult) time.Duration { return r.ProduceElapsed }),
		ConsumeElapsed: d(func(r RunResult) time.Duration { return r.ConsumeElapsed }),
		ProduceMiBps:   f(func(r RunResult) float64 { return r.ProduceMiBps }),
		ProduceRecps:   f(func(r RunResult) float64 { return r.ProduceRecps }),
		ConsumeMiBps:   f(func(r RunResult) float64 { return r.ConsumeMiBps }),
		ConsumeRecps:   f(func(r RunResult) float64 { return r.ConsumeRecps }),
		LatencyP50:     d(func(r RunResult) time.Duration { return r.LatencyP50 }),
		LatencyP99:     d(func(r RunResult) time.Duration { return r.LatencyP99 }),
		LatencyMax:     d(func(r RunResult) time.Duration { return r.LatencyMax }),
	}
}
