package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability of each partition's log (REPLICATION.md §6.4), checked
// with porcupine over the produces the checker recorded and the final log.
// A produce acknowledged at offset o is legal only where the log is o
// records long, then appends its value; a produce that ended without a
// definite answer may have appended its value at any time after its call,
// or never (it "returns" after the final read). The final read must equal
// the log. Porcupine then also enforces real time: a record acknowledged
// before another was even sent cannot sit above it in the log.

// produceCall is one produce: its value, when it was sent and answered
// (ns on the checker's clock), and its outcome.
type produceCall struct {
	value         string
	call, ret     int64
	acked         bool
	offset        int64
	indeterminate bool
}

// logState is the log as its length and a running hash of its values: a
// copied slice per step would make a history of 30,000 produces quadratic.
type logState struct {
	n int64
	h uint64
}

func (s logState) append(v string) logState {
	f := fnv.New64a()
	_, _ = f.Write([]byte(v))
	return logState{s.n + 1, (s.h ^ f.Sum64()) * 1099511628211}
}

type produceInput struct{ value string }
type produceOutput struct {
	acked  bool
	offset int64
}
type readInput struct{}
type readOutput struct{ log logState }

var partitionModel = (&porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{logState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(logState)
		switch in := input.(type) {
		case produceInput:
			out := output.(produceOutput)
			if !out.acked {
				return []interface{}{s, s.append(in.value)} // written or not
			}
			if out.offset == s.n {
				return []interface{}{s.append(in.value)}
			}
			return nil
		case readInput:
			if output.(readOutput).log == s {
				return []interface{}{s}
			}
		}
		return nil
	},
	Equal: func(a, b interface{}) bool { return a.(logState) == b.(logState) },
	Hash:  func(s interface{}) uint64 { return s.(logState).h ^ uint64(s.(logState).n) },
	DescribeOperation: func(input, output interface{}) string {
		switch in := input.(type) {
		case produceInput:
			if out := output.(produceOutput); out.acked {
				return fmt.Sprintf("produce(%s) → %d", in.value, out.offset)
			}
			return fmt.Sprintf("produce(%s) → ?", in.value)
		case readInput:
			return fmt.Sprintf("read() → %d records", output.(readOutput).log.n)
		}
		return "?"
	},
	DescribeState: func(s interface{}) string { return fmt.Sprintf("%d records", s.(logState).n) },
}).ToModel()

// maxLinearizeOps bounds a history porcupine is given. Its cache keeps a
// bitset of the history's length per linearized step (n²/8 bytes: 112 MB
// at 30,000), and the long runs produce hundreds of thousands of records
// per partition; the CI runs stay below it.
const maxLinearizeOps = 30000

// checkLinearizable checks one partition's history against its final log
// (values by offset from 0) and returns a one-line summary.
func checkLinearizable(t *testing.T, p int32, calls []produceCall, final []string) string {
	t.Helper()
	if len(calls) > maxLinearizeOps {
		return fmt.Sprintf("p%d: %d produces, past the %d porcupine is given", p, len(calls), maxLinearizeOps)
	}
	ops := partitionHistory(calls, final)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(partitionModel, ops, 60*time.Second)
	took := time.Since(start).Round(time.Millisecond)
	switch res {
	case porcupine.Illegal:
		dir := os.Getenv("STRAND_PORCUPINE_DIR")
		if dir == "" {
			dir = os.TempDir()
		}
		path := filepath.Join(dir, fmt.Sprintf("%s-p%d-%d.html", t.Name(), p, time.Now().UnixNano()))
		if f, err := os.Create(path); err == nil {
			_ = porcupine.Visualize(partitionModel, info, f)
			f.Close()
		}
		t.Errorf("partition %d: the history of %d produces and the final log of %d records is not linearizable (visualization: %s)", p, len(calls), len(final), path)
		return fmt.Sprintf("p%d: ILLEGAL", p)
	case porcupine.Unknown:
		return fmt.Sprintf("p%d: %d produces, unknown after %v", p, len(calls), took)
	}
	return fmt.Sprintf("p%d: %d produces linearizable (%v)", p, len(calls), took)
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

// TestLinearizabilityModel: the model accepts a legal history and rejects
// the three ways a log can break Kafka's contract — an acknowledged record
// missing from the final log, two acknowledgements of one offset, and a
// record acknowledged before another was sent sitting above it — so the
// scenarios' check can fail.
func TestLinearizabilityModel(t *testing.T) {
	ok := func(v string, call, ret, off int64) produceCall {
		return produceCall{value: v, call: call, ret: ret, acked: true, offset: off}
	}
	unsure := func(v string, call int64) produceCall {
		return produceCall{value: v, call: call, ret: call + 1, indeterminate: true}
	}
	for _, tc := range []struct {
		name  string
		calls []produceCall
		final []string
		legal bool
	}{
		{"pipelined", []produceCall{ok("a", 0, 10, 0), ok("b", 1, 11, 1), ok("c", 2, 5, 2)}, []string{"a", "b", "c"}, true},
		{"an unanswered produce written", []produceCall{ok("a", 0, 10, 0), unsure("x", 11), ok("b", 20, 30, 2)}, []string{"a", "x", "b"}, true},
		{"an unanswered produce lost", []produceCall{ok("a", 0, 10, 0), unsure("x", 11), ok("b", 20, 30, 1)}, []string{"a", "b"}, true},
		{"acknowledged and lost", []produceCall{ok("a", 0, 10, 0), ok("b", 11, 20, 1)}, []string{"a"}, false},
		{"one offset twice", []produceCall{ok("a", 0, 10, 0), ok("b", 1, 11, 0)}, []string{"a"}, false},
		{"acknowledged before the one below was sent", []produceCall{ok("a", 0, 5, 1), ok("b", 6, 10, 0)}, []string{"b", "a"}, false},
		{"a record nobody produced", []produceCall{ok("a", 0, 5, 0)}, []string{"a", "z"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(partitionModel, partitionHistory(tc.calls, tc.final)); got != tc.legal {
				t.Errorf("linearizable = %v, want %v", got, tc.legal)
			}
		})
	}
}

// partitionHistory is porcupine's view of one partition: the produces,
// those without an answer returning after the final read, and that read.
func partitionHistory(calls []produceCall, final []string) []porcupine.Operation {
	var end int64
	for _, c := range calls {
		if !c.indeterminate {
			end = max(end, c.ret)
		}
	}
	read := end + 1
	var log logState
	for _, v := range final {
		log = log.append(v)
	}
	ops := make([]porcupine.Operation, 0, len(calls)+1)
	for i, c := range calls {
		op := porcupine.Operation{ClientId: i, Input: produceInput{c.value}, Call: c.call,
			Output: produceOutput{acked: c.acked, offset: c.offset}, Return: c.ret}
		if c.indeterminate {
			op.Return = read + 1 // may take effect at any time after its call, or never
		}
		ops = append(ops, op)
	}
	return append(ops, porcupine.Operation{ClientId: len(calls), Input: readInput{}, Call: read, Output: readOutput{log}, Return: read})
}
