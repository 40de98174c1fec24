package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand"
)

// runBench runs `strand <args>` against addr and returns stdout and stderr.
func runBench(t *testing.T, ctx context.Context, addr string, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(append(args, "--brokers", addr))
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("strand %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// TestBenchProduceConsume runs bench produce then bench consume (direct and
// as a group) against an embedded broker and checks the summaries: counts,
// bytes and latency percentiles.
func TestBenchProduceConsume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{
		Dir:                        t.TempDir(),
		GroupInitialRebalanceDelay: -1,
		Logger:                     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	out, _ := runBench(t, ctx, b.Addr(), "bench", "produce", "--topic", "bt", "--records", "3000", "--size", "100",
		"--partitions", "3", "--producers", "2", "--window", "200", "--linger", "1ms")
	sum := regexp.MustCompile(`(?m)^produce bt: (\d+) records, ([\d.]+) MiB in ([\d.]+)s$`).FindStringSubmatch(out)
	if sum == nil || sum[1] != "3000" {
		t.Fatalf("produce summary: %q", out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^throughput: \d+ records/s, [\d.]+ MiB/s$`),
		regexp.MustCompile(`(?m)^ack latency: p50 [\d.]+ ms, p95 [\d.]+ ms, p99 [\d.]+ ms, p99\.9 [\d.]+ ms, max [\d.]+ ms \(3000 samples\)$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("produce output lacks %v:\n%s", want, out)
		}
	}

	// A direct consumer stops at the end offsets it saw at start.
	out, _ = runBench(t, ctx, b.Addr(), "bench", "consume", "--topic", "bt", "-o", "json", "--interval", "10ms")
	var s benchSummary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("consume json: %v\n%s", err, out)
	}
	if s.Mode != "consume" || s.Records != 3000 || s.Bytes != 300_000 || s.RecordsPS <= 0 {
		t.Fatalf("consume summary %+v", s)
	}
	if e := s.EndToEnd; e == nil || e.Samples != 3000 || e.P50 <= 0 || e.P50 > e.P99 || e.P99 > e.P999 || e.P999 > e.Max {
		t.Fatalf("end-to-end latency %+v", s.EndToEnd)
	}

	// A group consumer with --records stops at that count and commits.
	out, _ = runBench(t, ctx, b.Addr(), "bench", "consume", "--topic", "bt", "--group", "bg", "--records", "3000")
	m := regexp.MustCompile(`(?m)^consume bt: (\d+) records`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("group consume summary: %q", out)
	}
	if n, _ := strconv.Atoi(m[1]); n < 3000 {
		t.Fatalf("group consumed %d records, want ≥ 3000", n)
	}
	if !strings.Contains(out, "end-to-end latency: p50") {
		t.Errorf("group consume output lacks end-to-end latency:\n%s", out)
	}
}

func TestBenchHistogram(t *testing.T) {
	var h benchHist
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	l := h.snapshot()
	check := func(name string, got, want float64) {
		if got < want*0.97 || got > want*1.03 {
			t.Errorf("%s = %.2f ms, want ≈ %.2f", name, got, want)
		}
	}
	check("p50", l.P50, 500)
	check("p95", l.P95, 950)
	check("p99", l.P99, 990)
	check("p99.9", l.P999, 999)
	check("max", l.Max, 1000)
	if l.Samples != 1000 {
		t.Errorf("samples %d", l.Samples)
	}
	for v := int64(0); v < 1<<40; v = v*3/2 + 1 {
		if i := benchBucket(v); i < 0 || i >= len(h.counts) {
			t.Fatalf("bucket(%d) = %d out of range", v, i)
		}
		if mid := benchBucketValue(benchBucket(v)); float64(mid) < float64(v)*0.96 || float64(mid) > float64(v)*1.04+1 {
			t.Fatalf("bucket value %d for %d", mid, v)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "produce", "--acks", "2"},
		{"bench", "produce", "--compression", "brotli"},
		{"bench", "produce", "--records", "0"},
	} {
		cmd := newRootCmd()
		cmd.SetArgs(append(args, "--brokers", "127.0.0.1:1"))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); exitCode(err) != exitUsage {
			t.Errorf("%v: exit code %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
	}
}
