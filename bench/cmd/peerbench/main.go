// Command peerbench compares Strand with franz-go's kfake, both with their
// data on disk and neither fsyncing, under the same franz-go client settings:
//
//	A  bulk produce:   -records values of -size random bytes, acks=all,
//	                   no compression, async with a bounded window
//	B  bulk consume:   every record of A from the start, direct consumer
//	C  produce latency: sequential ProduceSync of one record, p50/p99
//
// Run it from the bench module: cd bench && go run ./cmd/peerbench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
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
		memprofile string
		quiet      bool
	)
	flag.IntVar(&o.Records, "records", d.Records, "records to produce and consume per run")
	flag.IntVar(&o.Size, "size", d.Size, "value size in bytes")
	flag.IntVar(&o.Partitions, "partitions", d.Partitions, "partitions of the benchmark topic")
	flag.IntVar(&o.Runs, "runs", d.Runs, "runs per peer (fresh broker each); figures are medians")
	flag.StringVar(&peers, "peers", strings.Join(d.Peers, ","), "comma-separated peers: strand, kfake")
	flag.IntVar(&o.LatencyRecords, "latency-records", d.LatencyRecords, "sequential single-record produces in workload C")
	flag.IntVar(&o.Warmup, "warmup", d.Warmup, "untimed records produced and consumed before workload A")
	flag.IntVar(&o.Window, "window", d.Window, "most produced records not yet acknowledged")
	flag.DurationVar(&o.Linger, "linger", d.Linger, "kgo.ProducerLinger for every peer (kgo's default is 10ms)")
	flag.DurationVar(&o.Timeout, "timeout", d.Timeout, "bound on each workload")
	flag.StringVar(&o.Dir, "dir", "", "parent directory for data directories (default: the OS temp dir)")
	flag.StringVar(&out, "out", "", "also write the results as markdown to this file")
	flag.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (broker and client share the process)")
	flag.StringVar(&memprofile, "memprofile", "", "write an allocation profile at the end")
	flag.BoolVar(&quiet, "q", false, "no per-run progress on stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	o.Peers = nil
	for _, p := range strings.Split(peers, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if p != "strand" && p != "kfake" {
				return fmt.Errorf("-peers: unknown peer %q (want strand, kfake)", p)
			}
			o.Peers = append(o.Peers, p)
		}
	}
	if len(o.Peers) == 0 {
		return fmt.Errorf("-peers is empty")
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	rep, err := bench.Run(ctx, o)
	if err != nil && rep == nil {
		return err
	}
	fmt.Print(rep.Table())
	fmt.Printf("\ntotal %v\n", time.Since(start).Round(time.Second))

	if out != "" {
		cmd := "cd bench && go run ./cmd/peerbench"
		if len(os.Args) > 1 {
			cmd += " " + strings.Join(os.Args[1:], " ")
		}
		if werr := os.WriteFile(out, []byte(rep.Markdown(cmd, start)), 0o644); werr != nil {
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
