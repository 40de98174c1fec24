package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

// Linearizability of each partition's log (REPLICATION.md §6.4), checked
// with porcupine over the produces the checker recorded and the final log.
// A produce acknowledged at offset o is legal only where the log is o
// records long, then appends its value; a produce that ended without a
// definite answer may have appended its value at any time after its call,
// or never (it "returns" after the final read); one that definitely failed
// leaves the log unchanged. The final read must equal the log. Porcupine
// then also enforces real time: a record acknowledged before another was
// even sent cannot sit above it in the log.
//
// The model's state is the log, held as its length n in the final log:
// the log is final[:n]. A step that would make the log anything but a
// prefix of the final log is refused at once rather than at the final
// read — the log only grows, so such a state could never pass that read
// and the verdict is the same. The alternative, the log itself (or its
// length and a hash of its values), lets every unanswered produce fork the
// state set (written or not, in every order) until the final read, which
// is exponential in the produces unanswered at once.

// produceCall is one produce: its value, when it was sent and answered
// (ns on the checker's clock), and its outcome: acknowledged at offset,
// indeterminate, or (neither) a definite failure that wrote nothing.
type produceCall struct {
	value         string
	call, ret     int64
	acked         bool
	offset        int64
	indeterminate bool
}

type produceInput struct{ value string }
type produceOutput struct {
	acked, indeterminate bool
	offset               int64
}
type readInput struct{}
type readOutput struct{ records int }

// partitionModel is §6.4's model of one partition whose final read
// returned final (values by offset from 0).
func partitionModel(final []string) porcupine.Model {
	return (&porcupine.NondeterministicModel{
		Init: func() []any { return []any{0} },
		Step: func(state, input, output any) []any {
			n := state.(int)
			switch in := input.(type) {
			case produceInput:
				out := output.(produceOutput)
				appendable := n < len(final) && final[n] == in.value
				switch {
				case out.acked && out.offset == int64(n) && appendable:
					return []any{n + 1}
				case out.acked:
					return nil
				case out.indeterminate && appendable:
					return []any{n, n + 1} // written now, or not (yet)
				}
				return []any{n}
			case readInput:
				if n == output.(readOutput).records {
					return []any{n}
				}
			}
			return nil
		},
		Hash: func(s any) uint64 { return uint64(s.(int)) * 0x9e3779b97f4a7c15 },
		DescribeOperation: func(input, output any) string {
			switch in := input.(type) {
			case produceInput:
				switch out := output.(produceOutput); {
				case out.acked:
					return fmt.Sprintf("produce(%s) → %d", in.value, out.offset)
				case out.indeterminate:
					return fmt.Sprintf("produce(%s) → ?", in.value)
				}
				return fmt.Sprintf("produce(%s) → failed", in.value)
			case readInput:
				return fmt.Sprintf("read() → %d records", output.(readOutput).records)
			}
			return "?"
		},
		DescribeState: func(s any) string {
			if n := s.(int); n > 0 {
				return fmt.Sprintf("%d records, last %s", n, final[n-1])
			}
			return "empty"
		},
	}).ToModel()
}

// partitionHistory is porcupine's view of one partition: the produces,
// those without an answer returning after the final read, and that read,
// called once every produce was sent and every answer came.
func partitionHistory(calls []produceCall, final []string) []porcupine.Operation {
	var end int64
	for _, c := range calls {
		end = max(end, c.call)
		if !c.indeterminate {
			end = max(end, c.ret)
		}
	}
	read := end + 1
	ops := make([]porcupine.Operation, 0, len(calls)+1)
	for i, c := range calls {
		op := porcupine.Operation{ClientId: i, Input: produceInput{c.value}, Call: c.call,
			Output: produceOutput{acked: c.acked, indeterminate: c.indeterminate, offset: c.offset}, Return: c.ret}
		if c.indeterminate {
			op.Return = read + 1 // may take effect at any time after its call, or never
		}
		ops = append(ops, op)
	}
	return append(ops, porcupine.Operation{ClientId: len(calls), Input: readInput{}, Call: read, Output: readOutput{len(final)}, Return: read})
}

// logOrderViolations decides the same question directly, in O(n log n),
// for histories too long to give porcupine. Values are unique, so the
// final log fixes the order in which produces took effect: the history is
// linearizable iff every acknowledged offset holds its value, every record
// in the log was produced once and not by a produce that definitely
// failed, and the log's order admits increasing linearization points —
// taking each record's point as early as its call and the records below
// it allow, none falls after its answer. It returns at most ten
// violations.
func logOrderViolations(calls []produceCall, final []string) []string {
	var bad []string
	report := func(format string, args ...any) {
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	byValue := make(map[string]int, len(calls))
	for i, c := range calls {
		if _, dup := byValue[c.value]; dup {
			return []string{fmt.Sprintf("%s was produced twice; the check needs unique values", c.value)}
		}
		byValue[c.value] = i
		if c.acked && (c.offset < 0 || c.offset >= int64(len(final)) || final[c.offset] != c.value) {
			at := "nothing"
			if c.offset >= 0 && c.offset < int64(len(final)) {
				at = final[c.offset]
			}
			report("%s acknowledged at %d; the final log has %s there", c.value, c.offset, at)
		}
	}
	point, latest := int64(-1<<63), -1 // the earliest linearization point so far, and the call that set it
	in := make(map[string]bool, len(final))
	for o, v := range final {
		i, ok := byValue[v]
		switch {
		case !ok:
			report("%s at %d: no produce sent it", v, o)
			continue
		case in[v]:
			report("%s is in the final log twice (again at %d)", v, o)
			continue
		}
		in[v] = true
		c := calls[i]
		if !c.acked && !c.indeterminate {
			report("%s at %d: its produce definitely failed", v, o)
		}
		if c.call > point {
			point, latest = c.call, i
		}
		if !c.indeterminate && point > c.ret {
			l := calls[latest]
			report("%s at %d was answered at %v, before %s (at or below %d) was sent at %v",
				v, o, time.Duration(c.ret), l.value, o, time.Duration(l.call))
		}
	}
	return bad
}

// maxLinearizeOps bounds a history porcupine is given. Its search keeps a
// copy of a bitset of the history's length per linearized step (n²/8
// bytes). Measured on a synthetic S1-like history (a produce every 7.5 ms,
// 2–6 ms answers, an 8 s stall one produce in 2,000): 40,000 produces
// check in 2.7 s at 0.8 GB resident under -race, 60,000 in 5.7 s at
// 1.7 GB. The CI S1 run (20 kills) made 26,110 per partition, each checked
// in under a second under -race; the long runs make hundreds of thousands,
// which logOrderViolations alone checks.
const maxLinearizeOps = 50000

// checkLinearizable checks one partition's history against its final log
// (values by offset from 0) with porcupine and with logOrderViolations,
// and returns a one-line summary. The two must agree.
func checkLinearizable(t *testing.T, p int32, calls []produceCall, final []string) string {
	t.Helper()
	bad := logOrderViolations(calls, final)
	for _, b := range bad {
		t.Errorf("partition %d is not linearizable: %s", p, b)
	}
	if len(calls) > maxLinearizeOps {
		return fmt.Sprintf("p%d: %d produces, past the %d porcupine is given; log order %s", p, len(calls), maxLinearizeOps, verdict(bad == nil))
	}
	model := partitionModel(final)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, partitionHistory(calls, final), 60*time.Second)
	took := time.Since(start).Round(time.Millisecond)
	switch res {
	case porcupine.Illegal:
		dir := os.Getenv("STRAND_PORCUPINE_DIR")
		if dir == "" {
			dir = os.TempDir() // not t.TempDir: it is removed when the test ends
		}
		name := strings.NewReplacer("/", "_").Replace(t.Name())
		path := filepath.Join(dir, fmt.Sprintf("%s-p%d-%d.html", name, p, time.Now().UnixNano()))
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			path = err.Error()
		}
		t.Errorf("partition %d: porcupine finds the history of %d produces and the final log of %d records not linearizable (visualization: %s)", p, len(calls), len(final), path)
	case porcupine.Unknown:
		return fmt.Sprintf("p%d: %d produces, porcupine unknown after %v; log order %s", p, len(calls), took, verdict(bad == nil))
	}
	if (res == porcupine.Ok) != (bad == nil) {
		t.Errorf("partition %d: porcupine says %s but the log order check %s", p, res, verdict(bad == nil))
	}
	return fmt.Sprintf("p%d: %d produces %s (porcupine %v)", p, len(calls), verdict(res == porcupine.Ok), took)
}

func verdict(ok bool) string {
	if ok {
		return "linearizable"
	}
	return "NOT linearizable"
}

// finalValues is partition p's final log as values by offset from 0
// (the scenarios' topics keep everything, so offsets are dense).
func finalValues(final map[pos]string, p int32) []string {
	var offs []int64
	for at := range final {
		if at.partition == p {
			offs = append(offs, at.offset)
		}
	}
	slices.Sort(offs)
	out := make([]string, 0, len(offs))
	for i, o := range offs {
		if o != int64(i) {
			return append(out, fmt.Sprintf("<gap at %d>", i)) // a record no produce wrote: illegal
		}
		out = append(out, final[pos{p, o}])
	}
	return out
}

// TestLinearizabilityModel: the model accepts legal histories and rejects
// the ways a log can break Kafka's contract — an acknowledged record
// missing from the final log, two acknowledgements of one offset, a record
// acknowledged before the one below it was sent, a record nobody produced
// — so the scenarios' check can fail. The direct check agrees on each.
func TestLinearizabilityModel(t *testing.T) {
	t.Parallel()
	ok := func(v string, call, ret, off int64) produceCall {
		return produceCall{value: v, call: call, ret: ret, acked: true, offset: off}
	}
	unsure := func(v string, call int64) produceCall {
		return produceCall{value: v, call: call, ret: call + 1, indeterminate: true}
	}
	failed := func(v string, call, ret int64) produceCall { return produceCall{value: v, call: call, ret: ret} }
	for _, tc := range []struct {
		name  string
		calls []produceCall
		final []string
		legal bool
	}{
		{"pipelined", []produceCall{ok("a", 0, 10, 0), ok("b", 1, 11, 1), ok("c", 2, 5, 2)}, []string{"a", "b", "c"}, true},
		{"an unanswered produce written", []produceCall{ok("a", 0, 10, 0), unsure("x", 11), ok("b", 20, 30, 2)}, []string{"a", "x", "b"}, true},
		{"an unanswered produce lost", []produceCall{ok("a", 0, 10, 0), unsure("x", 11), ok("b", 20, 30, 1)}, []string{"a", "b"}, true},
		{"an unanswered produce sent last, written", []produceCall{ok("a", 0, 10, 0), unsure("x", 20)}, []string{"a", "x"}, true},
		{"a definite failure", []produceCall{ok("a", 0, 10, 0), failed("x", 11, 12), ok("b", 20, 30, 1)}, []string{"a", "b"}, true},
		{"acknowledged and lost", []produceCall{ok("a", 0, 10, 0), ok("b", 11, 20, 1)}, []string{"a"}, false},
		{"one offset twice", []produceCall{ok("a", 0, 10, 0), ok("b", 1, 11, 0)}, []string{"a"}, false},
		{"acknowledged before the one below was sent", []produceCall{ok("a", 0, 5, 1), ok("b", 6, 10, 0)}, []string{"b", "a"}, false},
		{"a record nobody produced", []produceCall{ok("a", 0, 5, 0)}, []string{"a", "z"}, false},
		{"a definite failure written", []produceCall{ok("a", 0, 10, 0), failed("x", 11, 12)}, []string{"a", "x"}, false},
		{"a gap", []produceCall{ok("a", 0, 10, 0), ok("b", 11, 20, 2)}, finalValues(map[pos]string{{0, 0}: "a", {0, 2}: "b"}, 0), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(partitionModel(tc.final), partitionHistory(tc.calls, tc.final)); got != tc.legal {
				t.Errorf("porcupine: linearizable = %v, want %v", got, tc.legal)
			}
			if bad := logOrderViolations(tc.calls, tc.final); (bad == nil) != tc.legal {
				t.Errorf("log order: violations %q, want linearizable = %v", bad, tc.legal)
			}
		})
	}
}

// TestLinearizabilityDirectCheckAgrees: on small random histories, legal
// or not, porcupine and logOrderViolations give the same verdict, so the
// direct check can stand in for porcupine past maxLinearizeOps.
func TestLinearizabilityDirectCheckAgrees(t *testing.T) {
	t.Parallel()
	var legal, illegal int
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(t, "n")
		calls := make([]produceCall, n)
		var final []string
		for i := range calls {
			c := &calls[i]
			c.value = fmt.Sprintf("v%d", i)
			c.call = rapid.Int64Range(0, 20).Draw(t, "call")
			c.ret = c.call + rapid.Int64Range(0, 10).Draw(t, "took")
			switch rapid.IntRange(0, 5).Draw(t, "outcome") {
			case 0:
				c.indeterminate = true
			case 1: // a definite failure
			default:
				c.acked = true
			}
			if c.indeterminate || rapid.IntRange(0, 9).Draw(t, "written") > 0 {
				final = append(final, c.value)
			}
		}
		final = rapid.Permutation(final).Draw(t, "final")
		for i := range calls {
			if calls[i].acked {
				calls[i].offset = int64(max(0, slices.Index(final, calls[i].value)))
				if rapid.IntRange(0, 9).Draw(t, "misreported") == 0 {
					calls[i].offset = rapid.Int64Range(0, int64(n)).Draw(t, "offset")
				}
			}
		}
		if rapid.IntRange(0, 9).Draw(t, "stranger") == 0 {
			final = append(final, "z")
		}
		got := porcupine.CheckOperations(partitionModel(final), partitionHistory(calls, final))
		if bad := logOrderViolations(calls, final); got != (bad == nil) {
			t.Fatalf("porcupine says linearizable = %v; the log order check finds %q", got, bad)
		}
		if got {
			legal++
		} else {
			illegal++
		}
	})
	t.Logf("%d legal, %d illegal histories", legal, illegal)
	if legal == 0 || illegal == 0 {
		t.Errorf("the generator made %d legal and %d illegal histories; both must occur", legal, illegal)
	}
}
