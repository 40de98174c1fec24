package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the comparison table: a metric of RunResult.
type Row struct {
	Name   string
	Metric string // RunResult key
	Unit   string // "MiB/s", "rec/s" or "latency"
	// HigherBetter: the ratio is Strand/peer; otherwise peer/Strand.
	// Either way a ratio above 1 means Strand did better.
	HigherBetter bool
}

func (rw Row) format(v float64) string {
	switch rw.Unit {
	case "MiB/s":
		return fmt.Sprintf("%.1f MiB/s", v)
	case "rec/s":
		return fmt.Sprintf("%.0f rec/s", v)
	}
	return dur(v)
}

func dur(v float64) string {
	d := time.Duration(v)
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// Rows are the table's lines for o.
func (o Options) Rows() []Row {
	size := func(b int) string {
		if b%1024 == 0 {
			return fmt.Sprintf("%d KB", b/1024)
		}
		return fmt.Sprintf("%d B", b)
	}
	rows := []Row{
		{"produce " + size(o.Size), MetricProduce + "_mibps", "MiB/s", true},
		{"produce " + size(o.Size), MetricProduce + "_recps", "rec/s", true},
		{"produce " + size(o.SmallSize), MetricProduceSmall + "_mibps", "MiB/s", true},
		{"produce " + size(o.SmallSize), MetricProduceSmall + "_recps", "rec/s", true},
		{"consume " + size(o.Size), MetricConsume + "_mibps", "MiB/s", true},
		{"consume " + size(o.Size), MetricConsume + "_recps", "rec/s", true},
		{"produce round trip p50", MetricRTT + "_p50", "latency", false},
		{"produce round trip p99", MetricRTT + "_p99", "latency", false},
		{fmt.Sprintf("end-to-end p50 @ %d rec/s", o.E2ERate), MetricE2E + "_p50", "latency", false},
		{fmt.Sprintf("end-to-end p99 @ %d rec/s", o.E2ERate), MetricE2E + "_p99", "latency", false},
	}
	for _, p := range o.ScalePartitions {
		rows = append(rows, Row{fmt.Sprintf("produce %s, %d partition(s)", size(o.Size), p), ScaleMetric(p) + "_mibps", "MiB/s", true})
	}
	return rows
}

// others are the peers Strand is compared with.
func (r *Report) others() []string {
	var o []string
	if r.Peer("strand") == nil {
		return nil
	}
	for _, p := range r.Peers {
		if p.Peer != "strand" {
			o = append(o, p.Peer)
		}
	}
	return o
}

// PeerLabel is how a peer is named in tables and charts.
func PeerLabel(name string) string {
	switch name {
	case "strand":
		return "Strand"
	case "jetstream":
		return "JetStream"
	case "null":
		return "null broker"
	}
	return name
}

// Ratio is Strand's ratio to peer on rw (above 1: Strand better); ok is
// false when either figure is missing.
func (r *Report) Ratio(rw Row, peer string) (float64, bool) {
	s, k := r.Peer("strand"), r.Peer(peer)
	if s == nil || k == nil || len(s.Runs) == 0 || len(k.Runs) == 0 {
		return 0, false
	}
	sv, kv := s.Median[rw.Metric], k.Median[rw.Metric]
	if sv == 0 || kv == 0 {
		return 0, false
	}
	if rw.HigherBetter {
		return sv / kv, true
	}
	return kv / sv, true
}

func (r *Report) header() []string {
	h := []string{"workload"}
	for _, p := range r.Peers {
		h = append(h, PeerLabel(p.Peer))
	}
	for _, o := range r.others() {
		h = append(h, "Strand vs "+PeerLabel(o))
	}
	return h
}

func (r *Report) cells(rw Row) []string {
	c := []string{rw.Name}
	for _, p := range r.Peers {
		if len(p.Runs) == 0 {
			c = append(c, "FAILED")
			continue
		}
		v, ok := p.Median[rw.Metric]
		if !ok {
			c = append(c, "–")
			continue
		}
		c = append(c, rw.format(v))
	}
	for _, o := range r.others() {
		if v, ok := r.Ratio(rw, o); ok {
			c = append(c, fmt.Sprintf("%.2f×", v))
		} else {
			c = append(c, "n/a")
		}
	}
	return c
}

// Table renders the medians as an aligned plain-text table.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "medians of %d run(s); ratios: throughput Strand/peer, latency peer/Strand (>1 = Strand better)\n\n", r.Options.Runs)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(r.header(), "\t"))
	for _, rw := range r.Options.Rows() {
		fmt.Fprintln(tw, strings.Join(r.cells(rw), "\t"))
	}
	tw.Flush()
	if s := r.scaling(); s != "" {
		fmt.Fprintf(&b, "\n%s\n", s)
	}
	for _, p := range r.Peers {
		if p.Err != nil {
			fmt.Fprintf(&b, "\n%s FAILED: %v\n", p.Peer, p.Err)
		}
	}
	return b.String()
}

// scaling states each peer's produce throughput at the most partitions
// relative to 8 (the target: Strand at 64 ≥ 80% of at 8).
func (r *Report) scaling() string {
	ps := r.Options.ScalePartitions
	if len(ps) < 2 {
		return ""
	}
	base, top := 8, ps[len(ps)-1]
	if !slices.Contains(ps, base) || top == base {
		return ""
	}
	var parts []string
	for _, p := range r.Peers {
		b, t := p.Median[ScaleMetric(base)+"_mibps"], p.Median[ScaleMetric(top)+"_mibps"]
		if b > 0 && t > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", PeerLabel(p.Peer), 100*t/b))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("produce at %d partitions as a share of at %d: %s", top, base, strings.Join(parts, ", "))
}

// Markdown renders the report with the machine and command it ran on;
// chart, if set, is the PNG's path relative to the markdown file.
func (r *Report) Markdown(cmdline string, when time.Time, chart string) string {
	var b strings.Builder
	o := r.Options
	var names []string
	for _, p := range r.Peers {
		names = append(names, PeerLabel(p.Peer))
	}
	fmt.Fprintf(&b, "# Peer benchmark: %s\n\n", strings.Join(names, " vs "))
	fmt.Fprintf(&b, "Generated by `bench/cmd/peerbench` (see bench/README.md for what each workload measures).\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", when.UTC().Format("2006-01-02 15:04 MST"))
	cpu, ncpu := cpuInfo()
	fmt.Fprintf(&b, "- Machine: %s, %d logical CPUs (GOMAXPROCS %d), %s RAM, %s/%s\n",
		cpu, ncpu, runtime.GOMAXPROCS(0), memTotal(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- Load average (1/5/15 min) at start: %s; at end: %s\n", r.LoadStart, r.LoadEnd)
	fmt.Fprintf(&b, "- Go: %s\n", runtime.Version())
	fmt.Fprintf(&b, "- Clients: franz-go %s (Strand, kfake); nats.go %s (JetStream). Peers: kfake %s, nats-server %s\n",
		modVersion("github.com/twmb/franz-go"), modVersion("github.com/nats-io/nats.go"),
		modVersion("github.com/twmb/franz-go/pkg/kfake"), modVersion("github.com/nats-io/nats-server/v2"))
	fmt.Fprintf(&b, "- Command: `%s`\n", cmdline)
	fmt.Fprintf(&b, "- Workloads (acks=all, no compression, values from crypto/rand): produce %d × %d B and %d × %d B records to %d partitions, "+
		"at most %d unacknowledged; consume the %d × %d B from the start; %d sequential single-record produces; "+
		"end-to-end latency at %d rec/s for %v; produce %d × %d B at %v partitions; %d untimed warm-up records. "+
		"Kafka peers: idempotent producer, linger %v (0 for end-to-end), batches of at most %d B. %d run(s) per peer, each on a fresh broker and data directory; medians reported\n",
		o.Records, o.Size, o.SmallRecords, o.SmallSize, o.Partitions, o.Window, o.Records, o.Size, o.LatencyRecords,
		o.E2ERate, o.E2EDuration, o.ScaleRecords, o.Size, o.ScalePartitions, o.Warmup, o.Linger, o.BatchBytes, o.Runs)
	fmt.Fprintf(&b, "- Peers, all in the benchmark's process on loopback, none fsyncing: Strand embedded (`strand.Start`, default flush policy); "+
		"kfake with `DataDir`; nats-server with JetStream file storage, R1, streams of one subject per partition\n\n")

	fmt.Fprintf(&b, "## Medians\n\n")
	if chart != "" {
		fmt.Fprintf(&b, "![peer benchmark chart](%s)\n\n", chart)
	}
	h := r.header()
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(h, " | "), strings.Repeat(" --- |", len(h)))
	for _, rw := range o.Rows() {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r.cells(rw), " | "))
	}
	fmt.Fprintf(&b, "\nRatios: throughput is Strand/peer, latency is peer/Strand, so above 1 always means Strand did better.\n")
	if s := r.scaling(); s != "" {
		fmt.Fprintf(&b, "\n%s.\n", strings.ToUpper(s[:1])+s[1:])
	}

	fmt.Fprintf(&b, "\n## Every run\n\n")
	rows := o.Rows()
	fmt.Fprintf(&b, "| peer | run |")
	for _, rw := range rows {
		fmt.Fprintf(&b, " %s (%s) |", rw.Name, rw.Unit)
	}
	fmt.Fprintf(&b, "\n|%s\n", strings.Repeat(" --- |", len(rows)+2))
	for _, p := range r.Peers {
		for i, run := range p.Runs {
			fmt.Fprintf(&b, "| %s | %d |", PeerLabel(p.Peer), i+1)
			for _, rw := range rows {
				v, ok := run[rw.Metric]
				switch {
				case !ok:
					fmt.Fprintf(&b, " – |")
					continue
				}
				switch rw.Unit {
				case "MiB/s":
					fmt.Fprintf(&b, " %.1f |", v)
				case "rec/s":
					fmt.Fprintf(&b, " %.0f |", v)
				default:
					fmt.Fprintf(&b, " %s |", dur(v))
				}
			}
			fmt.Fprintln(&b)
		}
	}
	for _, p := range r.Peers {
		if p.Err != nil {
			fmt.Fprintf(&b, "\n**%s failed:** `%v`\n", PeerLabel(p.Peer), p.Err)
		}
	}
	return b.String()
}

// KeptHeading starts the hand-written part of the markdown report (the
// analysis of where Strand stands, with its profiles): regenerating the
// report keeps it, from this heading to the end of the file.
const KeptHeading = "## Where Strand stands"

// KeptSection returns the hand-written section of an existing report (from
// KeptHeading to its end), or "".
func KeptSection(old string) string {
	i := strings.Index(old, "\n"+KeptHeading)
	if i < 0 {
		return ""
	}
	return old[i:]
}

func cpuInfo() (model string, n int) {
	model = "unknown CPU"
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return model, runtime.NumCPU()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if n == 0 || model == "unknown CPU" {
				model = strings.TrimSpace(v)
			}
		case "processor":
			n++
		}
	}
	if n == 0 {
		n = runtime.NumCPU()
	}
	return model, n
}

func memTotal() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

func modVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}

// Machine describes this machine for a report: CPU model and count, RAM,
// OS/architecture and Go version.
func Machine() string {
	cpu, n := cpuInfo()
	return fmt.Sprintf("%s, %d logical CPUs, %s RAM, %s/%s, %s", cpu, n, memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// LoadAvg returns the first three fields of /proc/loadavg, or "unknown".
// Other work on the machine skews every figure, so the report records it.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
