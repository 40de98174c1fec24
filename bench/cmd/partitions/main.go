// Command partitions measures one `strand serve` process carrying many
// partitions (issue 19 §3): start-up time after a clean stop and after
// SIGKILL, RSS and open file descriptors (from /proc/<pid>), Metadata and
// ListOffsets latency, and produce throughput spread over every partition
// against the same load over 8. The broker runs as its own process, built
// from ../cmd/strand (or -strand PATH).
//
// For each partition count it creates topics of 1,000 partitions, writes a
// few records to every partition and -hot-bytes to a hot subset, then:
// measures idle RSS and fds, latency, and throughput; stops the broker
// with SIGTERM and times the restart; SIGKILLs it while a producer writes to
// the hot subset with acks=all, times that restart, and reads every
// acknowledged record back (every partition, from its first offset),
// failing the run if one is missing or different. "Started" means the
// Kafka port answers a ListOffsets for every partition with the end offsets
// it had before the stop, or, after SIGKILL, ends at or past every
// acknowledged offset.
//
//	cd bench && go run ./cmd/partitions -partitions 1000,10000 -runs 3
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "partitions:", err)
		os.Exit(1)
	}
}

type options struct {
	counts    []int
	runs      int
	perPart   int
	hot       int
	hotBytes  int64
	size      int
	spread    int
	buffered  int
	killAfter time.Duration
	bin, dir  string
	extra     []string
	latencyN  int
	keepGoing bool
}

func run() error {
	var o options
	var counts, hotBytes, extra, out string
	flag.StringVar(&counts, "partitions", "1000,10000", "partition counts to measure, comma-separated")
	flag.IntVar(&o.runs, "runs", 3, "runs per partition count; figures are medians")
	flag.IntVar(&o.perPart, "records-per-partition", 3, "records written to every partition before measuring")
	flag.IntVar(&o.hot, "hot", 100, "partitions in the hot subset")
	flag.StringVar(&hotBytes, "hot-bytes", "1GiB", "data written to the hot subset before the stops (B, KiB, MiB, GiB)")
	flag.IntVar(&o.size, "size", 1024, "value bytes of hot and throughput records")
	flag.IntVar(&o.spread, "throughput-records", 200000, "records of each throughput measurement (over all partitions, and over 8)")
	flag.IntVar(&o.buffered, "buffered-records", 100000, "records the client buffers: at most this over the partition count go in one partition's batch")
	flag.DurationVar(&o.killAfter, "kill-after", 2*time.Second, "how long the producer writes to the hot subset before SIGKILL")
	flag.IntVar(&o.latencyN, "latency-requests", 20, "Metadata and ListOffsets requests timed per run")
	flag.StringVar(&o.bin, "strand", "", "strand binary (default: built from ../cmd/strand)")
	flag.StringVar(&o.dir, "dir", "", "data directory root (default: a temporary directory, removed after)")
	flag.StringVar(&extra, "serve-flags", "", "extra flags for strand serve, space-separated (e.g. \"--max-open-files 4096\")")
	flag.StringVar(&out, "out", "", "also write the results as a markdown section to this file")
	flag.Parse()
	for _, c := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 8 {
			return fmt.Errorf("-partitions %q: want counts of at least 8", counts)
		}
		o.counts = append(o.counts, n)
	}
	o.extra = strings.Fields(extra)
	var err error
	if o.hotBytes, err = bench.ParseBytes(hotBytes); err != nil {
		return err
	}
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "strand-partitions"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dir)
	}
	if o.bin == "" {
		o.bin = filepath.Join(o.dir, "strand")
		fmt.Println("building strand…")
		build := exec.Command("go", "build", "-o", o.bin, "./cmd/strand")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ../cmd/strand: %v\n%s", err, out)
		}
	}
	startedAt, loadStart := time.Now(), bench.LoadAvg()
	host, _ := os.Hostname()
	fmt.Printf("partitions: %s, %d cores, %s; hot subset %d partitions, %s on disk before the stops\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), numCPU(), host, o.hot, hotBytes)
	var table []result
	var every [][]result
	for _, n := range o.counts {
		var runs []result
		for r := range o.runs {
			res, err := measure(o, n, r)
			if err != nil {
				return fmt.Errorf("%d partitions, run %d: %w", n, r+1, err)
			}
			fmt.Printf("  run %d: %s\n", r+1, res)
			runs = append(runs, res)
		}
		m := medianOf(runs)
		fmt.Printf("%d partitions, median of %d: %s\n", n, len(runs), m)
		table = append(table, m)
		every = append(every, runs)
	}
	fmt.Println()
	fmt.Print(markdownTable(table))
	if out == "" {
		return nil
	}
	cmdline := "cd bench && go run ./cmd/partitions " + strings.Join(os.Args[1:], " ")
	md := markdownReport(o, hotBytes, cmdline, startedAt, loadStart, bench.LoadAvg(), table, every)
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", out)
	return nil
}

func markdownTable(table []result) string {
	var b strings.Builder
	b.WriteString("| partitions | start, clean stop | start, SIGKILL | lost after SIGKILL | idle RSS | fds idle / max | Metadata all / one topic | ListOffsets all / one | produce over all vs 8 | broker / client CPU-s per GB, all vs 8 |\n")
	b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, m := range table {
		fmt.Fprintf(&b, "| %d | %s | %s | %d of %d | %d MiB | %d / %d | %s / %s | %s / %s | %.0f vs %.0f MB/s (%.0f%%) | %.1f / %.1f vs %.1f / %.1f |\n",
			m.n, ms(m.cleanStart), ms(m.killStart), m.lost, m.acked, m.idleRSS>>20, m.idleFDs, m.maxFDs,
			ms(m.metaAll), ms(m.metaOne), ms(m.loAll), ms(m.loOne), m.spreadMBs, m.eightMBs, 100*m.spreadMBs/m.eightMBs,
			m.spreadBrokerCPU, m.spreadClientCPU, m.eightBrokerCPU, m.eightClientCPU)
	}
	return b.String()
}

// markdownReport is the section docs/BENCHMARKS.md carries: how the figures
// were taken, the medians, every run, and issue 19's targets at 10,000
// partitions against them.
func markdownReport(o options, hotBytes, cmdline string, when time.Time, loadStart, loadEnd string, table []result, every [][]result) string {
	var b strings.Builder
	b.WriteString("## Partitions at scale: figures\n\n")
	fmt.Fprintf(&b, "Generated by `bench/cmd/partitions` (issue 19 §3): one `strand serve` process with topics of 1,000 partitions, "+
		"%d records written to every partition and %s to a hot subset of %d, then idle RSS and descriptors (from `/proc/<pid>`), "+
		"Metadata and ListOffsets latency (medians of %d requests: every topic or partition, and one), produce throughput "+
		"(%d records of %d B, acks=1) spread over every partition against the same load over 8, start-up after SIGTERM and after "+
		"SIGKILL under an acks=all producer, and a read-back of every acknowledged record.\n\n",
		o.perPart, hotBytes, o.hot, o.latencyN, o.spread, o.size)
	fmt.Fprintf(&b, "- Date: %s\n- Machine: %s, `ulimit -n` %d\n", when.UTC().Format("2006-01-02 15:04 MST"), bench.Machine(), nofile())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) at start: %s; at end: %s\n", loadStart, loadEnd)
	fmt.Fprintf(&b, "- Command: `%s`\n\n", cmdline)
	fmt.Fprintf(&b, "Medians of %d run(s) per partition count; \"lost\" sums every run.\n\n", o.runs)
	b.WriteString(markdownTable(table))
	b.WriteString("\n<details><summary>Every run</summary>\n\n")
	for i, runs := range every {
		for r, res := range runs {
			fmt.Fprintf(&b, "- %d partitions, run %d: %s\n", o.counts[i], r+1, res)
		}
	}
	b.WriteString("\n</details>\n\n")
	for _, m := range table {
		if m.n != 10000 {
			continue
		}
		met := func(ok bool) string {
			if ok {
				return "met"
			}
			return "**missed**"
		}
		b.WriteString("Issue 19's targets at 10,000 partitions:\n\n| target | figure | |\n| --- | ---: | --- |\n")
		fmt.Fprintf(&b, "| start ≤ 5 s after a clean stop | %s | %s |\n", ms(m.cleanStart), met(m.cleanStart <= 5*time.Second))
		fmt.Fprintf(&b, "| start ≤ 15 s after kill -9 | %s | %s |\n", ms(m.killStart), met(m.killStart <= 15*time.Second))
		fmt.Fprintf(&b, "| RSS ≤ 1 GiB idle | %d MiB | %s |\n", m.idleRSS>>20, met(m.idleRSS <= 1<<30))
		fmt.Fprintf(&b, "| nothing lost after kill -9 | %d of %d | %s |\n", m.lost, m.acked, met(m.lost == 0))
		fmt.Fprintf(&b, "| produce over 10,000 ≥ 50%% of over 8 | %.0f vs %.0f MB/s, %.0f%% | %s |\n",
			m.spreadMBs, m.eightMBs, 100*m.spreadMBs/m.eightMBs, met(m.spreadMBs >= m.eightMBs/2))
		b.WriteString("\n")
	}
	return b.String()
}

// nofile is this process's descriptor limit, which the broker inherits
// (its default --log-max-open-files is half of it).
func nofile() uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	return r.Cur
}

type result struct {
	n                     int
	cleanStart, killStart time.Duration
	acked, lost           int
	idleRSS               int64
	idleFDs, maxFDs       int
	metaAll, metaOne      time.Duration
	loAll, loOne          time.Duration
	spreadMBs, eightMBs   float64
	// CPU-seconds per GB produced, of the broker and of this process (the
	// client), in the faster of the two runs of each.
	spreadBrokerCPU, spreadClientCPU float64
	eightBrokerCPU, eightClientCPU   float64
	onDisk                           int64
}

func (r result) String() string {
	return fmt.Sprintf("start %s clean / %s SIGKILL (%d acked, %d lost), idle RSS %d MiB, fds %d idle / %d max, Metadata %s/%s, ListOffsets %s/%s, produce %.0f vs %.0f MB/s over 8 (%.0f%%; broker %.1f vs %.1f CPU-s/GB, client %.1f vs %.1f), %d MiB on disk",
		ms(r.cleanStart), ms(r.killStart), r.acked, r.lost, r.idleRSS>>20, r.idleFDs, r.maxFDs,
		ms(r.metaAll), ms(r.metaOne), ms(r.loAll), ms(r.loOne), r.spreadMBs, r.eightMBs, 100*r.spreadMBs/r.eightMBs,
		r.spreadBrokerCPU, r.eightBrokerCPU, r.spreadClientCPU, r.eightClientCPU, r.onDisk>>20)
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return d.Round(time.Millisecond).String()
}

// server is one `strand serve` process and a sampler of its descriptors.
type server struct {
	o      options
	dir    string
	addr   string
	cmd    *exec.Cmd
	maxFDs atomic.Int64
	stop   chan struct{}
	done   chan struct{}
}

func (s *server) start() (time.Time, error) {
	args := append([]string{"serve", "--listen", s.addr, "--data-dir", s.dir, "--metrics-listen", "",
		"--console-listen", "", "--schema-registry-listen", "", "--auto-create-topics=false"}, s.o.extra...)
	s.cmd = exec.Command(s.o.bin, args...)
	log, err := os.OpenFile(s.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return time.Time{}, err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	began := time.Now()
	if err := s.cmd.Start(); err != nil {
		return began, err
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func(pid int) { // sample the descriptor count while the process lives
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if n, err := fdCount(pid); err == nil && int64(n) > s.maxFDs.Load() {
				s.maxFDs.Store(int64(n))
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}(s.cmd.Process.Pid)
	return began, nil
}

func (s *server) signal(sig syscall.Signal) error {
	_ = s.cmd.Process.Signal(sig)
	err := s.cmd.Wait()
	close(s.stop)
	<-s.done
	if sig == syscall.SIGTERM && err != nil {
		return fmt.Errorf("strand serve exited after SIGTERM: %v (log: %s.log)", err, s.dir)
	}
	return nil
}

// cpuSeconds is a process's user and system CPU time (/proc/<pid>/stat).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100
}

func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func fdCount(pid int) (int, error) {
	es, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(es), err
}

func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}

const perTopic = 1000

func topicsFor(n int) map[string]int32 {
	ts := map[string]int32{}
	for i := 0; i < n; i += perTopic {
		ts[fmt.Sprintf("scale-%03d", i/perTopic)] = int32(min(perTopic, n-i))
	}
	return ts
}

// tp names partition i of the n spread over topicsFor(n).
func tp(i int) (string, int32) {
	return fmt.Sprintf("scale-%03d", i/perTopic), int32(i % perTopic)
}

func measure(o options, n, runNo int) (res result, err error) {
	res.n = n
	t0 := time.Now()
	step := func(what string) { fmt.Printf("    %5.1fs %s\n", time.Since(t0).Seconds(), what) }
	addr, err := bench.FreeAddr()
	if err != nil {
		return res, err
	}
	s := &server{o: o, dir: filepath.Join(o.dir, fmt.Sprintf("p%d-r%d", n, runNo)), addr: addr}
	defer os.RemoveAll(s.dir)
	if _, err := s.start(); err != nil {
		return res, err
	}
	defer func() {
		if s.cmd.ProcessState == nil {
			_ = s.signal(syscall.SIGKILL)
		}
	}()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(o.buffered))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := waitFor(30*time.Second, "the broker", func() bool {
		_, err := adm.ListBrokers(ctx)
		return err == nil
	}); err != nil {
		return res, err
	}
	for name, parts := range topicsFor(n) {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, name); err != nil {
			return res, fmt.Errorf("create %s: %w", name, err)
		}
	}
	if _, err := adm.CreateTopic(ctx, 8, 1, nil, "eight"); err != nil {
		return res, fmt.Errorf("create eight: %w", err)
	}
	values := make([][]byte, 64)
	for i := range values {
		values[i] = make([]byte, o.size)
		_, _ = rand.Read(values[i])
	}
	// A few records in every partition, then the hot data.
	var recs []*kgo.Record
	for i := range n {
		t, p := tp(i)
		for j := range o.perPart {
			recs = append(recs, &kgo.Record{Topic: t, Partition: p, Value: []byte(fmt.Sprintf("p%d-r%d", i, j))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return res, fmt.Errorf("produce to every partition: %w", err)
	}
	hot := min(o.hot, n)
	step("hot data")
	if err := produceN(ctx, cl, int(o.hotBytes/int64(o.size)), func(i int) (string, int32) { return tp(i % hot) }, values); err != nil {
		return res, fmt.Errorf("hot data: %w", err)
	}
	step("throughput")
	// Throughput: the same load over all n partitions and over 8, twice
	// each, alternated; the better of each pair.
	pid := s.cmd.Process.Pid
	gb := float64(o.spread*o.size) / 1e9
	for range 2 {
		for _, w := range []struct {
			where    func(int) (string, int32)
			mbs      *float64
			brokerGB *float64
			clientGB *float64
		}{
			{func(i int) (string, int32) { return "eight", int32(i % 8) }, &res.eightMBs, &res.eightBrokerCPU, &res.eightClientCPU},
			{func(i int) (string, int32) { return tp(i % n) }, &res.spreadMBs, &res.spreadBrokerCPU, &res.spreadClientCPU},
		} {
			b0, c0 := cpuSeconds(pid), selfCPUSeconds()
			start := time.Now()
			if err := produceN(ctx, cl, o.spread, w.where, values); err != nil {
				return res, err
			}
			if mbs := gb * 1e3 / time.Since(start).Seconds(); mbs > *w.mbs {
				*w.mbs = mbs
				*w.brokerGB, *w.clientGB = (cpuSeconds(pid)-b0)/gb, (selfCPUSeconds()-c0)/gb
			}
		}
	}
	step("latency")
	if res.metaAll, res.metaOne, res.loAll, res.loOne, err = latencies(ctx, cl, n, o.latencyN); err != nil {
		return res, err
	}
	// Idle: let the flusher and the Go runtime settle.
	time.Sleep(3 * time.Second)
	if res.idleRSS, err = rss(pid); err != nil {
		return res, err
	}
	if res.idleFDs, err = fdCount(pid); err != nil {
		return res, err
	}
	ends, err := endOffsets(ctx, cl, n)
	if err != nil {
		return res, err
	}
	cl.Close()
	if err := s.signal(syscall.SIGTERM); err != nil {
		return res, err
	}
	res.onDisk = du(s.dir)

	// Start after a clean stop.
	step("restart after SIGTERM")
	began, err := s.start()
	if err != nil {
		return res, err
	}
	if cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(20000)); err != nil {
		return res, err
	}
	defer cl.Close()
	if err := waitListening(addr); err != nil {
		return res, err
	}
	if err := waitFor(5*time.Minute, "the restart after a clean stop", func() bool {
		got, err := endOffsets(ctx, cl, n)
		return err == nil && equalAtLeast(got, ends)
	}); err != nil {
		return res, err
	}
	res.cleanStart = time.Since(began)

	// SIGKILL while a producer writes to the hot subset.
	step("SIGKILL under load")
	acked, err := produceUntilKill(ctx, addr, s, hot, values, o.killAfter)
	if err != nil {
		return res, err
	}
	res.acked = len(acked)
	for _, a := range acked {
		if a.offset+1 > ends[a.idx] {
			ends[a.idx] = a.offset + 1
		}
	}
	began, err = s.start()
	if err != nil {
		return res, err
	}
	if err := waitListening(addr); err != nil {
		return res, err
	}
	if err := waitFor(5*time.Minute, "the restart after SIGKILL", func() bool {
		got, err := endOffsets(ctx, cl, n)
		return err == nil && equalAtLeast(got, ends)
	}); err != nil {
		return res, err
	}
	res.killStart = time.Since(began)
	step("read-back")
	if res.lost, err = verify(ctx, addr, n, o.perPart, acked); err != nil {
		return res, err
	}
	res.maxFDs = int(s.maxFDs.Load())
	return res, s.signal(syscall.SIGTERM)
}

func equalAtLeast(got, want []int64) bool {
	for i := range want {
		if got[i] < want[i] {
			return false
		}
	}
	return true
}

// produceN produces count records, record i to where(i), and waits for
// every acknowledgement.
func produceN(ctx context.Context, cl *kgo.Client, count int, where func(int) (string, int32), values [][]byte) error {
	var first atomic.Value
	var wg sync.WaitGroup
	for i := range count {
		t, p := where(i)
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: t, Partition: p, Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				first.CompareAndSwap(nil, err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

type ackedRecord struct {
	idx    int
	offset int64
	value  []byte
}

// produceUntilKill produces to the hot subset with acks=all, SIGKILLs the
// broker after killAfter, and returns every record that was acknowledged.
// Each value begins with a unique sequence number.
func produceUntilKill(ctx context.Context, addr string, s *server, hot int, values [][]byte, killAfter time.Duration) ([]ackedRecord, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(20000))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var acked []ackedRecord
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	killAt := time.Now().Add(killAfter)
	for i := 0; time.Now().Before(killAt); i++ {
		t, p := tp(i % hot)
		v := slices.Clone(values[i%len(values)])
		binary.BigEndian.PutUint64(v, uint64(i))
		idx := i % hot
		wg.Add(1)
		cl.Produce(pctx, &kgo.Record{Topic: t, Partition: p, Value: v}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err == nil {
				mu.Lock()
				acked = append(acked, ackedRecord{idx: idx, offset: r.Offset, value: v})
				mu.Unlock()
			}
		})
	}
	if err := s.signal(syscall.SIGKILL); err != nil {
		return nil, err
	}
	cancel() // fail what is still buffered or in flight: never acknowledged
	cl.Close()
	wg.Wait()
	if len(acked) == 0 {
		return nil, errors.New("no record was acknowledged before the SIGKILL")
	}
	return acked, nil
}

// verify reads every partition from its start and counts the acknowledged
// records that are not there, byte for byte, at their offsets; it also
// checks that the few records of every partition are there.
func verify(ctx context.Context, addr string, n, perPart int, acked []ackedRecord) (int, error) {
	want := map[[2]int64][]byte{}
	ends := make([]int64, n)
	for _, a := range acked {
		want[[2]int64{int64(a.idx), a.offset}] = a.value
		ends[a.idx] = max(ends[a.idx], a.offset+1)
	}
	for i := range n {
		ends[i] = max(ends[i], int64(perPart))
	}
	offsets := map[string]map[int32]kgo.Offset{}
	for i := range n {
		t, p := tp(i)
		if offsets[t] == nil {
			offsets[t] = map[int32]kgo.Offset{}
		}
		offsets[t][p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(offsets), kgo.FetchMaxBytes(64<<20))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	seen := make([]int64, n) // next offset expected per partition
	found, few := 0, 0
	deadline := time.Now().Add(10 * time.Minute)
	for remaining := n; remaining > 0; {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("read-back timed out with %d partitions short", remaining)
		}
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(fctx)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return 0, fmt.Errorf("read-back: %s/%d: %w", e.Topic, e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			topicNo, _ := strconv.Atoi(strings.TrimPrefix(r.Topic, "scale-"))
			idx := topicNo*perTopic + int(r.Partition)
			if r.Offset < int64(perPart) && string(r.Value) == fmt.Sprintf("p%d-r%d", idx, r.Offset) {
				few++
			}
			if v, ok := want[[2]int64{int64(idx), r.Offset}]; ok && string(v) == string(r.Value) {
				found++
			}
			if r.Offset >= seen[idx] {
				before := seen[idx] >= ends[idx]
				seen[idx] = r.Offset + 1
				if !before && seen[idx] >= ends[idx] {
					remaining--
				}
			}
		})
	}
	if few != n*perPart {
		return 0, fmt.Errorf("read back %d of the %d records written to every partition", few, n*perPart)
	}
	return len(acked) - found, nil
}

func endOffsets(ctx context.Context, cl *kgo.Client, n int) ([]int64, error) {
	req := listOffsetsAll(n)
	resp, err := req.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		return nil, err
	}
	ends := make([]int64, n)
	got := 0
	for _, t := range resp.Topics {
		topicNo, _ := strconv.Atoi(strings.TrimPrefix(t.Topic, "scale-"))
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return nil, fmt.Errorf("ListOffsets %s/%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
			ends[topicNo*perTopic+int(p.Partition)] = p.Offset
			got++
		}
	}
	if got != n {
		return nil, fmt.Errorf("ListOffsets answered %d of %d partitions", got, n)
	}
	return ends, nil
}

func listOffsetsAll(n int) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for name, parts := range topicsFor(n) {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = name
		for p := range parts {
			pr := kmsg.NewListOffsetsRequestTopicPartition()
			pr.Partition = p
			pr.Timestamp = -1
			pr.CurrentLeaderEpoch = -1
			t.Partitions = append(t.Partitions, pr)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}

// latencies times Metadata for every topic and for one, and ListOffsets
// for every partition and for one; medians of count requests each.
func latencies(ctx context.Context, cl *kgo.Client, n, count int) (metaAll, metaOne, loAll, loOne time.Duration, err error) {
	b := cl.Broker(0)
	time1 := func(req kmsg.Request) (time.Duration, error) {
		var ds []time.Duration
		for range count {
			start := time.Now()
			if _, err := b.Request(ctx, req); err != nil {
				return 0, err
			}
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2], nil
	}
	all := kmsg.NewPtrMetadataRequest()
	all.Topics = nil
	one := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr("scale-000")
	one.Topics = append(one.Topics, t)
	loOneReq := listOffsetsAll(1)
	for _, step := range []struct {
		req kmsg.Request
		d   *time.Duration
	}{{all, &metaAll}, {one, &metaOne}, {listOffsetsAll(n), &loAll}, {loOneReq, &loOne}} {
		if *step.d, err = time1(step.req); err != nil {
			return
		}
	}
	return
}

func medianOf(runs []result) result {
	m := runs[0]
	pick := func(get func(result) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = get(r)
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	d := func(get func(result) time.Duration) time.Duration {
		return time.Duration(pick(func(r result) float64 { return float64(get(r)) }))
	}
	m.cleanStart = d(func(r result) time.Duration { return r.cleanStart })
	m.killStart = d(func(r result) time.Duration { return r.killStart })
	m.metaAll = d(func(r result) time.Duration { return r.metaAll })
	m.metaOne = d(func(r result) time.Duration { return r.metaOne })
	m.loAll = d(func(r result) time.Duration { return r.loAll })
	m.loOne = d(func(r result) time.Duration { return r.loOne })
	m.idleRSS = int64(pick(func(r result) float64 { return float64(r.idleRSS) }))
	m.idleFDs = int(pick(func(r result) float64 { return float64(r.idleFDs) }))
	m.spreadMBs = pick(func(r result) float64 { return r.spreadMBs })
	m.eightMBs = pick(func(r result) float64 { return r.eightMBs })
	m.spreadBrokerCPU = pick(func(r result) float64 { return r.spreadBrokerCPU })
	m.spreadClientCPU = pick(func(r result) float64 { return r.spreadClientCPU })
	m.eightBrokerCPU = pick(func(r result) float64 { return r.eightBrokerCPU })
	m.eightClientCPU = pick(func(r result) float64 { return r.eightClientCPU })
	m.onDisk = int64(pick(func(r result) float64 { return float64(r.onDisk) }))
	m.acked, m.lost, m.maxFDs = 0, 0, 0
	for _, r := range runs { // totals and worst, not medians
		m.acked += r.acked
		m.lost += r.lost
		m.maxFDs = max(m.maxFDs, r.maxFDs)
	}
	return m
}

func du(dir string) int64 {
	var total int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			total += fi.Size()
		}
		return nil
	})
	return total
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// waitListening polls the Kafka port every few milliseconds: a client
// left to reconnect by itself backs off for up to seconds and would be
// timed instead of the broker.
func waitListening(addr string) error {
	return waitFor(5*time.Minute, "the Kafka port", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func waitFor(within time.Duration, what string, ok func() bool) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if ok() {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("timed out waiting for " + what)
}
