// Command servercost measures brokers, not clients (issue 19 §1): Strand
// (`strand serve`), kfake with a data directory and the null broker each
// run as their own process while a low-cost load generator sends
// pre-encoded acks=all Produce requests over 1, 4 and 8 connections. Each
// run prints throughput, the broker process's CPU-seconds per GB (from
// /proc/<pid>/stat), its RSS and the load generator's own CPU per GB;
// the summary gives the medians and Strand's ratios to each peer.
//
//	cd bench && go run ./cmd/servercost -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof" // -pprof-listen
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/bench"
)

func main() {
	var o bench.CostOptions
	var peers, conns, servePeer, serveListen, serveDir, out string
	var suite bool
	var touchGiB int
	flag.StringVar(&peers, "peers", "strand,kfake,null", "peers, comma-separated: strand, strand-b (see -strand-b-configs), strand-rf3 (three nodes in one process, every partition led by node 1, acks=all waiting for its followers), kfake, null, jetstream (consume: strand and kfake only)")
	flag.StringVar(&o.Workload, "workload", "produce", "produce, or consume (plain fetches of what a produce phase of -warmup wrote)")
	flag.StringVar(&conns, "conns", "1,4,8", "connection counts, comma-separated")
	flag.IntVar(&o.InFlight, "inflight", 4, "requests in flight per connection")
	flag.DurationVar(&o.Duration, "duration", 8*time.Second, "measured time per run")
	flag.DurationVar(&o.Warmup, "warmup", 2*time.Second, "unmeasured time before each run")
	flag.IntVar(&o.Runs, "runs", 3, "runs of each peer and connection count, alternated")
	flag.IntVar(&o.Partitions, "partitions", 8, "partitions of the topic")
	flag.IntVar(&o.RecordBytes, "record-bytes", 1024, "bytes per record")
	flag.BoolVar(&o.LeaderAcks, "leader-acks", false, "produce with acks=1 instead of acks=all (on strand-rf3 the followers still copy every byte; the latency against acks=all's is the wait for them)")
	flag.IntVar(&o.RecordsPerBatch, "records-per-batch", 256, "records per batch (one batch per partition in a request)")
	flag.IntVar(&o.PartitionsPerRequest, "partitions-per-request", 1, "partitions each produce request carries a batch for (consecutive ones; must divide -partitions)")
	flag.StringVar(&o.StrandBin, "strand", "", "the strand binary (default: built from ../cmd/strand)")
	flag.Func("strand-flags", "extra flags for strand serve, space-separated (e.g. \"--pprof-listen 127.0.0.1:6060\" to take a profile or trace during a run)", func(v string) error {
		o.StrandFlags = strings.Fields(v)
		return nil
	})
	flag.Func("strand-b-flags", "extra flags for peer strand-b's strand serve, after -strand-flags, space-separated (e.g. \"--log-writers -1\")", func(v string) error {
		o.StrandBFlags = strings.Fields(v)
		return nil
	})
	flag.Func("strand-b-configs", "topic configs of peer strand-b (the same binary as strand), comma-separated k=v, e.g. strand.page.cache.window.bytes=-1", func(v string) error {
		o.StrandBConfigs = map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("not k=v: %q", kv)
			}
			o.StrandBConfigs[k] = val
		}
		return nil
	})
	flag.StringVar(&o.Dir, "dir", "", "where peers keep their data (default: the system's temporary directory)")
	flag.BoolVar(&suite, "suite", false, "run the suite's tables (issue 19, issue 40): produce at 1/4/8/16 connections against kfake, the null broker and Strand at RF 3 (strand-rf3), with and without memory pre-touch (-touch-memory); consume, i.e. fan-out, at 1/4/16; produce with an fsync per acknowledgement at 1/4/8/16/64 connections of one 1 KB record in flight each; Strand's produce over 8 partitions against the same requests spread over 10,000 partitions at 1/4/8; and issue 40's targets computed from their medians) and write them with -out")
	flag.StringVar(&out, "out", "", "with -suite: the Markdown report to write")
	flag.StringVar(&servePeer, bench.ServeFlag, "", "internal: run this peer (kfake, null) and nothing else")
	flag.StringVar(&serveListen, "serve-listen", "", "internal: its address")
	flag.StringVar(&serveDir, "serve-dir", "", "internal: its data directory")
	var serveFsync bool
	flag.BoolVar(&serveFsync, "serve-fsync", false, "internal: sync every batch")
	flag.IntVar(&touchGiB, "touch-memory", -1, fmt.Sprintf("GiB of memory to write once and release before the runs, so that no peer pays a virtual machine's first-touch faults in its page-cache writes (see \"First touch\" in docs/BENCHMARKS.md); with -suite the produce table runs before the touch and again after it, so the report shows both memory states; 0: no touch, one produce table (default: %d with -suite, 0 otherwise)", bench.SuiteTouchGiB))
	flag.BoolVar(&o.Fsync, "fsync", false, "every acknowledgement waits for an fsync (Strand flush.messages=1, kfake SyncWrites; null broker: none)")
	var pprofListen string
	flag.StringVar(&pprofListen, "pprof-listen", "", "serve net/http/pprof on this address from the peer process servercost starts for strand-rf3 (its three nodes), to profile or trace it during a run")
	flag.Parse()
	if pprofListen != "" {
		os.Setenv(pprofEnv, pprofListen) // for the peer process, which inherits it
	}
	if servePeer != "" {
		if addr := os.Getenv(pprofEnv); addr != "" {
			go func() { fmt.Fprintln(os.Stderr, "servercost: pprof:", http.ListenAndServe(addr, nil)) }()
		}
		if err := bench.ServePeer(servePeer, serveListen, serveDir, serveFsync); err != nil {
			fmt.Fprintln(os.Stderr, "servercost:", err)
			os.Exit(1)
		}
		return
	}
	o.Peers = strings.Split(peers, ",")
	for _, c := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "servercost: bad -conns:", c)
			os.Exit(2)
		}
		o.Conns = append(o.Conns, n)
	}
	if touchGiB < 0 {
		touchGiB = 0
		if suite {
			touchGiB = bench.SuiteTouchGiB
		}
	}
	var err error
	if suite {
		err = runSuite(o, out, touchGiB)
	} else if err = touch(touchGiB); err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "servercost:", err)
		os.Exit(1)
	}
}

// pprofEnv passes -pprof-listen to the peer process.
const pprofEnv = "SERVERCOST_PPROF_LISTEN"

// touch writes and releases gib GiB of memory (-touch-memory), if any.
func touch(gib int) error {
	if gib <= 0 {
		return nil
	}
	start := time.Now()
	if err := bench.TouchMemory(gib); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "servercost: touched %d GiB in %v\n", gib, time.Since(start).Round(time.Millisecond))
	return nil
}

// runSuite runs the suite's tables (bench.CostSuite) with o's runs,
// durations and binary and writes the report to out (standard output when
// empty). With -touch-memory above 0 (the suite's default) the produce
// table runs twice: first on the machine as it is (what a user's machine
// sees), then after the touch (what the broker costs once the VM has
// backed its page cache), and the other tables after the touch.
func runSuite(o bench.CostOptions, out string, touchedGiB int) error {
	cleanup, err := prepare(&o)
	defer cleanup()
	if err != nil {
		return err
	}
	loadStart, start := bench.LoadAvg(), time.Now()
	tables, spread := bench.CostSuite(o, touchedGiB)
	progress := func(r bench.CostResult) {
		fmt.Fprintf(os.Stderr, "  %-7s %3d conns run %d: %8.1f MB/s %6.2f CPU-s/GB p99 %v, machine %.0f%% busy\n", r.Peer, r.Conns, r.Run, r.MBps, r.BrokerCPUPerG, r.P99.Round(time.Microsecond), 100*r.MachineBusy)
	}
	for i := range tables {
		if err := touch(tables[i].TouchBefore); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "servercost: %s\n", tables[i].Title)
		rs, err := bench.RunServerCost(context.Background(), tables[i].Options, progress)
		if err != nil {
			return err
		}
		tables[i].Results = rs
	}
	fmt.Fprintf(os.Stderr, "servercost: %s\n", spread.Title)
	rs, err := bench.RunSpread(context.Background(), spread.Narrow, spread.Wide, progress)
	if err != nil {
		return err
	}
	spread.Results = rs
	fmt.Fprint(os.Stderr, bench.TargetsMarkdown(tables))
	report := bench.CostReport(tables, &spread, "cd bench && go run ./cmd/servercost "+strings.Join(os.Args[1:], " "), loadStart, bench.LoadAvg(), start, touchedGiB)
	if out == "" {
		fmt.Print(report)
		return nil
	}
	return os.WriteFile(out, []byte(report), 0o644)
}

// prepare finds this program (peers are run as its children) and builds
// strand unless -strand names a binary; cleanup removes what it built.
func prepare(o *bench.CostOptions) (cleanup func(), err error) {
	cleanup = func() {}
	self, err := os.Executable()
	if err != nil {
		return cleanup, err
	}
	o.Self = self
	if o.StrandBin == "" {
		tmp, err := os.MkdirTemp("", "servercost-bin-")
		if err != nil {
			return cleanup, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		o.StrandBin = filepath.Join(tmp, "strand")
		// In Strand's own module: the bench module does not carry the
		// CLI's dependencies.
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/strandmq/strand").Output()
		if err != nil {
			return cleanup, fmt.Errorf("find the strand module: %w", err)
		}
		build := exec.Command("go", "build", "-o", o.StrandBin, "./cmd/strand")
		build.Dir = strings.TrimSpace(string(root))
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return cleanup, fmt.Errorf("build strand: %w", err)
		}
	}
	return cleanup, nil
}

func run(o bench.CostOptions) error {
	cleanup, err := prepare(&o)
	defer cleanup()
	if err != nil {
		return err
	}
	fmt.Printf("servercost %s: %s, %d-byte records × %d per batch, %d partitions, %d partition(s) per request, %d in flight per connection, acks=%s, %v per run after %v warm-up, %d runs\n",
		o.Workload, time.Now().UTC().Format("2006-01-02 15:04 UTC"), o.RecordBytes, o.RecordsPerBatch, o.Partitions, max(o.PartitionsPerRequest, 1), o.InFlight, map[bool]string{false: "all", true: "1"}[o.LeaderAcks], o.Duration, o.Warmup, o.Runs)
	fmt.Printf("%-7s %5s %4s %9s %16s %11s %14s %8s %9s %9s\n", "peer", "conns", "run", "MB/s", "broker CPU-s/GB", "of it sys", "gen CPU-s/GB", "RSS MiB", "p50", "p99")
	results, err := bench.RunServerCost(context.Background(), o, func(r bench.CostResult) {
		fmt.Printf("%-7s %5d %4d %9.1f %16.2f %10.0f%% %14.2f %8.0f %9v %9v\n", r.Peer, r.Conns, r.Run, r.MBps, r.BrokerCPUPerG, 100*r.BrokerSys, r.GenCPUPerG, r.RSSMiB,
			r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond))
	})
	if err != nil {
		return err
	}
	summarize(o, results)
	return nil
}

// summarize prints the medians per (peer, conns) and Strand's ratios.
func summarize(o bench.CostOptions, rs []bench.CostResult) {
	fmt.Println("\nmedians")
	fmt.Printf("| peer | conns | MB/s | broker CPU-s/GB | load generator CPU-s/GB | other CPU-s/GB | machine busy | RSS MiB | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range o.Conns {
		for _, p := range o.Peers {
			m, _ := bench.CostMedian(rs, p, c)
			fmt.Printf("| %s | %d | %.1f | %.2f | %.2f | %.2f | %.0f%% | %.0f | %v | %v |\n", p, c, m.MBps, m.BrokerCPUPerG, m.GenCPUPerG, m.OtherCPUPerG, 100*m.MachineBusy, m.RSSMiB, m.P50.Round(time.Microsecond), m.P99.Round(time.Microsecond))
		}
	}
	fmt.Println("\nStrand vs peers (throughput: Strand/peer; CPU per GB: Strand/peer, lower is better)")
	for _, c := range o.Conns {
		s, ok := bench.CostMedian(rs, "strand", c)
		if !ok || s.MBps == 0 {
			continue
		}
		for _, p := range o.Peers {
			if p == "strand" {
				continue
			}
			m, _ := bench.CostMedian(rs, p, c)
			if m.MBps == 0 {
				continue
			}
			fmt.Printf("%d conns: vs %s throughput %.2f×, CPU/GB %.2f×, p99 %.2f× (peer/Strand)\n", c, p, s.MBps/m.MBps, s.BrokerCPUPerG/m.BrokerCPUPerG, float64(m.P99)/float64(max(s.P99, 1)))
		}
	}
}
