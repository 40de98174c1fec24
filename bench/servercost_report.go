package bench

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// CostTable is one workload's runs, summarized for the report.
type CostTable struct {
	Title string
	// Kind says which targets the table is read against (KindProduce,
	// KindConsume, KindDurable).
	Kind string
	// Memory is the produce table's memory state (MemoryUntouched or
	// MemoryTouched), and TouchBefore the GiB the suite touches right
	// before running the table.
	Memory      string
	TouchBefore int
	Options     CostOptions
	Results     []CostResult
}

// CostMedian is the median of every figure of the runs of one (peer, conns).
func CostMedian(rs []CostResult, peer string, conns int) (CostResult, bool) {
	var mb, cpu, sys, gen, rss, p50, p99, busy, other []float64
	for _, r := range rs {
		if r.Peer == peer && r.Conns == conns {
			mb, cpu, sys = append(mb, r.MBps), append(cpu, r.BrokerCPUPerG), append(sys, r.BrokerSys)
			gen, rss = append(gen, r.GenCPUPerG), append(rss, r.RSSMiB)
			p50, p99 = append(p50, float64(r.P50)), append(p99, float64(r.P99))
			busy, other = append(busy, r.MachineBusy), append(other, r.OtherCPUPerG)
		}
	}
	if len(mb) == 0 {
		return CostResult{}, false
	}
	return CostResult{Peer: peer, Conns: conns, MBps: medianOf(mb), BrokerCPUPerG: medianOf(cpu), BrokerSys: medianOf(sys),
		GenCPUPerG: medianOf(gen), RSSMiB: medianOf(rss), P50: time.Duration(medianOf(p50)), P99: time.Duration(medianOf(p99)),
		MachineBusy: medianOf(busy), OtherCPUPerG: medianOf(other)}, true
}

// medianOf is the median of xs: with an even count, the mean of the two
// middle values (as peerbench's), so that the medians of -runs 2 are not
// the worse run's CPU and the better run's throughput.
func medianOf(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.SortFunc(xs, cmp.Compare)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// Markdown renders the table: medians per (conns, peer), Strand's ratios
// to each peer, and every run.
func (t CostTable) Markdown() string {
	var b strings.Builder
	o := t.Options
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	fsync := "page cache (no fsync per request)"
	if o.Fsync {
		fsync = "an fsync before every acknowledgement (Strand `flush.messages=1`, kfake `SyncWrites`)"
	}
	fmt.Fprintf(&b, "%d-byte records, %d per request, %d partitions, %d request(s) in flight per connection, %v measured after %v, %s; %d runs, peers alternated forward and backward, each on a fresh data directory, medians.\n\n",
		o.RecordBytes, o.RecordsPerBatch, o.Partitions, o.InFlight, o.Duration, o.Warmup, fsync, o.Runs)
	b.WriteString("| conns | peer | MB/s | broker CPU-s/GB | of it kernel | load generator CPU-s/GB | other CPU-s/GB | machine busy | broker RSS MiB | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range o.Conns {
		for _, p := range o.Peers {
			m, ok := CostMedian(t.Results, p, c)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %d | %s | %.1f | %.2f | %.0f%% | %.2f | %.2f | %.0f%% | %.0f | %s | %s |\n", c, p, m.MBps, m.BrokerCPUPerG, 100*m.BrokerSys,
				m.GenCPUPerG, m.OtherCPUPerG, 100*m.MachineBusy, m.RSSMiB, dur(float64(m.P50)), dur(float64(m.P99)))
		}
	}
	b.WriteString("\nStrand against each peer (throughput: Strand/peer, above 1 is better; CPU per GB: Strand/peer, below 1 is better; p99: peer/Strand, above 1 is better)")
	if t.Kind == KindDurable {
		b.WriteString("; durable produce is to be ahead of every peer, so throughput is met above 1× and CPU per GB below 1×")
	}
	b.WriteString(":\n\n| conns | peer | throughput | CPU per GB | p99 |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range o.Conns {
		s, ok := CostMedian(t.Results, "strand", c)
		if !ok {
			continue
		}
		ahead := map[string][2]Target{}
		if t.Kind == KindDurable {
			tp, cpu := DurableTargets(t, c)
			for i, p := range otherPeers(o.Peers) {
				ahead[p] = [2]Target{tp[i], cpu[i]}
			}
		}
		for _, p := range o.Peers {
			if p == "strand" {
				continue
			}
			m, ok := CostMedian(t.Results, p, c)
			if !ok || m.MBps == 0 {
				continue
			}
			tp, cpu := fmt.Sprintf("%.2f×", s.MBps/m.MBps), fmt.Sprintf("%.2f×", s.BrokerCPUPerG/m.BrokerCPUPerG)
			if a, ok := ahead[p]; ok {
				tp, cpu = a[0].Cell(), a[1].Cell()
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %.2f× |\n", c, p, tp, cpu, float64(m.P99)/float64(max(s.P99, 1)))
		}
	}
	b.WriteString("\n<details><summary>Every run</summary>\n\n| conns | peer | run | MB/s | broker CPU-s/GB | of it kernel | load generator CPU-s/GB | other CPU-s/GB | machine busy | RSS MiB | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range t.Results {
		fmt.Fprintf(&b, "| %d | %s | %d | %.1f | %.2f | %.0f%% | %.2f | %.2f | %.0f%% | %.0f | %s | %s |\n", r.Conns, r.Peer, r.Run, r.MBps, r.BrokerCPUPerG, 100*r.BrokerSys,
			r.GenCPUPerG, r.OtherCPUPerG, 100*r.MachineBusy, r.RSSMiB, dur(float64(r.P50)), dur(float64(r.P99)))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// CostReport renders the suite's tables as a Markdown document.
func CostReport(tables []CostTable, spread *SpreadTable, cmdline, loadStart, loadEnd string, when time.Time, touchedGiB int) string {
	var b strings.Builder
	b.WriteString("# Server cost: the broker's CPU, not the client's\n\n")
	b.WriteString("Generated by `bench/cmd/servercost -suite` (issue 19 §1, §2, §3, §4). Every peer runs as its own process; a load generator " +
		"that costs little (requests encoded once, sent over raw connections with a window in flight, answers only checked) keeps it busy. " +
		"CPU is the broker process's user + system time from `/proc/<pid>/stat` over the measured seconds, per 10^9 bytes of record payload " +
		"acknowledged (produce) or record bytes served (consume); RSS from `/proc/<pid>/status` at the end of the run.\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", when.UTC().Format("2006-01-02 15:04 MST"))
	cpu, ncpu := cpuInfo()
	fmt.Fprintf(&b, "- Machine: %s, %d logical CPUs, %s RAM, %s/%s, %s\n", cpu, ncpu, memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- Load average (1/5/15 min) at start: %s; at end: %s\n", loadStart, loadEnd)
	fmt.Fprintf(&b, "- Peers: `strand serve` (this tree); kfake %s with `DataDir` in its own process; the null broker (reads and answers, stores nothing) in its own process; nats-server %s with JetStream file storage in its own process, driven by nats.go publishers (one per connection)\n",
		modVersion("github.com/twmb/franz-go/pkg/kfake"), modVersion("github.com/nats-io/nats-server/v2"))
	if touchedGiB > 0 {
		fmt.Fprintf(&b, "- Memory: the produce table runs twice in this one invocation: first on the machine as it is (%s: what a user's machine sees), then after %d GiB are written once and released (`-touch-memory`), so that its page-cache writes land in pages the virtual machine has backed before (%s), as do the tables after it — see \"First touch\" in docs/BENCHMARKS.md\n",
			MemoryUntouched, touchedGiB, MemoryTouched(touchedGiB))
	}
	fmt.Fprintf(&b, "- Command: `%s`\n\n", cmdline)
	b.WriteString(TargetsMarkdown(tables))
	for _, t := range tables {
		b.WriteString(t.Markdown())
	}
	if spread != nil {
		b.WriteString(spread.Markdown())
	}
	return b.String()
}

// SpreadTable is RunSpread's runs: the same produce load over few
// partitions and spread over many, summarized for the report.
type SpreadTable struct {
	Title        string
	Narrow, Wide CostOptions
	Results      []CostResult
}

// Markdown renders the medians of each shape per connection count, the
// wide shape's share of the narrow one's throughput, and every run.
func (t SpreadTable) Markdown() string {
	var b strings.Builder
	n, w := t.Narrow, t.Wide
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	fmt.Fprintf(&b, "Strand only, the same bytes per request in two shapes, alternated run by run: %d partitions with one batch of %d records a request, "+
		"and %d partitions with %d batches of %d records a request (%d consecutive partitions, cycling over all); %d-byte records, acks=all, page cache, "+
		"%d request(s) in flight per connection, %v measured after %v; %d runs, medians.\n\n",
		n.Partitions, n.RecordsPerBatch, w.Partitions, max(w.PartitionsPerRequest, 1), w.RecordsPerBatch, max(w.PartitionsPerRequest, 1),
		n.RecordBytes, n.InFlight, n.Duration, n.Warmup, n.Runs)
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		fmt.Fprintf(&b, "Open-file limit %d, so Strand keeps at most %d log files open (`--log-max-open-files` defaults to half the limit).\n\n", lim.Max, lim.Max/2)
	}
	b.WriteString("| conns | partitions | MB/s | broker CPU-s/GB | of it kernel | load generator CPU-s/GB | machine busy | broker RSS MiB | p50 | p99 | over all vs over few |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range n.Conns {
		few, ok1 := CostMedian(t.Results, SpreadLabel(n), c)
		all, ok2 := CostMedian(t.Results, SpreadLabel(w), c)
		if !ok1 || !ok2 || few.MBps == 0 {
			continue
		}
		for _, m := range []CostResult{few, all} {
			share := ""
			if m.Peer == all.Peer {
				share = fmt.Sprintf("%.0f%%", 100*all.MBps/few.MBps)
			}
			fmt.Fprintf(&b, "| %d | %s | %.1f | %.2f | %.0f%% | %.2f | %.0f%% | %.0f | %s | %s | %s |\n", c, m.Peer, m.MBps, m.BrokerCPUPerG, 100*m.BrokerSys,
				m.GenCPUPerG, 100*m.MachineBusy, m.RSSMiB, dur(float64(m.P50)), dur(float64(m.P99)), share)
		}
	}
	b.WriteString("\n<details><summary>Every run</summary>\n\n| conns | partitions | run | MB/s | broker CPU-s/GB | of it kernel | load generator CPU-s/GB | machine busy | RSS MiB | p50 | p99 |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range t.Results {
		fmt.Fprintf(&b, "| %d | %s | %d | %.1f | %.2f | %.0f%% | %.2f | %.0f%% | %.0f | %s | %s |\n", r.Conns, r.Peer, r.Run, r.MBps, r.BrokerCPUPerG, 100*r.BrokerSys,
			r.GenCPUPerG, 100*r.MachineBusy, r.RSSMiB, dur(float64(r.P50)), dur(float64(r.P99)))
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}
