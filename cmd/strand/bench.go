package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchStampHeader is the record header `strand bench produce` puts on every
// record: the send time, 8 bytes big-endian Unix nanoseconds. `strand bench
// consume` measures end-to-end latency on records that carry it.
const benchStampHeader = "strand-bench-ns"

// benchOptions are the flags of `strand bench produce|consume`.
type benchOptions struct {
	client      clientOptions
	topic       string
	records     int64
	size        int
	partitions  int32
	acks        string
	compression string
	linger      time.Duration
	producers   int
	window      int
	group       string
	idle        time.Duration
	interval    time.Duration
}

func newBenchCmd() *cobra.Command {
	o := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test any Kafka-compatible broker (produce or consume throughput and latency)",
		Long: `Load-test a Kafka-compatible broker, like kafka-producer-perf-test or nats bench.

"bench produce" sends --records records of --size random (incompressible) bytes
and reports records/s, MiB/s of value bytes, and each record's ack latency
(from Produce to its acknowledgement, so it includes the time a record waits in
the client behind up to --window others: lower --window or --linger for latency,
raise them for throughput). Every record carries its send time in the header
` + benchStampHeader + `.

"bench consume" reads a topic from the earliest offset and reports records/s,
MiB/s and, for records that carry that header, end-to-end latency (send →
consumed). Run it next to "bench produce" to measure end-to-end latency live.

A rate line goes to stderr every --interval; the summary goes to stdout.`,
		Example: `  strand bench produce --topic bench --records 1000000 --size 1024 --partitions 8
  strand bench consume --topic bench
  strand bench produce --brokers kafka:9092 --acks 1 --compression zstd --producers 4`,
	}
	addClientFlags(cmd, &o.client, true, true)
	fs := cmd.PersistentFlags()
	fs.StringVar(&o.topic, "topic", "strand-bench", "topic to produce to or consume from")
	fs.DurationVar(&o.interval, "interval", time.Second, "how often to print the live rate line (0 = never)")
	cmd.AddCommand(newBenchProduceCmd(o), newBenchConsumeCmd(o))
	return cmd
}

func newBenchProduceCmd(o *benchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce records as fast as the broker acknowledges them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := benchSignalContext(cmd.Context())
			defer stop()
			return o.runProduce(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&o.records, "records", 1_000_000, "records to produce (in total, over all producers)")
	fs.IntVar(&o.size, "size", 1024, "value bytes per record")
	fs.Int32Var(&o.partitions, "partitions", 8, "partitions when the topic has to be created (an existing topic is used as is)")
	fs.StringVar(&o.acks, "acks", "all", "all, 1 (leader) or 0 (none); 1 and 0 disable the idempotent producer")
	fs.StringVar(&o.compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	fs.DurationVar(&o.linger, "linger", 5*time.Millisecond, "how long a producer waits to fill a batch")
	fs.IntVar(&o.producers, "producers", 1, "concurrent producer clients (each its own connections)")
	fs.IntVar(&o.window, "window", 10_000, "most records in flight (unacknowledged) per producer")
	return cmd
}

func newBenchConsumeCmd(o *benchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume a topic from the earliest offset as fast as possible",
		Long: `Consume a topic from the earliest offset. Without --records it stops once it has
reached the end offsets the topic had when it started; with --records, after that
many records. It also stops after --idle without a record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := benchSignalContext(cmd.Context())
			defer stop()
			return o.runConsume(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&o.records, "records", 0, "stop after this many records (0 = at the end offsets seen at start)")
	fs.StringVar(&o.group, "group", "", "consume as this consumer group (default: a direct, groupless consumer)")
	fs.DurationVar(&o.idle, "idle", 10*time.Second, "stop after this long without a record")
	return cmd
}

// benchSignalContext cancels on SIGINT or SIGTERM so an interrupted bench
// still prints what it measured.
func benchSignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func (o *benchOptions) producerOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.ProducerLinger(o.linger), kgo.DefaultProduceTopic(o.topic)}
	switch o.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1", "leader":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0", "none":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, usageErr("--acks: want all, 1 or 0, got %q", o.acks)
	}
	var codec kgo.CompressionCodec
	switch o.compression {
	case "none", "":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, usageErr("--compression: want none, gzip, snappy, lz4 or zstd, got %q", o.compression)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if o.window > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(o.window))
	}
	return opts, nil
}

// ensureTopic creates the topic with --partitions unless it exists.
func (o *benchOptions) ensureTopic(ctx context.Context) error {
	ctx, cancel := o.client.ctx(ctx)
	defer cancel()
	adm, err := o.client.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	resp, err := adm.CreateTopic(ctx, o.partitions, -1, nil, o.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", o.topic, err)
	}
	// Wait until every partition has a leader, so the first produces do
	// not measure topic creation.
	for {
		md, err := adm.Metadata(ctx, o.topic)
		if err == nil {
			if td, ok := md.Topics[o.topic]; ok && td.Err == nil && len(td.Partitions) > 0 {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leader for every partition: %w", o.topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// benchSummary is what a bench run prints at the end (and as JSON with -o json).
type benchSummary struct {
	Mode       string          `json:"mode"`
	Topic      string          `json:"topic"`
	Records    int64           `json:"records"`
	Bytes      int64           `json:"bytes"`
	Errors     int64           `json:"errors,omitempty"`
	Seconds    float64         `json:"seconds"`
	RecordsPS  float64         `json:"records_per_sec"`
	MiBPS      float64         `json:"mib_per_sec"`
	Latency    *benchLatencies `json:"latency,omitempty"`     // produce: ack latency
	EndToEnd   *benchLatencies `json:"end_to_end,omitempty"`  // consume: send → consumed
	FirstError string          `json:"first_error,omitempty"` // produce
}

// benchLatencies are percentiles in milliseconds.
type benchLatencies struct {
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P95     float64 `json:"p95_ms"`
	P99     float64 `json:"p99_ms"`
	P999    float64 `json:"p99_9_ms"`
	Max     float64 `json:"max_ms"`
}

func (s *benchSummary) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, s)
	}
	fmt.Fprintf(w, "%s %s: %d records, %.1f MiB in %.3fs\n", s.Mode, s.Topic, s.Records, float64(s.Bytes)/(1<<20), s.Seconds)
	fmt.Fprintf(w, "throughput: %.0f records/s, %.2f MiB/s\n", s.RecordsPS, s.MiBPS)
	lat := func(name string, l *benchLatencies) {
		if l == nil {
			return
		}
		fmt.Fprintf(w, "%s: p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, max %.3f ms (%d samples)\n",
			name, l.P50, l.P95, l.P99, l.P999, l.Max, l.Samples)
	}
	lat("ack latency", s.Latency)
	lat("end-to-end latency", s.EndToEnd)
	if s.Errors > 0 {
		fmt.Fprintf(w, "errors: %d records failed; first: %s\n", s.Errors, s.FirstError)
	}
	return nil
}

// benchMeter counts records and bytes for the live rate line.
type benchMeter struct {
	records, bytes atomic.Int64
}

// live prints a rate line to w every interval until stop is called.
func (m *benchMeter) live(w io.Writer, verb string, interval time.Duration, hist *benchHist) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		start := time.Now()
		var lastR, lastB int64
		last := start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				r, b := m.records.Load(), m.bytes.Load()
				dt := now.Sub(last).Seconds()
				line := fmt.Sprintf("%7.1fs  %s %d records  %.0f rec/s  %.2f MiB/s",
					now.Sub(start).Seconds(), verb, r, float64(r-lastR)/dt, float64(b-lastB)/dt/(1<<20))
				if hist != nil {
					if l := hist.snapshot(); l != nil {
						line += fmt.Sprintf("  p50 %.2f ms  p99 %.2f ms", l.P50, l.P99)
					}
				}
				fmt.Fprintln(w, line)
				lastR, lastB, last = r, b, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (o *benchOptions) runProduce(ctx context.Context, stdout, stderr io.Writer) error {
	asJSON, err := o.client.json()
	if err != nil {
		return err
	}
	switch {
	case o.records <= 0:
		return usageErr("--records must be positive")
	case o.size < 0:
		return usageErr("--size must not be negative")
	case o.producers <= 0:
		return usageErr("--producers must be positive")
	case o.partitions <= 0 && o.partitions != -1:
		return usageErr("--partitions must be positive (or -1 for the broker's default)")
	}
	popts, err := o.producerOpts()
	if err != nil {
		return err
	}
	if err := o.ensureTopic(ctx); err != nil {
		return err
	}
	// Random values, one per in-flight record slot, so that batches are
	// incompressible; a slot is reused once its record is acknowledged.
	window := o.window
	if window <= 0 {
		window = 10_000
	}
	window = max(1, min(window, int((256<<20)/max(o.size, 1)), int(o.records)))

	clients := make([]*kgo.Client, o.producers)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		if clients[i], err = o.client.client(ctx, popts...); err != nil {
			return err
		}
	}

	var (
		m        benchMeter
		hist     benchHist
		failed   atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	stopLive := m.live(stderr, "produced", o.interval, &hist)
	start := time.Now()
	var wg sync.WaitGroup
	for i, cl := range clients {
		n := o.records / int64(o.producers)
		if int64(i) < o.records%int64(o.producers) {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.produceN(ctx, cl, n, window, &m, &hist, func(err error) {
				failed.Add(1)
				errOnce.Do(func() { firstErr = err })
			})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopLive()

	s := &benchSummary{Mode: "produce", Topic: o.topic, Records: m.records.Load(), Bytes: m.bytes.Load(), Errors: failed.Load()}
	s.fill(elapsed)
	s.Latency = hist.snapshot()
	if firstErr != nil {
		s.FirstError = firstErr.Error()
	}
	if err := s.print(stdout, asJSON); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d of %d records", s.Records, o.records)
	}
	if firstErr != nil {
		return fmt.Errorf("%d records failed: %w", s.Errors, firstErr)
	}
	return nil
}

func (s *benchSummary) fill(elapsed time.Duration) {
	s.Seconds = elapsed.Seconds()
	if s.Seconds > 0 {
		s.RecordsPS = float64(s.Records) / s.Seconds
		s.MiBPS = float64(s.Bytes) / (1 << 20) / s.Seconds
	}
}

// produceN sends n records on cl with at most window unacknowledged.
func (o *benchOptions) produceN(ctx context.Context, cl *kgo.Client, n int64, window int, m *benchMeter,
	hist *benchHist, fail func(error)) {
	window = int(min(int64(window), max(n, 1)))
	type slot struct {
		rec   kgo.Record
		stamp [8]byte
		sent  time.Time
	}
	slots := make([]slot, window)
	vals := make([]byte, window*o.size)
	if _, err := rand.Read(vals); err != nil {
		fail(err)
		return
	}
	free := make(chan *slot, window)
	for i := range slots {
		s := &slots[i]
		s.rec.Value = vals[i*o.size : (i+1)*o.size : (i+1)*o.size]
		s.rec.Headers = []kgo.RecordHeader{{Key: benchStampHeader, Value: s.stamp[:]}}
		free <- s
	}
	var inflight sync.WaitGroup
	for range n {
		var s *slot
		select {
		case s = <-free:
		case <-ctx.Done():
			inflight.Wait()
			return
		}
		// Reset what the client filled in on the previous use.
		s.rec = kgo.Record{Topic: o.topic, Value: s.rec.Value, Headers: s.rec.Headers}
		s.sent = time.Now()
		binary.BigEndian.PutUint64(s.stamp[:], uint64(s.sent.UnixNano()))
		inflight.Add(1)
		cl.Produce(ctx, &s.rec, func(r *kgo.Record, err error) {
			if err != nil {
				fail(err)
			} else {
				hist.record(time.Since(s.sent))
				m.records.Add(1)
				m.bytes.Add(int64(len(r.Value)))
			}
			free <- s
			inflight.Done()
		})
	}
	inflight.Wait()
}

func (o *benchOptions) runConsume(ctx context.Context, stdout, stderr io.Writer) error {
	asJSON, err := o.client.json()
	if err != nil {
		return err
	}
	if o.records < 0 {
		return usageErr("--records must not be negative")
	}
	// The end offsets now are where a run without --records stops.
	var ends map[int32]int64
	if o.records == 0 {
		if ends, err = o.endOffsets(ctx); err != nil {
			return err
		}
	}
	opts := []kgo.Opt{
		kgo.ConsumeTopics(o.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
	if o.group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.group))
	}
	start := time.Now()
	cl, err := o.client.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var (
		m    benchMeter
		e2e  benchHist
		next = make(map[int32]int64) // next offset per partition
	)
	reached := func() bool {
		if o.records > 0 {
			return m.records.Load() >= o.records
		}
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	stopLive := m.live(stderr, "consumed", o.interval, &e2e)
	idle := o.idle
	if idle <= 0 {
		idle = 10 * time.Second
	}
	lastRecord := time.Now()
	var fetchErr error
	for !reached() && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, min(idle, time.Second))
		fs := cl.PollFetches(pctx)
		cancel()
		now := time.Now()
		n := 0
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if fetchErr == nil {
				fetchErr = fmt.Errorf("fetch %s[%d]: %w", t, p, err)
			}
		})
		if fetchErr != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			m.bytes.Add(int64(len(r.Value)))
			m.records.Add(1)
			next[r.Partition] = r.Offset + 1
			for _, h := range r.Headers {
				if h.Key == benchStampHeader && len(h.Value) == 8 {
					sent := int64(binary.BigEndian.Uint64(h.Value))
					e2e.record(time.Duration(now.UnixNano() - sent))
				}
			}
		})
		if n > 0 {
			lastRecord = now
		} else if now.Sub(lastRecord) >= idle {
			break
		}
		if o.records > 0 && m.records.Load() >= o.records {
			break
		}
	}
	elapsed := time.Since(start)
	stopLive()
	if o.group != "" {
		cctx, cancel := o.client.ctx(context.WithoutCancel(ctx))
		if err := cl.CommitUncommittedOffsets(cctx); err != nil && fetchErr == nil {
			fetchErr = fmt.Errorf("commit offsets: %w", err)
		}
		cancel()
	}
	s := &benchSummary{Mode: "consume", Topic: o.topic, Records: m.records.Load(), Bytes: m.bytes.Load()}
	s.fill(elapsed)
	s.EndToEnd = e2e.snapshot()
	if err := s.print(stdout, asJSON); err != nil {
		return err
	}
	return fetchErr
}

// endOffsets lists the topic's end offsets (partitions with no records are
// left out: there is nothing to wait for).
func (o *benchOptions) endOffsets(ctx context.Context) (map[int32]int64, error) {
	ctx, cancel := o.client.ctx(ctx)
	defer cancel()
	adm, err := o.client.admin(ctx)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	starts, err := adm.ListStartOffsets(ctx, o.topic)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", o.topic, err)
	}
	endsL, err := adm.ListEndOffsets(ctx, o.topic)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", o.topic, err)
	}
	if err := endsL.Error(); err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", o.topic, err)
	}
	ends := make(map[int32]int64)
	found := false
	endsL.Each(func(e kadm.ListedOffset) {
		found = true
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok && s.Err == nil && s.Offset < e.Offset {
			ends[e.Partition] = e.Offset
		}
	})
	if !found {
		return nil, fmt.Errorf("topic %s does not exist", o.topic)
	}
	return ends, nil
}

// benchHist is a log-linear latency histogram (32 buckets per power of two,
// so ≤ 3% error) in nanoseconds. It is safe for concurrent use.
type benchHist struct {
	mu     sync.Mutex
	counts [64 + 58*32]int64
	n      int64
	max    int64
}

func benchBucket(v int64) int {
	if v < 64 {
		return int(max(v, 0))
	}
	e := bits.Len64(uint64(v)) - 6 // v>>e is in [32, 64)
	return 64 + (e-1)*32 + int(v>>e) - 32
}

// benchBucketValue is the middle of bucket i.
func benchBucketValue(i int) int64 {
	if i < 64 {
		return int64(i)
	}
	e := (i-64)/32 + 1
	m := int64((i-64)%32 + 32)
	return m<<e + (int64(1)<<e)/2
}

func (h *benchHist) record(d time.Duration) {
	v := int64(d)
	h.mu.Lock()
	h.counts[benchBucket(v)]++
	h.n++
	h.max = max(h.max, v)
	h.mu.Unlock()
}

// snapshot returns the percentiles so far, or nil without samples.
func (h *benchHist) snapshot() *benchLatencies {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return nil
	}
	q := func(p float64) float64 {
		rank := int64(p*float64(h.n) + 0.999999) // nearest rank
		rank = max(1, min(rank, h.n))
		var seen int64
		for i, c := range h.counts {
			if seen += c; seen >= rank {
				return float64(min(benchBucketValue(i), h.max)) / 1e6
			}
		}
		return float64(h.max) / 1e6
	}
	return &benchLatencies{Samples: h.n, P50: q(0.50), P95: q(0.95), P99: q(0.99), P999: q(0.999), Max: float64(h.max) / 1e6}
}
