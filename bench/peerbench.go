// Package bench compares Strand with its peers — franz-go's kfake and NATS
// JetStream — on the same machine in one run: bulk produce of 1 KB and
// 100 B records, bulk consume, single-record produce round trips,
// end-to-end latency at a fixed rate, and produce throughput at 1, 8 and 64
// partitions.
//
// It lives in its own module so that kfake, kadm, nats-server and gonum/plot
// never reach Strand's main binary. The command is ./cmd/peerbench; Run is
// the harness it and the test drive.
package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// AllPeers are the peers Run knows, in report order.
var AllPeers = []string{"strand", "strand-rf3", "strand-rf3-tls", "kfake", "jetstream", "null"}

// Options configures a Run. Zero fields take the defaults in DefaultOptions.
type Options struct {
	Records         int           // 1 KB records produced (and consumed) per run
	Size            int           // value bytes of the main workload
	SmallRecords    int           // records of the small-record produce workload
	SmallSize       int           // value bytes of the small-record workload
	ScaleRecords    int           // records per partition-scaling produce
	ScalePartitions []int         // partition counts of the scaling workload
	Partitions      int           // partitions of the main topics
	Runs            int           // repetitions per peer; figures are medians
	Peers           []string      // of AllPeers
	LatencyRecords  int           // sequential single-record produces
	E2ERate         int           // records/s of the end-to-end workload
	E2EDuration     time.Duration // how long the end-to-end workload sends
	Warmup          int           // records produced and consumed before timing
	Window          int           // produce records in flight (not yet acknowledged)
	Linger          time.Duration // kgo.ProducerLinger, the same for both Kafka peers
	BatchBytes      int           // kgo.ProducerBatchMaxBytes (see DefaultOptions)
	Timeout         time.Duration // bound on each workload of each run
	Dir             string        // parent of the per-run data directories; "" = os.TempDir()
	NoSync          bool          // skip the sync(2) before each timed workload
	Logf            func(format string, args ...any)
}

// DefaultOptions keep a full run (3 peers × 3 runs) under 5 minutes on two
// cores: JetStream, the slowest peer, takes most of it.
func DefaultOptions() Options {
	return Options{
		Records:         500_000,
		Size:            1024,
		SmallRecords:    1_000_000,
		SmallSize:       100,
		ScaleRecords:    500_000,
		ScalePartitions: []int{1, 8, 64},
		Partitions:      8,
		Runs:            3,
		Peers:           slices.Clone(AllPeers),
		LatencyRecords:  10_000,
		E2ERate:         5_000,
		E2EDuration:     5 * time.Second,
		Warmup:          10_000,
		Window:          50_000,
		Linger:          10 * time.Millisecond,
		// 256 KiB batches, not kgo's 1 MB: the client buffers at most
		// Window records (kgo's own default, 50,000), and with 1 MB
		// batches at 64 partitions that buffer cannot fill one batch per
		// partition, so every batch is cut by the linger timer and the
		// partition-scaling figure measures the client's timer, not the
		// broker (the null broker fell to 38-69% of its 8-partition rate).
		// 256 KiB leaves room for three full batches per partition.
		BatchBytes: 256 << 10,
		Timeout:    2 * time.Minute,
	}
}

func (o *Options) fill() {
	d := DefaultOptions()
	setInt := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setInt(&o.Records, d.Records)
	setInt(&o.Size, d.Size)
	setInt(&o.SmallRecords, d.SmallRecords)
	setInt(&o.SmallSize, d.SmallSize)
	setInt(&o.ScaleRecords, d.ScaleRecords)
	setInt(&o.Partitions, d.Partitions)
	setInt(&o.Runs, d.Runs)
	setInt(&o.LatencyRecords, d.LatencyRecords)
	setInt(&o.E2ERate, d.E2ERate)
	setInt(&o.Window, d.Window)
	if len(o.ScalePartitions) == 0 {
		o.ScalePartitions = d.ScalePartitions
	}
	if len(o.Peers) == 0 {
		o.Peers = d.Peers
	}
	if o.E2EDuration <= 0 {
		o.E2EDuration = d.E2EDuration
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.Linger < 0 {
		o.Linger = 0
	}
	setInt(&o.BatchBytes, d.BatchBytes)
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// RunResult is one run of every workload against one peer: metric ID →
// value (MiB/s, records/s, or nanoseconds for latencies; see Metrics).
type RunResult map[string]float64

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

// target is a running peer: a broker and the clients that drive it. A
// "topic" is a Kafka topic, or a JetStream stream with one subject per
// partition.
type target interface {
	createTopic(ctx context.Context, topic string, partitions int) error
	// produce sends n records of pl.value(0..n-1), acks=all, at most
	// o.Window unacknowledged, and returns once all are acknowledged, with
	// what consume should verify against.
	produce(ctx context.Context, topic string, pl *payload, n int) (time.Duration, any, error)
	// consume reads the first n records from the start with a fresh
	// consumer, checks them and returns the time taken.
	consume(ctx context.Context, topic string, pl *payload, n int, produced any) (time.Duration, error)
	// roundTrips: o.LatencyRecords sequential single-record produces, sorted.
	roundTrips(ctx context.Context, topic string, pl *payload) ([]time.Duration, error)
	// endToEnd: send→receive latencies at o.E2ERate for o.E2EDuration, sorted.
	endToEnd(ctx context.Context, topic string, pl *payload) ([]time.Duration, error)
	close() error
}

func startTarget(ctx context.Context, o Options, name, dir string) (target, error) {
	switch name {
	case "strand", "strand-rf3", "strand-rf3-tls", "kfake":
		return startKafka(ctx, o, name, dir)
	case "jetstream":
		return startJetStream(ctx, o, dir)
	case "null":
		return startNull(ctx, o)
	}
	return nil, fmt.Errorf("unknown peer %q (want one of %v)", name, AllPeers)
}

// payload is the value pool: distinct crypto/rand values, reused round-robin
// (a pool of 16 MiB has no repeat inside any 1 MB batch, so nothing in a
// batch is compressible) with their CRC-32C precomputed so the consumer can
// verify it read every byte.
type payload struct {
	size int
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
	p := &payload{size: size, vals: make([][]byte, n), crcs: make([]uint32, n)}
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
// rotates each run) so none always runs on a colder or hotter machine.
func Run(ctx context.Context, o Options) (*Report, error) {
	o.fill()
	big, err := newPayload(o.Size)
	if err != nil {
		return nil, err
	}
	small, err := newPayload(o.SmallSize)
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
		for k := range rep.Peers {
			pr := &rep.Peers[(k+run)%len(rep.Peers)]
			if pr.Err != nil {
				continue
			}
			o.Logf("run %d/%d: %s", run+1, o.Runs, pr.Peer)
			res, err := runOnce(ctx, o, big, small, pr.Peer)
			if err != nil {
				pr.Err = fmt.Errorf("run %d: %w", run+1, err)
				o.Logf("run %d/%d: %s FAILED: %v", run+1, o.Runs, pr.Peer, err)
				continue
			}
			o.Logf("run %d/%d: %s %s", run+1, o.Runs, pr.Peer, res.summary())
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

const mib = 1 << 20

func runOnce(ctx context.Context, o Options, big, small *payload, name string) (res RunResult, err error) {
	dir, err := os.MkdirTemp(o.Dir, "peerbench-"+name+"-")
	if err != nil {
		return nil, err
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

	t, err := startTarget(ctx, o, name, dir)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	defer func() {
		if cerr := t.close(); cerr != nil && err == nil {
			err = fmt.Errorf("close: %w", cerr)
		}
	}()

	topics := []struct {
		name       string
		partitions int
	}{
		{"warmup", o.Partitions}, {"bulk", o.Partitions}, {"small", o.Partitions},
		{"latency", o.Partitions}, {"e2e", o.Partitions},
	}
	for _, p := range o.ScalePartitions {
		topics = append(topics, struct {
			name       string
			partitions int
		}{fmt.Sprintf("scale%d", p), p})
	}
	for _, tp := range topics {
		if err := t.createTopic(ctx, tp.name, tp.partitions); err != nil {
			return nil, err
		}
	}
	res = make(RunResult)

	// Warm-up, not timed: connections, producer ids, metadata; the
	// broker's produce and fetch paths.
	if o.Warmup > 0 {
		_, prod, err := t.produce(ctx, "warmup", big, o.Warmup)
		if err != nil {
			return nil, fmt.Errorf("warm-up produce: %w", err)
		}
		if _, err := t.consume(ctx, "warmup", big, o.Warmup, prod); err != nil && !errors.Is(err, errUnsupported) {
			return nil, fmt.Errorf("warm-up consume: %w", err)
		}
	}

	// Each timed workload starts with no dirty pages: otherwise the kernel
	// writes back what earlier workloads wrote (the peers that write to
	// disk wrote gigabytes by then) on the cores a later workload runs on,
	// and the order of the workloads would decide their figures.
	settle := func() {
		if !o.NoSync {
			syscall.Sync()
		}
	}
	throughput := func(prefix string, n, size int, d time.Duration) {
		res[prefix+"_mibps"] = float64(n) * float64(size) / mib / d.Seconds()
		res[prefix+"_recps"] = float64(n) / d.Seconds()
	}

	// Bulk produce of 1 KB records, then consume them all.
	settle()
	d, prod, err := t.produce(ctx, "bulk", big, o.Records)
	if err != nil {
		return nil, fmt.Errorf("produce: %w", err)
	}
	throughput(MetricProduce, o.Records, o.Size, d)
	settle()
	switch d, err = t.consume(ctx, "bulk", big, o.Records, prod); {
	case errors.Is(err, errUnsupported):
	case err != nil:
		return nil, fmt.Errorf("consume: %w", err)
	default:
		throughput(MetricConsume, o.Records, o.Size, d)
	}

	// Bulk produce of small records, consumed back (untimed) to check them.
	settle()
	d, prod, err = t.produce(ctx, "small", small, o.SmallRecords)
	if err != nil {
		return nil, fmt.Errorf("small produce: %w", err)
	}
	throughput(MetricProduceSmall, o.SmallRecords, o.SmallSize, d)
	if _, err = t.consume(ctx, "small", small, o.SmallRecords, prod); err != nil && !errors.Is(err, errUnsupported) {
		return nil, fmt.Errorf("small consume (check): %w", err)
	}

	// Produce throughput by partition count.
	for _, p := range o.ScalePartitions {
		topic := fmt.Sprintf("scale%d", p)
		settle()
		d, _, err := t.produce(ctx, topic, big, o.ScaleRecords)
		if err != nil {
			return nil, fmt.Errorf("produce to %d partitions: %w", p, err)
		}
		throughput(ScaleMetric(p), o.ScaleRecords, o.Size, d)
	}

	// Sequential single-record produce round trips.
	settle()
	lat, err := t.roundTrips(ctx, "latency", big)
	if err != nil {
		return nil, fmt.Errorf("round trips: %w", err)
	}
	res[MetricRTT+"_p50"] = float64(percentile(lat, 50))
	res[MetricRTT+"_p99"] = float64(percentile(lat, 99))
	res[MetricRTT+"_max"] = float64(lat[len(lat)-1])

	// End-to-end latency at a fixed rate.
	settle()
	lat, err = t.endToEnd(ctx, "e2e", big)
	if errors.Is(err, errUnsupported) {
		return res, nil
	}
	if err != nil {
		return nil, fmt.Errorf("end to end: %w", err)
	}
	res[MetricE2E+"_p50"] = float64(percentile(lat, 50))
	res[MetricE2E+"_p99"] = float64(percentile(lat, 99))
	res[MetricE2E+"_max"] = float64(lat[len(lat)-1])
	return res, nil
}

// Metric ID prefixes of RunResult.
const (
	MetricProduce      = "produce"       // _mibps, _recps: bulk produce, Size-byte values
	MetricConsume      = "consume"       // _mibps, _recps: bulk consume of those
	MetricProduceSmall = "produce_small" // _mibps, _recps: bulk produce, SmallSize-byte values
	MetricRTT          = "rtt"           // _p50, _p99, _max: single-record produce round trip (ns)
	MetricE2E          = "e2e"           // _p50, _p99, _max: produce → consume at E2ERate (ns)
)

// ScaleMetric is the metric ID prefix of produce throughput at p partitions.
func ScaleMetric(p int) string { return fmt.Sprintf("produce_p%d", p) }

func (r RunResult) summary() string {
	var parts []string
	add := func(format, key string, scale float64) {
		if v, ok := r[key]; ok {
			parts = append(parts, fmt.Sprintf(format, v/scale))
		}
	}
	add("produce %.0f MiB/s", MetricProduce+"_mibps", 1)
	add("small %.0f rec/s", MetricProduceSmall+"_recps", 1)
	add("consume %.0f MiB/s", MetricConsume+"_mibps", 1)
	add("rtt p99 %.0fµs", MetricRTT+"_p99", 1e3)
	add("e2e p99 %.2fms", MetricE2E+"_p99", 1e6)
	return strings.Join(parts, ", ")
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
	out := make(RunResult)
	if len(runs) == 0 {
		return out
	}
	for k := range runs[0] {
		v := make([]float64, 0, len(runs))
		for _, r := range runs {
			if x, ok := r[k]; ok {
				v = append(v, x)
			}
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			out[k] = v[len(v)/2]
		} else {
			out[k] = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
	}
	return out
}
