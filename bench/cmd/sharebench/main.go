// Command sharebench measures what share groups (KIP-932) cost beside a
// classic consumer group, against one Strand broker started in-process:
// per run it produces -records records of -size bytes to a topic of
// -partitions partitions, then has -consumers classic group members read
// them all, then -consumers share-group members read and accept them all
// (franz-go's kgo.ShareGroup, every record acknowledged with accept), on
// the same data, and prints both throughputs and their ratio, the time per
// record each spends (the difference is what acquiring and acknowledging a
// record costs) and, in a paced phase, the produce → acknowledged latency
// of share consumption (p50, p99). The figures are medians over -runs.
//
//	cd bench && go run ./cmd/sharebench -runs 3
package main

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand"
)

type options struct {
	runs, records, size, partitions, consumers int
	rate, maxRecords                           int
	latencyFor, linger                         time.Duration
	timeout                                    time.Duration
	dir, cpuprofile, profilePhase, memprofile  string
	values                                     string
	modes                                      []ackMode
}

// ackMode is how the share phase's members acknowledge.
type ackMode string

const (
	// ackRecord: each record its own Ack(AckAccept) as it is handled (a
	// work queue acknowledging each job when it is done); the
	// acknowledgements ride on the member's next ShareFetch.
	ackRecord ackMode = "record"
	// ackImplicit: no acknowledgement call; franz-go accepts every
	// record of a poll at the next poll (its default).
	ackImplicit ackMode = "implicit"
	// ackFlush: each record Ack(AckAccept), then FlushAcks (a
	// ShareAcknowledge answered) after every poll.
	ackFlush ackMode = "flush"
)

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 3, "runs; every figure is the median")
	flag.IntVar(&o.records, "records", 1_000_000, "records produced and consumed by each group per run (enough that the fastest phase lasts seconds: a phase of a fraction of a second measures the scheduler)")
	flag.IntVar(&o.size, "size", 1024, "record value bytes")
	flag.IntVar(&o.partitions, "partitions", 4, "partitions of the topic")
	flag.IntVar(&o.consumers, "consumers", 4, "members of each group")
	flag.IntVar(&o.maxRecords, "max-records", 0, "share consumers' ShareMaxRecords (0: franz-go's default, 500)")
	flag.IntVar(&o.rate, "rate", 2000, "records per second of the latency phase")
	flag.DurationVar(&o.latencyFor, "latency-duration", 5*time.Second, "length of the latency phase")
	flag.DurationVar(&o.linger, "linger", 0, "producer linger of the latency phase (franz-go's default is 10ms, which alone adds up to that to each record's latency)")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound on each phase")
	flag.StringVar(&o.dir, "dir", "", "data directory (default: a temporary one, removed after)")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole process (broker and clients)")
	flag.StringVar(&o.profilePhase, "profile-phase", "", "with -cpuprofile, profile only this phase (classic, or a share mode: record, implicit, flush) of each run, one file per run: <cpuprofile>.<run>")
	flag.StringVar(&o.memprofile, "memprofile", "", "write a heap profile (allocations of the whole run) at the end")
	flag.StringVar(&o.values, "values", "random", "record values: random (incompressible: 1 KB on the wire too) or zero (all zeros, which the producer's snappy shrinks ~20-fold)")
	modes := flag.String("share-modes", "record,implicit,flush", "share phases, in order: record (Ack each record), implicit (no Ack: franz-go accepts a poll's records at the next poll), flush (Ack each record and FlushAcks every poll)")
	flag.Parse()
	for m := range strings.SplitSeq(*modes, ",") {
		switch ackMode(m) {
		case ackRecord, ackImplicit, ackFlush:
			o.modes = append(o.modes, ackMode(m))
		default:
			fmt.Fprintf(os.Stderr, "sharebench: unknown share mode %q\n", m)
			os.Exit(2)
		}
	}
	if o.values != "random" && o.values != "zero" {
		fmt.Fprintf(os.Stderr, "sharebench: -values is random or zero, not %q\n", o.values)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "sharebench:", err)
		os.Exit(1)
	}
}

type result struct {
	classic    time.Duration // to consume every record
	classicCPU time.Duration // process CPU time (broker and clients) of the classic phase
	share      map[ackMode]phase
	p50, p99   time.Duration // produce → acknowledged, paced
}

// phase is one share phase's figures.
type phase struct {
	wall, cpu time.Duration
}

func (o options) perSec(d time.Duration) float64 { return float64(o.records) / d.Seconds() }

func run(o options) error {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "sharebench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if o.cpuprofile != "" && o.profilePhase == "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	b, err := strand.Start(ctx, strand.Config{Dir: dir, Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer b.Close()
	if o.memprofile != "" {
		defer func() {
			if f, err := os.Create(o.memprofile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	fmt.Printf("load average at start: %s", loadavg())
	var rs []result
	perRec := func(d time.Duration) time.Duration { return d / time.Duration(o.records) }
	for i := range o.runs {
		r, err := oneRun(ctx, b.Addr(), o, i)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		rs = append(rs, r)
		fmt.Printf("run %d  classic %8.0f rec/s (%.1f s, CPU %v/record)", i+1, o.perSec(r.classic), r.classic.Seconds(), perRec(r.classicCPU))
		for _, m := range o.modes {
			p := r.share[m]
			fmt.Printf("  share[%s] %8.0f rec/s (%.1f s) %3.0f%% CPU %v/record", m, o.perSec(p.wall), p.wall.Seconds(), 100*r.classic.Seconds()/p.wall.Seconds(), perRec(p.cpu))
		}
		fmt.Printf("  produce→acked p50 %v p99 %v  load %s", r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), loadavg())
	}
	med := func(f func(result) time.Duration) time.Duration {
		v := make([]time.Duration, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	medRatio := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	c, cc := med(func(r result) time.Duration { return r.classic }), med(func(r result) time.Duration { return r.classicCPU })
	fmt.Printf("median of %d runs, %d × %d B records (%s values), %d partitions, %d consumers per group:\n", o.runs, o.records, o.size, o.values, o.partitions, o.consumers)
	fmt.Printf("  classic group  %8.0f rec/s  (%v per record; CPU %v per record, broker and clients)\n", o.perSec(c), perRec(c), perRec(cc))
	what := map[ackMode]string{
		ackRecord:   "each record Ack(AckAccept), acknowledgements on the next fetch",
		ackImplicit: "no Ack call, franz-go accepts a poll's records at the next poll",
		ackFlush:    "each record Ack(AckAccept), FlushAcks after every poll",
	}
	for _, m := range o.modes {
		s := med(func(r result) time.Duration { return r.share[m].wall })
		sc := med(func(r result) time.Duration { return r.share[m].cpu })
		ratio := medRatio(func(r result) float64 { return r.classic.Seconds() / r.share[m].wall.Seconds() })
		cpuRatio := medRatio(func(r result) float64 { return r.classicCPU.Seconds() / r.share[m].cpu.Seconds() })
		fmt.Printf("  share[%s] %8.0f rec/s  (%v per record; %s)\n", m, o.perSec(s), perRec(s), what[m])
		fmt.Printf("      share/classic %.0f%% wall clock, %.0f%% CPU per record (medians of the runs' ratios); acquire+acknowledge overhead %v wall, %v CPU per record\n",
			100*ratio, 100*cpuRatio, perRec(s)-perRec(c), perRec(sc)-perRec(cc))
	}
	fmt.Printf("  produce→acknowledged at %d rec/s (producer linger %v, FlushAcks per poll): p50 %v, p99 %v\n", o.rate, o.linger,
		med(func(r result) time.Duration { return r.p50 }).Round(time.Microsecond), med(func(r result) time.Duration { return r.p99 }).Round(time.Microsecond))
	fmt.Printf("load average at end: %s", loadavg())
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?\n"
	}
	return string(b)
}

func oneRun(ctx context.Context, addr string, o options, i int) (result, error) {
	topic := fmt.Sprintf("sharebench-%d", i)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchMaxBytes(256<<10))
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		return result{}, err
	}
	// Random values are drawn once, as a pool of 64 MiB that records take
	// in turn: incompressible (no record repeats another within a batch,
	// or within a compressor's reach), without a random draw per byte.
	pool := make([]byte, o.size)
	if o.values == "random" {
		pool = make([]byte, 64<<20+o.size)
		_, _ = crand.Read(pool)
	}
	for k := range o.records {
		start := 0
		if o.values == "random" {
			start = (k * o.size) % (len(pool) - o.size)
		}
		cl.Produce(ctx, &kgo.Record{Value: pool[start : start+o.size]}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return result{}, err
	}
	r := result{share: map[ackMode]phase{}}
	stop := o.profile("classic", i)
	cpu0 := cpuTime()
	r.classic, err = consumeClassic(ctx, addr, o, topic, "classic-"+topic)
	r.classicCPU = cpuTime() - cpu0
	stop()
	if err != nil {
		return r, fmt.Errorf("classic: %w", err)
	}
	for _, m := range o.modes {
		group := fmt.Sprintf("share-%s-%s", m, topic)
		if err := earliest(ctx, cl, group); err != nil {
			return r, err
		}
		stop = o.profile(string(m), i)
		cpu0 = cpuTime()
		wall, err := consumeShare(ctx, addr, o, topic, group, o.records, m, nil)
		r.share[m] = phase{wall: wall, cpu: cpuTime() - cpu0}
		stop()
		if err != nil {
			return r, fmt.Errorf("share[%s]: %w", m, err)
		}
	}
	pl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(o.linger))
	if err != nil {
		return r, err
	}
	defer pl.Close()
	r.p50, r.p99, err = latency(ctx, pl, addr, o, topic+"-lat")
	return r, err
}

// profile starts a CPU profile of phase of run i if -profile-phase names
// it (classic, or a share mode), and returns what stops it.
func (o options) profile(phase string, i int) func() {
	if o.cpuprofile == "" || o.profilePhase != phase {
		return func() {}
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", o.cpuprofile, i+1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sharebench:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "sharebench:", err)
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// earliest sets share.auto.offset.reset=earliest on a share group, so its
// members read the records produced before they joined.
func earliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		return fmt.Errorf("set share.auto.offset.reset of %s: error %d", group, code)
	}
	return nil
}

// consumeClassic has o.consumers members of a classic group read the topic
// from the start and returns the time from the first record read to the
// last.
func consumeClassic(ctx context.Context, addr string, o options, topic, group string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var got atomic.Int64
	var clock span
	var wg sync.WaitGroup
	errs := make(chan error, o.consumers)
	for range o.consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		wg.Go(func() {
			for got.Load() < int64(o.records) {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					errs <- fmt.Errorf("%d of %d records read: %w", got.Load(), o.records, ctx.Err())
					return
				}
				if k := fs.NumRecords(); k > 0 {
					clock.mark()
					got.Add(int64(k))
				}
			}
			cancel()
		})
	}
	wg.Wait()
	elapsed := clock.elapsed()
	select {
	case err := <-errs:
		if got.Load() < int64(o.records) {
			return 0, err
		}
	default:
	}
	return elapsed, nil
}

// consumeShare has o.consumers share-group members read and accept n
// records, acknowledging as mode says, and returns the time from the first
// record received to the last acknowledgement answered. In mode ackFlush a
// member sends its acknowledgements (FlushAcks, a ShareAcknowledge) and
// waits for the answer after every poll, and onAcked, if set, is called
// with each record once its acknowledgement was answered; else the
// acknowledgements ride on the member's next ShareFetch (one round trip per
// batch) and each member flushes its last ones before the clock stops.
func consumeShare(ctx context.Context, addr string, o options, topic, group string, n int, mode ackMode, onAcked func(*kgo.Record, time.Time)) (time.Duration, error) {
	pollCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var acked atomic.Int64
	var clock span
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		firstErr = cmp(firstErr, err)
		mu.Unlock()
	}
	for range o.consumers {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100 * time.Millisecond)}
		if o.maxRecords > 0 {
			opts = append(opts, kgo.ShareMaxRecords(int32(o.maxRecords)))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		wg.Go(func() {
			var rs []*kgo.Record
			for acked.Load() < int64(n) {
				fs := cl.PollFetches(pollCtx)
				if pollCtx.Err() != nil {
					break
				}
				k := fs.NumRecords()
				if k == 0 {
					continue
				}
				rs = rs[:0]
				if mode != ackImplicit {
					fs.EachRecord(func(r *kgo.Record) {
						r.Ack(kgo.AckAccept)
						if onAcked != nil {
							rs = append(rs, r)
						}
					})
				}
				clock.mark()
				if mode != ackFlush {
					acked.Add(int64(k))
					continue
				}
				if err := cl.FlushAcks(pollCtx); err != nil {
					continue // the records come back; the count waits for them
				}
				now := time.Now()
				clock.mark()
				for _, r := range rs {
					onAcked(r, now)
				}
				acked.Add(int64(k))
			}
			cancel()
			if mode != ackFlush {
				// The last poll's records: implicitly accepted only
				// at a next poll, so accepted here.
				cl.MarkAcks(kgo.AckAccept)
				fctx, fcancel := context.WithTimeout(ctx, o.timeout)
				defer fcancel()
				if err := cl.FlushAcks(fctx); err != nil {
					fail(fmt.Errorf("flush the last acknowledgements: %w", err))
				}
				clock.mark()
			}
		})
	}
	wg.Wait()
	elapsed := clock.elapsed()
	if acked.Load() < int64(n) {
		return 0, cmp(firstErr, fmt.Errorf("%d of %d records acknowledged: %w", acked.Load(), n, pollCtx.Err()))
	}
	return elapsed, firstErr
}

// span is the time from the first record a group's members got to the
// last one they finished: throughput without the time members take to
// join (a classic group's first rebalance waits for its members;
// group.initial.rebalance.delay.ms alone is 3 s).
type span struct {
	mu          sync.Mutex
	first, last time.Time
}

func (s *span) mark() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.first.IsZero() {
		s.first = now
	}
	s.last = now
}

func (s *span) elapsed() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last.Sub(s.first)
}

// cpuTime is the process's user and system CPU time so far. On a shared,
// loaded machine it is the steadier figure: wall-clock throughput there
// measures the scheduler as much as the broker.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cmp(have, next error) error {
	if have != nil {
		return have
	}
	return next
}

// latency produces o.rate records per second for o.latencyFor, each
// stamped with its send time, while o.consumers share-group members accept
// them, and returns the p50 and p99 from send to the answered
// acknowledgement.
func latency(ctx context.Context, cl *kgo.Client, addr string, o options, topic string) (time.Duration, time.Duration, error) {
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(o.partitions), 1, nil, topic); err != nil {
		return 0, 0, err
	}
	group := "share-" + topic
	if err := earliest(ctx, cl, group); err != nil {
		return 0, 0, err
	}
	n := int(float64(o.rate) * o.latencyFor.Seconds())
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	done := make(chan error, 1)
	go func() {
		_, err := consumeShare(ctx, addr, o, topic, group, n, ackFlush, func(r *kgo.Record, at time.Time) {
			if len(r.Headers) == 1 {
				sent := time.Unix(0, int64(binary.BigEndian.Uint64(r.Headers[0].Value)))
				mu.Lock()
				lat = append(lat, at.Sub(sent))
				mu.Unlock()
			}
		})
		done <- err
	}()
	value := make([]byte, o.size)
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	for range n {
		<-tick.C
		stamp := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value, Headers: []kgo.RecordHeader{{Key: "sent-ns", Value: stamp}}}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, err
	}
	if err := <-done; err != nil {
		return 0, 0, fmt.Errorf("latency: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) == 0 {
		return 0, 0, errors.New("latency: no samples")
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}
