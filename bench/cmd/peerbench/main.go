// Command peerbench compares Strand with franz-go's kfake (same franz-go
// client settings) and NATS JetStream (nats.go, async publish), all with
// their data on disk and none fsyncing: bulk produce of 1 KB and 100 B
// records (acks=all), bulk consume, single-record produce round trips,
// end-to-end latency at a fixed rate, and produce at 1, 8 and 64
// partitions. See bench/README.md.
//
// Run it from the bench module:
//
//	cd bench && go run ./cmd/peerbench -out ../docs/BENCHMARKS.md -chart ../docs/benchmarks.png
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(1)
	}
}

func run() error {
	d := bench.DefaultOptions()
	var (
		o          bench.Options
		peers      string
		out        string
		cpuprofile string
		tracefile  string
		memprofile string
		chart      string
		scale      string
		quiet      bool
	)
	flag.IntVar(&o.Records, "records", d.Records, "records to produce and consume per run")
	flag.IntVar(&o.Size, "size", d.Size, "value size in bytes")
	flag.IntVar(&o.Partitions, "partitions", d.Partitions, "partitions of the main topics")
	flag.IntVar(&o.SmallRecords, "small-records", d.SmallRecords, "records of the small-record produce workload")
	flag.IntVar(&o.SmallSize, "small-size", d.SmallSize, "value size of the small-record produce workload")
	flag.IntVar(&o.ScaleRecords, "scale-records", d.ScaleRecords, "records per partition-scaling produce")
	flag.StringVar(&scale, "scale-partitions", joinInts(d.ScalePartitions), "partition counts of the scaling workload")
	flag.IntVar(&o.E2ERate, "e2e-rate", d.E2ERate, "records/s of the end-to-end latency workload")
	flag.DurationVar(&o.E2EDuration, "e2e-duration", d.E2EDuration, "how long the end-to-end workload sends")
	flag.IntVar(&o.Runs, "runs", d.Runs, "runs per peer (fresh broker each); figures are medians")
	flag.StringVar(&peers, "peers", strings.Join(d.Peers, ","), "comma-separated peers: strand, strand-rf3 (three nodes, replication factor 3, min.insync.replicas 2), strand-rf3-tls (the same with mutual TLS between nodes), kfake, jetstream, null")
	flag.IntVar(&o.LatencyRecords, "latency-records", d.LatencyRecords, "sequential single-record produces in workload C")
	flag.IntVar(&o.Warmup, "warmup", d.Warmup, "untimed records produced and consumed before workload A")
	flag.IntVar(&o.Window, "window", d.Window, "most produced records not yet acknowledged")
	flag.DurationVar(&o.Linger, "linger", d.Linger, "kgo.ProducerLinger for every peer (kgo's default is 10ms)")
	flag.IntVar(&o.BatchBytes, "batch-bytes", d.BatchBytes, "kgo.ProducerBatchMaxBytes for every peer (kgo's default is 1000012)")
	flag.DurationVar(&o.Timeout, "timeout", d.Timeout, "bound on each workload")
	flag.StringVar(&o.Dir, "dir", "", "parent directory for data directories (default: the OS temp dir)")
	flag.BoolVar(&o.NoSync, "nosync", false, "skip the sync(2) (untimed) before each timed workload that flushes earlier workloads' dirty pages")
	flag.StringVar(&out, "out", "", "also write the results as markdown to this file")
	flag.StringVar(&chart, "chart", "", "also draw the medians as a PNG chart to this file")
	flag.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (broker and client share the process)")
	flag.StringVar(&tracefile, "trace", "", "write an execution trace of the whole run (go tool trace): where goroutines wait")
	flag.StringVar(&memprofile, "memprofile", "", "write an allocation profile at the end")
	flag.BoolVar(&quiet, "q", false, "no per-run progress on stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	o.Peers = nil
	for _, p := range strings.Split(peers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !slices.Contains(bench.AllPeers, p) {
				return fmt.Errorf("-peers: unknown peer %q (want %s)", p, strings.Join(bench.AllPeers, ", "))
			}
			o.Peers = append(o.Peers, p)
		}
	}
	if len(o.Peers) == 0 {
		return fmt.Errorf("-peers is empty")
	}
	o.ScalePartitions = nil
	for _, f := range strings.Split(scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("-scale-partitions: want positive integers, got %q", scale)
		}
		o.ScalePartitions = append(o.ScalePartitions, n)
	}
	if !quiet {
		o.Logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	if tracefile != "" {
		f, err := os.Create(tracefile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	rep, err := bench.Run(ctx, o)
	if err != nil && rep == nil {
		return err
	}
	fmt.Print(rep.Table())
	fmt.Printf("\ntotal %v\n", time.Since(start).Round(time.Second))

	if chart != "" {
		if cerr := rep.WriteChart(chart); cerr != nil {
			return cerr
		}
		fmt.Printf("wrote %s\n", chart)
	}
	if out != "" {
		cmd := "cd bench && go run ./cmd/peerbench"
		if len(os.Args) > 1 {
			cmd += " " + strings.Join(os.Args[1:], " ")
		}
		rel := ""
		if chart != "" {
			if r, rerr := filepath.Rel(filepath.Dir(out), chart); rerr == nil {
				rel = filepath.ToSlash(r)
			}
		}
		md := rep.Markdown(cmd, start, rel)
		// A hand-written analysis in the existing file survives the
		// regeneration (see bench.KeptSection).
		if old, rerr := os.ReadFile(out); rerr == nil {
			md += bench.KeptSection(string(old))
		}
		if werr := os.WriteFile(out, []byte(md), 0o644); werr != nil {
			return werr
		}
		fmt.Printf("wrote %s\n", out)
	}
	if memprofile != "" {
		f, ferr := os.Create(memprofile)
		if ferr != nil {
			return ferr
		}
		defer f.Close()
		if ferr := pprof.Lookup("allocs").WriteTo(f, 0); ferr != nil {
			return ferr
		}
	}
	if err != nil {
		return err
	}
	return rep.Err()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
