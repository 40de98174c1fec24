package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// Issue 40's targets, read off the suite's own medians so that the report
// states each ratio and verdict from the runs it prints, never typed in.

// Target is one target's ratio at one connection count.
type Target struct {
	Conns int
	Name  string  // what is divided by what, e.g. "Strand/kfake CPU per GB"
	Ratio float64 // numerator's median over denominator's median
	// Limit is the target; AtMost says whether the ratio must stay at or
	// below it (a cost) or above it (throughput ahead of a peer), and
	// Strict makes "at or below" strictly below (CPU ahead of a peer:
	// equal is not ahead).
	Limit          float64
	AtMost, Strict bool
	// Missing is set when either median is absent (a peer not run).
	Missing bool
}

// Met says whether the ratio is on the target's side of its limit.
func (t Target) Met() bool {
	if t.Missing {
		return false
	}
	switch {
	case t.AtMost && t.Strict:
		return t.Ratio < t.Limit
	case t.AtMost:
		return t.Ratio <= t.Limit
	}
	return t.Ratio > t.Limit
}

// Cell renders the ratio and its verdict, "0.55× met".
func (t Target) Cell() string {
	if t.Missing {
		return "—"
	}
	v := "missed"
	if t.Met() {
		v = "met"
	}
	return fmt.Sprintf("%s× %s", ratioText(t.Ratio, t.Limit), v)
}

// ratioText renders a ratio with two decimals, or as many more (up to
// four) as it takes not to read as its limit: 0.6004 against 0.6 is
// "0.6004", not a "0.60" that was missed.
func ratioText(ratio, limit float64) string {
	for prec := 2; ; prec++ {
		s := strconv.FormatFloat(ratio, 'f', prec, 64)
		if prec == 4 || ratio == limit || s != strconv.FormatFloat(limit, 'f', prec, 64) {
			return s
		}
	}
}

// Headings of issue 40's produce targets, in the targets table's column
// order.
var produceTargetNames = []string{
	"Strand/kfake CPU per GB (≤ 0.6×)",
	"Strand/null CPU per GB (≤ 2×)",
	"strand-rf3/strand CPU per acknowledged GB (≤ 3.5×)",
	"strand-rf3/strand p99 (≤ 3×)",
}

// ProduceTargets reads issue 40's produce targets at connection count
// conns off a produce table's medians: the broker's CPU per GB at most
// 0.6× kfake's and 2× the null broker's, and at RF 3 (strand-rf3, three
// nodes in one process, so its CPU is the cluster's) the CPU per
// acknowledged GB at most 3.5× and the p99 at most 3× single-node
// Strand's. The four are in produceTargetNames' order.
func ProduceTargets(t CostTable, conns int) []Target {
	s, sok := CostMedian(t.Results, "strand", conns)
	k, kok := CostMedian(t.Results, "kfake", conns)
	n, nok := CostMedian(t.Results, "null", conns)
	r, rok := CostMedian(t.Results, "strand-rf3", conns)
	ratio := func(num, den float64, ok bool) (float64, bool) {
		if !ok || den <= 0 {
			return 0, true
		}
		return num / den, false
	}
	var out []Target
	add := func(name string, limit float64, num, den float64, ok bool) {
		v, missing := ratio(num, den, ok)
		out = append(out, Target{Conns: conns, Name: name, Ratio: v, Limit: limit, AtMost: true, Missing: missing})
	}
	add(produceTargetNames[0], 0.6, s.BrokerCPUPerG, k.BrokerCPUPerG, sok && kok)
	add(produceTargetNames[1], 2, s.BrokerCPUPerG, n.BrokerCPUPerG, sok && nok)
	add(produceTargetNames[2], 3.5, r.BrokerCPUPerG, s.BrokerCPUPerG, sok && rok)
	add(produceTargetNames[3], 3, float64(r.P99), float64(s.P99), sok && rok)
	return out
}

// Bound is what limits one produce target at one connection count, read
// off the same medians as the target: how much of the ratio the kernel's
// work alone makes, and for the p99 the throughput ratio it follows.
type Bound struct {
	Conns int
	// KernelOverKfake is Strand's kernel CPU per GB over kfake's whole
	// CPU per GB: at or above 0.6, Strand misses 0.6× kfake with no
	// user-space work at all. KernelOverKfakeKernel compares the two
	// brokers' kernel time per GB for the same bytes.
	KernelOverKfake, KernelOverKfakeKernel float64
	// KernelOverNull is Strand's kernel CPU per GB over the null
	// broker's whole CPU per GB (the 2× target's floor in the same way).
	KernelOverNull float64
	// RF3KernelOverStrand is strand-rf3's kernel CPU per acknowledged GB
	// over Strand's whole CPU per GB (the 3.5× target's floor).
	RF3KernelOverStrand float64
	// ThroughputOverRF3 is Strand's MB/s over strand-rf3's: with the same
	// bytes in flight, latency is bytes in flight over throughput, so the
	// p99 ratio follows it.
	ThroughputOverRF3 float64
	// Which figures had their peers run.
	HaveKfake, HaveNull, HaveRF3 bool
}

// ProduceBound reads Bound off a produce table's medians at conns.
func ProduceBound(t CostTable, conns int) Bound {
	s, sok := CostMedian(t.Results, "strand", conns)
	k, kok := CostMedian(t.Results, "kfake", conns)
	n, nok := CostMedian(t.Results, "null", conns)
	r, rok := CostMedian(t.Results, "strand-rf3", conns)
	b := Bound{Conns: conns}
	if !sok {
		return b
	}
	kernel := s.BrokerCPUPerG * s.BrokerSys
	if b.HaveKfake = kok && k.BrokerCPUPerG > 0 && k.BrokerSys > 0; b.HaveKfake {
		b.KernelOverKfake = kernel / k.BrokerCPUPerG
		b.KernelOverKfakeKernel = kernel / (k.BrokerCPUPerG * k.BrokerSys)
	}
	if b.HaveNull = nok && n.BrokerCPUPerG > 0; b.HaveNull {
		b.KernelOverNull = kernel / n.BrokerCPUPerG
	}
	if b.HaveRF3 = rok && s.BrokerCPUPerG > 0 && r.MBps > 0; b.HaveRF3 {
		b.RF3KernelOverStrand = r.BrokerCPUPerG * r.BrokerSys / s.BrokerCPUPerG
		b.ThroughputOverRF3 = s.MBps / r.MBps
	}
	return b
}

// boundsHeading names the bounds table's columns after the first two.
var boundsHeading = []string{
	"Strand kernel / kfake CPU (floor of ≤ 0.6×)",
	"Strand kernel / kfake kernel",
	"Strand kernel / null CPU (floor of ≤ 2×)",
	"strand-rf3 kernel / strand CPU (floor of ≤ 3.5×)",
	"strand / strand-rf3 MB/s (what the p99 ratio follows)",
}

// cells renders b's figures in boundsHeading's order, a floor at or past
// its target marked "kernel-bound".
func (b Bound) cells() []string {
	floor := func(have bool, v, limit float64) string {
		switch {
		case !have:
			return "—"
		case v >= limit:
			return fmt.Sprintf("%.2f× kernel-bound", v)
		}
		return fmt.Sprintf("%.2f×", v)
	}
	plain := func(have bool, v float64) string {
		if !have {
			return "—"
		}
		return fmt.Sprintf("%.2f×", v)
	}
	return []string{
		floor(b.HaveKfake, b.KernelOverKfake, 0.6),
		plain(b.HaveKfake, b.KernelOverKfakeKernel),
		floor(b.HaveNull, b.KernelOverNull, 2),
		floor(b.HaveRF3, b.RF3KernelOverStrand, 3.5),
		plain(b.HaveRF3, b.ThroughputOverRF3),
	}
}

// DurableTargets reads "durable produce ahead of every peer" off a durable
// table's medians at conns: for each peer, Strand's acknowledged
// throughput over the peer's (met above 1×) and Strand's broker CPU per GB
// over the peer's (met below 1×).
func DurableTargets(t CostTable, conns int) (throughput, cpu []Target) {
	s, sok := CostMedian(t.Results, "strand", conns)
	for _, p := range t.Options.Peers {
		if p == "strand" {
			continue
		}
		m, ok := CostMedian(t.Results, p, conns)
		tp := Target{Conns: conns, Name: "Strand/" + p + " throughput (> 1×)", Limit: 1, Missing: !sok || !ok || m.MBps <= 0}
		c := Target{Conns: conns, Name: "Strand/" + p + " CPU per GB (< 1×)", Limit: 1, AtMost: true, Strict: true, Missing: !sok || !ok || m.BrokerCPUPerG <= 0}
		if !tp.Missing {
			tp.Ratio = s.MBps / m.MBps
		}
		if !c.Missing {
			c.Ratio = s.BrokerCPUPerG / m.BrokerCPUPerG
		}
		throughput, cpu = append(throughput, tp), append(cpu, c)
	}
	return throughput, cpu
}

// TargetsMarkdown renders issue 40's targets from the suite's tables: the
// produce targets for every produce table (one row per memory state and
// connection count) and, for the durable table, Strand's ratio to each
// peer. Empty when no table carries a target.
func TargetsMarkdown(tables []CostTable) string {
	var produce, durable []CostTable
	for _, t := range tables {
		switch t.Kind {
		case KindProduce:
			produce = append(produce, t)
		case KindDurable:
			durable = append(durable, t)
		}
	}
	if len(produce) == 0 && len(durable) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Targets (issue 40)\n\n")
	if len(produce) > 0 {
		b.WriteString("Computed from the medians of the produce tables below, one row per memory state and connection count: " +
			"the broker process's CPU-s per GB of record payload acknowledged (strand-rf3: the whole three-node process, per GB acknowledged " +
			"by the leader) and the p99 of request → acknowledgement. \"met\" when the ratio is within the target.\n\n")
		b.WriteString("| memory | conns | " + strings.Join(produceTargetNames, " | ") + " |\n|" + strings.Repeat(" --- |", 2+len(produceTargetNames)) + "\n")
		for _, t := range produce {
			for _, c := range t.Options.Conns {
				cells := []string{t.Memory, fmt.Sprint(c)}
				for _, tg := range ProduceTargets(t, c) {
					cells = append(cells, tg.Cell())
				}
				b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
			}
		}
		b.WriteString("\n")
		b.WriteString(boundsMarkdown(produce))
	}
	for _, t := range durable {
		b.WriteString("Durable produce ahead of every peer (the durable table below): Strand's acknowledged throughput over the peer's (met above 1×) " +
			"and Strand's broker CPU per GB over the peer's (met below 1×).\n\n")
		b.WriteString("| conns | peer | throughput | CPU per GB |\n| --- | --- | --- | --- |\n")
		for _, c := range t.Options.Conns {
			tp, cpu := DurableTargets(t, c)
			peers := otherPeers(t.Options.Peers)
			for i := range tp {
				fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", c, peers[i], tp[i].Cell(), cpu[i].Cell())
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// boundsMarkdown renders what bounds each produce target, from the same
// medians as the targets table.
func boundsMarkdown(produce []CostTable) string {
	var b strings.Builder
	b.WriteString("What bounds them, from the same medians. A cost target's floor is the share of the ratio that Strand's " +
		"kernel time alone makes (the broker's CPU-s per GB times its kernel share — the socket reads, the page-cache writes, " +
		"for strand-rf3 the replicas' sends and receives too): \"kernel-bound\" when that alone reaches the target, so that no work " +
		"taken out of Strand's own code could meet it; the rest of the ratio is Strand's user-space work. With the same bytes " +
		"in flight, a latency is those bytes over the throughput, so the p99 ratio follows the throughput ratio.\n\n")
	b.WriteString("| memory | conns | " + strings.Join(boundsHeading, " | ") + " |\n|" + strings.Repeat(" --- |", 2+len(boundsHeading)) + "\n")
	for _, t := range produce {
		for _, c := range t.Options.Conns {
			cells := append([]string{t.Memory, fmt.Sprint(c)}, ProduceBound(t, c).cells()...)
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	b.WriteString("\n")
	return b.String()
}

// otherPeers is peers without "strand", in order.
func otherPeers(peers []string) []string {
	var out []string
	for _, p := range peers {
		if p != "strand" {
			out = append(out, p)
		}
	}
	return out
}
