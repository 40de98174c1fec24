package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary serve a peer: costRun starts every peer
// but Strand as `<Self> -serve-peer NAME -serve-listen ADDR -serve-dir DIR
// -serve-fsync=B`, and in these tests Self is the test binary itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-"+ServeFlag {
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		name := fs.String(ServeFlag, "", "")
		addr := fs.String("serve-listen", "", "")
		dir := fs.String("serve-dir", "", "")
		fsync := fs.Bool("serve-fsync", false, "")
		fs.Parse(os.Args[1:])
		if err := ServePeer(*name, *addr, *dir, *fsync); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// Every run of the server-cost workload starts its peer, in its own
// process, on a data directory made for that run alone — empty when the
// peer starts, removed after — and the peers' order reverses from one run
// to the next. Real processes: kfake (which writes its segments into the
// directory) and the null broker, served by this test binary.
func TestCostRunsFreshDirBothOrders(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	o := CostOptions{Workload: "produce", Peers: []string{"null", "kfake"}, Conns: []int{1}, InFlight: 1,
		Duration: 200 * time.Millisecond, Warmup: 100 * time.Millisecond, Runs: 2,
		Partitions: 2, RecordBytes: 100, RecordsPerBatch: 10, Self: self, Dir: parent}
	type started struct{ peer, dir string }
	var runs []started
	costRunStarted = func(peer, dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) != 0 {
			t.Errorf("%s's data directory %s at its start: %d entries, %v; want an empty directory", peer, dir, len(entries), err)
		}
		runs = append(runs, started{peer, dir})
	}
	defer func() { costRunStarted = nil }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs, err := RunServerCost(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || len(runs) != 4 {
		t.Fatalf("%d results, %d runs started; want 2 peers × 2 runs", len(rs), len(runs))
	}
	var order []string
	dirs := map[string]bool{}
	for i, r := range runs {
		order = append(order, r.peer)
		if dirs[r.dir] {
			t.Errorf("run %d (%s) reused data directory %s", i, r.peer, r.dir)
		}
		dirs[r.dir] = true
		if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
			t.Errorf("%s's data directory %s is still there after its run (%v)", r.peer, r.dir, err)
		}
		if rs[i].Peer != r.peer || rs[i].MBps <= 0 || rs[i].BrokerCPUPerG < 0 {
			t.Errorf("result %d: %+v for a run of %s", i, rs[i], r.peer)
		}
	}
	if want := []string{"null", "kfake", "kfake", "null"}; !slices.Equal(order, want) {
		t.Errorf("peers ran in order %v, want %v (forward, then backward)", order, want)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("%d entries left in the runs' parent directory", len(left))
	}
}

// The suite runs the produce table in both memory states in one
// invocation: on the machine as it is first, then right after the touch,
// with the same peers, connection counts and options; nothing is touched
// before the first. Without a touch there is one produce table.
func TestCostSuiteMemoryStates(t *testing.T) {
	o := CostOptions{Runs: 3, Duration: 8 * time.Second, Warmup: 2 * time.Second, InFlight: 4, Partitions: 8, RecordBytes: 1024, RecordsPerBatch: 256}
	tables, spread := CostSuite(o, 16)
	var produce []int
	touched := -1
	for i, tb := range tables {
		if tb.TouchBefore > 0 {
			if touched >= 0 {
				t.Fatalf("tables %d and %d both touch memory", touched, i)
			}
			touched = i
		}
		if tb.Kind == KindProduce {
			produce = append(produce, i)
		}
	}
	if len(produce) != 2 {
		t.Fatalf("%d produce tables, want one per memory state", len(produce))
	}
	first, second := tables[produce[0]], tables[produce[1]]
	if touched != produce[1] || produce[0] > touched || tables[touched].TouchBefore != 16 {
		t.Fatalf("produce tables at %v, 16 GiB touched before table %d (%d GiB): want the touch between the two", produce, touched, tables[max(touched, 0)].TouchBefore)
	}
	if first.Memory != MemoryUntouched || second.Memory != MemoryTouched(16) {
		t.Errorf("memory states %q, %q", first.Memory, second.Memory)
	}
	if !slices.Equal(first.Options.Peers, []string{"strand", "kfake", "null", "strand-rf3"}) || !slices.Equal(first.Options.Conns, []int{1, 4, 8, 16}) {
		t.Errorf("produce table: peers %v at %v connections", first.Options.Peers, first.Options.Conns)
	}
	a, b := first.Options, second.Options
	if !slices.Equal(a.Peers, b.Peers) || !slices.Equal(a.Conns, b.Conns) || a.Runs != b.Runs || a.Duration != b.Duration || a.Fsync || b.Fsync {
		t.Errorf("the two produce tables differ beyond memory: %+v vs %+v", a, b)
	}
	var durable []CostTable
	for _, tb := range tables {
		if tb.Kind == KindDurable {
			durable = append(durable, tb)
		}
	}
	if len(durable) != 1 || !durable[0].Options.Fsync {
		t.Errorf("durable tables: %+v", durable)
	}
	if spread.Wide.Partitions != 10000 || spread.Wide.Partitions%spread.Wide.PartitionsPerRequest != 0 {
		t.Errorf("spread: %d partitions, %d per request", spread.Wide.Partitions, spread.Wide.PartitionsPerRequest)
	}

	tables, _ = CostSuite(o, 0)
	n := 0
	for _, tb := range tables {
		if tb.TouchBefore != 0 {
			t.Errorf("table %q touches memory without -touch-memory", tb.Title)
		}
		if tb.Kind == KindProduce {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d produce tables without a touch, want 1", n)
	}
}

// costRuns makes one result per value: peer at conns, runs numbered
// from 1.
func costRuns(peer string, conns int, cpu []float64, mbps float64, p99 time.Duration) []CostResult {
	var out []CostResult
	for i, c := range cpu {
		out = append(out, CostResult{Peer: peer, Conns: conns, Run: i + 1, MBps: mbps, BrokerCPUPerG: c, P99: p99})
	}
	return out
}

// The targets table's ratios are Strand over kfake and the null broker,
// and strand-rf3 over Strand, of the medians (an outlying run does not
// move them), with "met" exactly when the ratio is within the target: a
// ratio computed the other way round, or a verdict on the wrong side of
// the limit, fails it.
func TestTargetsFromMedians(t *testing.T) {
	var rs []CostResult
	ms := time.Millisecond
	// 1 connection: 1.0/2.0 = 0.50 (met), 1.0/0.4 = 2.50 (missed),
	// 3.0/1.0 = 3.00 (met), 20/10 ms = 2.00 (met).
	rs = append(rs, costRuns("strand", 1, []float64{1.0, 0.9, 5.0}, 800, 10*ms)...)
	rs = append(rs, costRuns("kfake", 1, []float64{2.0, 2.1, 1.9}, 500, 8*ms)...)
	rs = append(rs, costRuns("null", 1, []float64{0.4, 0.4, 0.4}, 2000, ms)...)
	rs = append(rs, costRuns("strand-rf3", 1, []float64{3.0, 3.0, 3.0}, 200, 20*ms)...)
	// 16 connections: 1.3/2.0 = 0.65 (missed), 1.3/0.65 = 2.00 (met, at
	// the limit), 5.2/1.3 = 4.00 (missed), 40/10 ms = 4.00 (missed).
	rs = append(rs, costRuns("strand", 16, []float64{1.3}, 900, 10*ms)...)
	rs = append(rs, costRuns("kfake", 16, []float64{2.0}, 700, 30*ms)...)
	rs = append(rs, costRuns("null", 16, []float64{0.65}, 3000, 5*ms)...)
	rs = append(rs, costRuns("strand-rf3", 16, []float64{5.2}, 200, 40*ms)...)
	peers := []string{"strand", "kfake", "null", "strand-rf3"}
	untouched := CostTable{Title: "produce", Kind: KindProduce, Memory: MemoryUntouched, Options: CostOptions{Peers: peers, Conns: []int{1, 16}}, Results: rs}
	// After the touch at 1 connection: kfake 0.8 → 1.25 (missed).
	var warm []CostResult
	warm = append(warm, costRuns("strand", 1, []float64{1.0}, 800, 10*ms)...)
	warm = append(warm, costRuns("kfake", 1, []float64{0.8}, 500, 8*ms)...)
	warm = append(warm, costRuns("null", 1, []float64{0.5}, 2000, ms)...)
	warm = append(warm, costRuns("strand-rf3", 1, []float64{3.6}, 200, 31*ms)...)
	touched := CostTable{Title: "produce, after the pre-touch", Kind: KindProduce, Memory: MemoryTouched(16), Options: CostOptions{Peers: peers, Conns: []int{1}}, Results: warm}

	want := map[int][]string{
		1:  {"0.50× met", "2.50× missed", "3.00× met", "2.00× met"},
		16: {"0.65× missed", "2.00× met", "4.00× missed", "4.00× missed"},
	}
	for conns, cells := range want {
		got := ProduceTargets(untouched, conns)
		if len(got) != len(cells) {
			t.Fatalf("%d targets at %d connections", len(got), conns)
		}
		for i, tg := range got {
			if tg.Cell() != cells[i] {
				t.Errorf("%d connections, %s: %q, want %q", conns, tg.Name, tg.Cell(), cells[i])
			}
		}
	}
	md := TargetsMarkdown([]CostTable{untouched, touched})
	for _, row := range []string{
		"| without pre-touch | 1 | 0.50× met | 2.50× missed | 3.00× met | 2.00× met |",
		"| without pre-touch | 16 | 0.65× missed | 2.00× met | 4.00× missed | 4.00× missed |",
		"| after a 16 GiB pre-touch | 1 | 1.25× missed | 2.00× met | 3.60× missed | 3.10× missed |",
		"Strand/kfake CPU per GB (≤ 0.6×)", "strand-rf3/strand p99 (≤ 3×)",
	} {
		if !strings.Contains(md, row) {
			t.Errorf("targets table lacks %q:\n%s", row, md)
		}
	}
	// Two runs' median is their mean: 1.0 and 1.4 against kfake's 2.0 and
	// 2.4 is 1.2/2.2, not the upper runs' 1.4/2.4.
	var two []CostResult
	two = append(two, costRuns("strand", 4, []float64{1.4, 1.0}, 800, 10*ms)...)
	two = append(two, costRuns("kfake", 4, []float64{2.0, 2.4}, 500, 8*ms)...)
	if got := ProduceTargets(CostTable{Results: two}, 4)[0].Cell(); got != "0.55× met" {
		t.Errorf("two runs each: %q, want 0.55× met (1.2/2.2)", got)
	}
	// A peer that did not run has no ratio and no verdict.
	noRF3 := untouched
	noRF3.Results = slices.DeleteFunc(slices.Clone(rs), func(r CostResult) bool { return r.Peer == "strand-rf3" })
	if got := ProduceTargets(noRF3, 1); got[2].Cell() != "—" || got[2].Met() || got[0].Cell() != "0.50× met" {
		t.Errorf("without strand-rf3: %q, %q", got[0].Cell(), got[2].Cell())
	}
}

// Durable produce is ahead of a peer when Strand's throughput is above the
// peer's (Strand/peer > 1×) and its CPU per GB below (< 1×, equal is not
// ahead); the targets table and the durable table's ratios both say so.
func TestDurableAhead(t *testing.T) {
	var rs []CostResult
	rs = append(rs, costRuns("strand", 1, []float64{300}, 2, 3*time.Millisecond)...)
	rs = append(rs, costRuns("kfake", 1, []float64{400}, 1, 4*time.Millisecond)...)
	rs = append(rs, costRuns("jetstream", 1, []float64{150}, 4, 3*time.Millisecond)...)
	rs = append(rs, costRuns("strand", 8, []float64{100}, 5, 3*time.Millisecond)...)
	rs = append(rs, costRuns("kfake", 8, []float64{100}, 5, 3*time.Millisecond)...)
	tb := CostTable{Title: "durable", Kind: KindDurable, Options: CostOptions{Peers: []string{"strand", "kfake", "jetstream"}, Conns: []int{1, 8}, Fsync: true}, Results: rs}
	tp, cpu := DurableTargets(tb, 1)
	if len(tp) != 2 || tp[0].Cell() != "2.00× met" || cpu[0].Cell() != "0.75× met" || tp[1].Cell() != "0.50× missed" || cpu[1].Cell() != "2.00× missed" {
		t.Fatalf("1 connection: throughput %v, CPU %v", tp, cpu)
	}
	tp, cpu = DurableTargets(tb, 8)
	if tp[0].Cell() != "1.00× missed" || cpu[0].Cell() != "1.00× missed" || tp[1].Cell() != "—" {
		t.Errorf("8 connections, level with kfake, no jetstream: %q %q %q", tp[0].Cell(), cpu[0].Cell(), tp[1].Cell())
	}
	// A ratio that rounds to its limit shows the digits its verdict
	// turns on.
	for _, c := range []struct {
		tg   Target
		want string
	}{
		{Target{Ratio: 0.6004, Limit: 0.6, AtMost: true}, "0.6004× missed"},
		{Target{Ratio: 0.598, Limit: 0.6, AtMost: true}, "0.598× met"},
		{Target{Ratio: 0.6, Limit: 0.6, AtMost: true}, "0.60× met"},
		{Target{Ratio: 0.9981, Limit: 1, AtMost: true, Strict: true}, "0.998× met"},
		{Target{Ratio: 1.0, Limit: 1, AtMost: true, Strict: true}, "1.00× missed"},
		{Target{Ratio: 1.2345, Limit: 1}, "1.23× met"},
	} {
		if got := c.tg.Cell(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.tg, got, c.want)
		}
	}
	md := TargetsMarkdown([]CostTable{tb})
	for _, row := range []string{"| 1 | kfake | 2.00× met | 0.75× met |", "| 1 | jetstream | 0.50× missed | 2.00× missed |", "| 8 | kfake | 1.00× missed | 1.00× missed |"} {
		if !strings.Contains(md, row) {
			t.Errorf("targets lack %q:\n%s", row, md)
		}
	}
	if md := tb.Markdown(); !strings.Contains(md, "| 1 | kfake | 2.00× met | 0.75× met | 1.33× |") {
		t.Errorf("the durable table's ratios lack the verdicts:\n%s", md)
	}
}

// The suite's report carries both produce tables and the targets for
// both memory states.
func TestCostReportBothMemoryStates(t *testing.T) {
	tables, _ := CostSuite(CostOptions{Runs: 1, RecordBytes: 1024, RecordsPerBatch: 256, Partitions: 8, InFlight: 4}, 16)
	for i := range tables {
		for _, c := range tables[i].Options.Conns {
			for j, p := range tables[i].Options.Peers {
				tables[i].Results = append(tables[i].Results, CostResult{Peer: p, Conns: c, Run: 1, MBps: 100, BrokerCPUPerG: float64(1 + j), P99: time.Millisecond})
			}
		}
	}
	md := CostReport(tables, nil, "servercost -suite", "1 1 1", "1 1 1", time.Now(), 16)
	for _, want := range []string{
		"### Targets (issue 40)",
		"| without pre-touch | 16 | 0.50× met | 0.33× met | 4.00× missed | 1.00× met |",
		"| after a 16 GiB pre-touch | 16 |",
		"### Produce (§1) without memory pre-touch",
		"### Produce (§1): acks=all, page cache, after the pre-touch",
		"| 64 | jetstream |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "### Targets"), strings.Index(md, "### Produce"); i < 0 || i > j {
		t.Errorf("the targets table is not ahead of the tables it reads")
	}
}

// A run that fails is tried again, each time on a fresh data directory,
// costRunTries times in all, and its error is reported if every try
// fails.
func TestCostRunRetriesOnFreshDir(t *testing.T) {
	o := CostOptions{Workload: "produce", Partitions: 1, RecordBytes: 10, RecordsPerBatch: 1, InFlight: 1,
		Self: filepath.Join(t.TempDir(), "no-such-program"), Dir: t.TempDir()}
	var dirs []string
	costRunStarted = func(peer, dir string) { dirs = append(dirs, dir) }
	defer func() { costRunStarted = nil }()
	if _, err := costRunRetry(context.Background(), o, "null", 1); err == nil {
		t.Fatal("a peer that cannot start: no error")
	}
	if len(dirs) != costRunTries || dirs[0] == dirs[1] || dirs[1] == dirs[2] {
		t.Errorf("tries on data directories %v, want %d distinct", dirs, costRunTries)
	}
}

// The cluster's ports are picked together: all distinct, none the
// address its first node was given.
func TestFreeAddrsExcept(t *testing.T) {
	first, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		addrs, err := freeAddrsExcept(6, first)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{first: true}
		for _, a := range addrs {
			if seen[a] {
				t.Fatalf("%s handed out twice (or is first) in %v", a, addrs)
			}
			seen[a] = true
		}
	}
}

// What bounds a target is read off the same medians: Strand's kernel CPU
// per GB (CPU times its kernel share) over each peer's CPU, marked
// kernel-bound exactly when it alone reaches the target, and the
// throughput ratio beside the p99's. A bound computed from the whole CPU
// instead of the kernel's part, or over the wrong peer, fails it.
func TestBoundsFromMedians(t *testing.T) {
	res := func(peer string, cpu, sys, mbps float64) CostResult {
		return CostResult{Peer: peer, Conns: 4, Run: 1, MBps: mbps, BrokerCPUPerG: cpu, BrokerSys: sys}
	}
	tb := CostTable{Kind: KindProduce, Memory: MemoryUntouched, Options: CostOptions{Peers: []string{"strand", "kfake", "null", "strand-rf3"}, Conns: []int{4}},
		Results: []CostResult{
			res("strand", 1.0, 0.8, 900), // kernel 0.8 CPU-s per GB
			res("kfake", 1.2, 0.5, 700),  // kernel 0.6
			res("null", 0.5, 0.9, 2000),
			res("strand-rf3", 4.0, 0.75, 300), // kernel 3.0
		}}
	b := ProduceBound(tb, 4)
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if !near(b.KernelOverKfake, 0.8/1.2) || !near(b.KernelOverKfakeKernel, 0.8/0.6) || !near(b.KernelOverNull, 1.6) ||
		!near(b.RF3KernelOverStrand, 3.0) || !near(b.ThroughputOverRF3, 3.0) {
		t.Fatalf("bounds %+v", b)
	}
	md := TargetsMarkdown([]CostTable{tb})
	if row := "| without pre-touch | 4 | 0.67× kernel-bound | 1.33× | 1.60× | 3.00× | 3.00× |"; !strings.Contains(md, row) {
		t.Errorf("bounds table lacks %q:\n%s", row, md)
	}
	// Without kfake's run there is no kfake floor, and a floor past the
	// 2× target is kernel-bound.
	tb.Results = []CostResult{res("strand", 1.0, 0.8, 900), res("null", 0.4, 0.9, 2000)}
	if got := ProduceBound(tb, 4).cells(); got[0] != "—" || got[2] != "2.00× kernel-bound" || got[3] != "—" {
		t.Errorf("strand and null only: %q", got)
	}
}
