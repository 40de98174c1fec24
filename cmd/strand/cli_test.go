package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/strandmq/strand"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The CLI tests run the built binary, as a user does: exit codes, stdout
// and stderr are what they check.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
		os.Exit(code)
	}),
		// sarama's metrics library starts a process-wide ticker it never stops.
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// strandBin builds cmd/strand once per test binary and returns its path.
func strandBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binPath = os.Getenv("STRAND_TEST_BIN"); binPath != "" { // a test run again by its own process (inNetns)
			return
		}
		if binDir, binErr = os.MkdirTemp("", "strand-cli-test"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "strand")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// startBroker starts an embedded broker (metrics on a free port) that the
// test closes.
func startBroker(t *testing.T) *strand.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{
		Dir:         t.TempDir(),
		MetricsAddr: "127.0.0.1:0",
		ConsoleAddr: "127.0.0.1:0",
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),

		SchemaRegistryAddr: "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the binary with STRAND_BROKERS=brokers and stdin.
func runCLI(t *testing.T, brokers, stdin string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, strandBin(t), args...)
	cmd.Env = append(os.Environ(), "STRAND_BROKERS="+brokers)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	res := cliResult{stdout: out.String(), stderr: errOut.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("strand %v: %v", args, err)
	}
	return res
}

// ok runs the CLI and fails the test unless it exits 0.
func ok(t *testing.T, brokers, stdin string, args ...string) cliResult {
	t.Helper()
	r := runCLI(t, brokers, stdin, args...)
	if r.code != 0 {
		t.Fatalf("strand %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
}

func TestCLITopicLifecycle(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	addr := b.Addr()

	r := ok(t, addr, "", "topic", "create", "orders", "--partitions", "2", "--config", "retention.ms=3600000")
	if !strings.Contains(r.stdout, `created topic "orders" (2 partitions`) {
		t.Errorf("create said %q", r.stdout)
	}
	r = runCLI(t, addr, "", "topic", "create", "orders")
	if r.code != exitError || !strings.Contains(r.stderr, `topic "orders" already exists`) {
		t.Errorf("second create: exit %d, stderr %q", r.code, r.stderr)
	}
	ok(t, addr, "", "topic", "create", "orders", "--if-not-exists")

	r = ok(t, addr, "", "topic", "list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TOPIC   PARTITIONS  REPLICAS") ||
		strings.Join(strings.Fields(lines[1]), " ") != "orders 2 1" {
		t.Errorf("topic list table:\n%s", r.stdout)
	}
	// Columns line up: each header starts where its values do.
	if strings.Index(lines[0], "PARTITIONS") != strings.Index(lines[1], "2") {
		t.Errorf("topic list columns are not aligned:\n%s", r.stdout)
	}
	var list []topicSummary
	decodeJSON(t, ok(t, addr, "", "topic", "list", "-o", "json").stdout, &list)
	if len(list) != 1 || list[0] != (topicSummary{Topic: "orders", Partitions: 2, Replication: 1}) {
		t.Errorf("topic list json: %+v", list)
	}

	ok(t, addr, "a\nb\nc\n", "produce", "orders", "--partition", "1")
	var desc topicDescription
	decodeJSON(t, ok(t, addr, "", "topic", "describe", "orders", "-o", "json").stdout, &desc)
	if len(desc.Partitions) != 2 || desc.Partitions[1].EndOffset != 3 || desc.Partitions[0].EndOffset != 0 ||
		desc.Partitions[1].StartOffset != 0 || desc.Partitions[1].Records != 3 {
		t.Errorf("describe offsets: %+v", desc.Partitions)
	}
	if len(desc.Configs) != 1 || desc.Configs[0].Name != "retention.ms" || desc.Configs[0].Value != "3600000" {
		t.Errorf("describe configs: %+v", desc.Configs)
	}
	r = ok(t, addr, "", "topic", "describe", "orders")
	for _, want := range []string{"topic orders: 2 partitions, 3 records", "PARTITION  LEADER  REPLICAS  ISR  STATUS  START  END  RECORDS", "retention.ms  3600000"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe table lacks %q:\n%s", want, r.stdout)
		}
	}

	ok(t, addr, "", "topic", "alter", "orders", "--partitions", "3", "--config", "retention.bytes=1048576", "--delete-config", "retention.ms")
	decodeJSON(t, ok(t, addr, "", "topic", "describe", "orders", "-o", "json").stdout, &desc)
	if len(desc.Partitions) != 3 || len(desc.Configs) != 1 || desc.Configs[0].Name != "retention.bytes" {
		t.Errorf("after alter: %d partitions, configs %+v", len(desc.Partitions), desc.Configs)
	}
	if r := runCLI(t, addr, "", "topic", "alter", "orders"); r.code != exitUsage {
		t.Errorf("alter without changes: exit %d, want %d", r.code, exitUsage)
	}

	r = runCLI(t, addr, "", "topic", "describe", "nope")
	if r.code != exitError || !strings.Contains(r.stderr, `no topic "nope"`) {
		t.Errorf("describe unknown topic: exit %d, stderr %q", r.code, r.stderr)
	}
	ok(t, addr, "", "topic", "delete", "orders")
	if r := ok(t, addr, "", "topic", "list", "-o", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("list after delete: %s", r.stdout)
	}
	if r := runCLI(t, addr, "", "topic", "delete", "orders"); r.code != exitError {
		t.Errorf("deleting a deleted topic: exit %d", r.code)
	}

	// kafka-topics.sh's --replica-assignment: partitions and their replicas.
	r = ok(t, addr, "", "topic", "create", "pinned", "--replica-assignment", "0,0")
	if !strings.Contains(r.stdout, `created topic "pinned" (2 partitions, replication factor 1)`) {
		t.Errorf("create with an assignment said %q", r.stdout)
	}
	decodeJSON(t, ok(t, addr, "", "topic", "describe", "pinned", "-o", "json").stdout, &desc)
	if len(desc.Partitions) != 2 {
		t.Errorf("assigned topic: %+v", desc.Partitions)
	}
	r = runCLI(t, addr, "", "topic", "create", "far", "--replica-assignment", "0:7")
	if r.code != exitError || !strings.Contains(r.stderr, `cannot create topic "far": invalid replica assignment: partition 0 on [0 7], but the only broker is node 0`) {
		t.Errorf("assignment naming an unknown node: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, addr, "", "topic", "create", "far", "--replica-assignment", "0:x")
	if r.code == 0 || !strings.Contains(r.stderr, `replica "x" is not a broker id`) {
		t.Errorf("assignment with a non-number: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, addr, "", "topic", "create", "far", "--replica-assignment", "0", "--partitions", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "leave out --partitions") {
		t.Errorf("assignment with --partitions: exit %d, stderr %q", r.code, r.stderr)
	}
	ok(t, addr, "", "topic", "delete", "orders", "--if-exists")
}

func TestCLIProduceConsume(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	addr := b.Addr()
	ok(t, addr, "", "topic", "create", "events", "-p", "3")

	r := ok(t, addr, "k1:v1\nk2:v2\nk1:v3\nnokey\n", "produce", "events", "-K", ":", "-H", "src=test", "-H", "n=1")
	if !strings.HasPrefix(r.stderr, "produced 4 records in ") || !strings.Contains(r.stderr, "rec/s)") {
		t.Errorf("produce summary: %q", r.stderr)
	}
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("f1\nf2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(t, addr, "", "produce", "events", "--file", file, "--partition", "2")

	// All six, in offset order per partition; same key, same partition.
	r = ok(t, addr, "", "consume", "events", "--format", `%p|%o|%k|%s|%h\n`)
	recs := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(recs) != 6 {
		t.Fatalf("consume printed %d records:\n%s", len(recs), r.stdout)
	}
	part := map[string]string{}
	for _, line := range recs {
		f := strings.Split(line, "|")
		if f[2] != "" {
			if p, seen := part[f[2]]; seen && p != f[0] {
				t.Errorf("key %s in partitions %s and %s", f[2], p, f[0])
			}
			part[f[2]] = f[0]
		}
		if strings.HasPrefix(f[3], "v") && f[4] != "src=test,n=1" {
			t.Errorf("headers of %q: %q", line, f[4])
		}
	}
	for _, v := range []string{"f1", "f2"} {
		found := false
		for _, line := range recs {
			found = found || strings.HasPrefix(line, "2|") && strings.HasSuffix(line, "||"+v+"|")
		}
		if !found {
			t.Errorf("record %s of --file is not in partition 2 without key or headers:\n%s", v, r.stdout)
		}
	}

	// --count, an offset, the last N, JSON lines.
	if r := ok(t, addr, "", "consume", "events", "--count", "2"); strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("--count 2 printed:\n%s", r.stdout)
	}
	r = ok(t, addr, "", "consume", "events", "--partition", "2", "--from", "-1", "-o", "json")
	var jr jsonRecord
	decodeJSON(t, r.stdout, &jr)
	if jr.Partition != 2 || jr.Value == nil || *jr.Value != "f2" || jr.Key != nil {
		t.Errorf("last record of partition 2: %+v", jr)
	}
	if r := ok(t, addr, "", "consume", "events", "--from", "latest"); r.stdout != "" {
		t.Errorf("--from latest printed %q", r.stdout)
	}

	// A group commits what it printed: a second run prints only what is new.
	if r := ok(t, addr, "", "consume", "events", "--group", "g1"); strings.Count(r.stdout, "\n") != 6 {
		t.Errorf("group's first run printed:\n%s", r.stdout)
	}
	ok(t, addr, "late\n", "produce", "events", "--partition", "0")
	if r := ok(t, addr, "", "consume", "events", "--group", "g1"); r.stdout != "late\n" {
		t.Errorf("group's second run printed %q, want only the new record", r.stdout)
	}

	for _, args := range [][]string{
		{"consume", "events", "--from", "yesterday"},
		{"consume", "events", "--format", "%x"},
		{"consume", "events", "--group", "g", "--partition", "0"},
		{"produce", "events", "--header", "novalue"},
		{"topic", "list", "-o", "yaml"},
		{"topic", "list", "--no-such-flag"},
		{"consume"},
		{"topic", "describe"},
		{"topic", "frobnicate"},
	} {
		if r := runCLI(t, addr, "", args...); r.code != exitUsage {
			t.Errorf("strand %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
	if r := runCLI(t, addr, "", "consume", "nope"); r.code != exitError || !strings.Contains(r.stderr, `no topic "nope"`) {
		t.Errorf("consume unknown topic: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCLIMissingBroker: every client command says there is no broker, and
// what to do, with exit code 3.
func TestCLIMissingBroker(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, args := range [][]string{
		{"topic", "list"},
		{"topic", "create", "x"},
		{"produce", "x"},
		{"consume", "x"},
	} {
		r := runCLI(t, addr, "v\n", args...)
		want := "error: no broker at " + addr + ` — is "strand serve" running?`
		if r.code != exitUnreachable || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("strand %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), r.code, r.stderr, exitUnreachable, want)
		}
	}
}

// TestCLIElectLeaders: on a single node every partition is led by its
// only (preferred) replica: nothing is elected and named partitions say
// why; a partition past the end is named as unknown.
func TestCLIElectLeaders(t *testing.T) {
	t.Parallel()
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "e", "--partitions", "2")
	if r := ok(t, addr, "", "cluster", "elect-leaders"); strings.TrimSpace(r.stdout) != "0 leaders elected" {
		t.Errorf("elect every partition: %q", r.stdout)
	}
	r := ok(t, addr, "", "topic", "elect-leaders", "--topic", "e")
	if !strings.Contains(r.stdout, "0 leaders elected, 2 not") || strings.Count(r.stdout, "ELECTION_NOT_NEEDED") != 2 {
		t.Errorf("elect e's partitions:\n%s", r.stdout)
	}
	var results []electionResult
	decodeJSON(t, ok(t, addr, "", "cluster", "elect-leaders", "--topic", "e", "--partition", "5", "-o", "json").stdout, &results)
	if len(results) != 1 || results[0].Result != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("elect e-5: %+v", results)
	}
	if r := runCLI(t, addr, "", "cluster", "elect-leaders", "--partition", "1"); r.code != exitUsage {
		t.Errorf("--partition without --topic: exit %d", r.code)
	}
}

// TestCLIProduceSaysNotEnoughReplicas: kgo retries NOT_ENOUGH_REPLICAS
// until its timeout and reports only the timeout; strand produce then says
// what the metadata shows — too few in-sync replicas — and what to do,
// before the timeout.
func TestCLIProduceSaysNotEnoughReplicas(t *testing.T) {
	t.Parallel()
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "few", "--config", "min.insync.replicas=2")
	r := runCLI(t, addr, "x\n", "produce", "few", "--timeout", "3s")
	if r.code != exitError || !strings.Contains(r.stderr, "1 record not produced") ||
		!strings.Contains(r.stderr, "partition 0 has 1 replica in sync (0) and min.insync.replicas is 2") ||
		!strings.Contains(r.stderr, "NOT_ENOUGH_REPLICAS") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	// The cause comes before the timeout it led to.
	if cause, timeout := strings.Index(r.stderr, "min.insync.replicas is 2"), strings.Index(r.stderr, "--timeout ran out"); timeout < cause {
		t.Fatalf("the timeout is told before its cause:\n%s", r.stderr)
	}
}

// TestUnknownSubcommands: a mistyped or missing subcommand is a usage
// error (exit 2) that names a near miss, never a help page that exits 0
// (a script would take that for success); version works both ways.
func TestUnknownSubcommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "lagg"}, `did you mean "lag"?`},
		{[]string{"dlq", "redrve"}, `did you mean "redrive"?`},
		{[]string{"bench", "prodce"}, `did you mean "produce"?`},
		{[]string{"topc"}, `did you mean "topic"?`},
		{[]string{"cluster", "zzz"}, `unknown command "zzz" for "strand cluster"`},
		{[]string{"topic"}, `"strand topic" needs a subcommand`},
		{[]string{}, `"strand" needs a subcommand`},
	} {
		r := runCLI(t, "127.0.0.1:1", "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("strand %v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if r := runCLI(t, "127.0.0.1:1", "", args...); r.code != 0 || !strings.HasPrefix(r.stdout, "strand ") || !strings.Contains(r.stdout, "go1.") {
			t.Errorf("strand %v: exit %d, %q", args, r.code, r.stdout)
		}
	}
	var v struct{ Version string }
	decodeJSON(t, ok(t, "127.0.0.1:1", "", "version", "-o", "json").stdout, &v)
	if !strings.HasPrefix(v.Version, "strand ") {
		t.Errorf("version -o json: %+v", v)
	}
}

// TestCLIErrorsAreOneSentence: every command asked about a topic or group
// that does not exist says so in one sentence and fails (exit 1), rather
// than printing an empty table, a Dead group, or a raw Kafka error; a
// refused change says what was wrong without Kafka's generic text or the
// broker's stacked prefixes.
func TestCLIErrorsAreOneSentence(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "three", "--partitions", "3")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "describe", "nosuch"}, `no topic "nosuch" — "strand topic list" shows the topics there are`},
		{[]string{"topic", "alter", "nosuch", "--config", "retention.ms=1"}, `no topic "nosuch"`},
		{[]string{"topic", "delete", "nosuch"}, `no topic "nosuch"`},
		{[]string{"topic", "table", "nosuch"}, `no topic "nosuch"`},
		{[]string{"dlq", "list", "nosuch"}, `no topic "nosuch"`},
		{[]string{"dlq", "list", "three"}, `topic "three" is not validated (strand.validation is none), so it has no dead letters`},
		{[]string{"dlq", "redrive", "three"}, `topic "three" is not validated`},
		{[]string{"group", "lag", "nosuch"}, `no group "nosuch" — "strand group list" shows the groups there are`},
		{[]string{"group", "describe", "nosuch"}, `no group "nosuch"`},
		{[]string{"topic", "create", "bad", "--config", "retention.ms=abc"}, `error: cannot create topic "bad": config retention.ms="abc": not an integer` + "\n"},
		{[]string{"topic", "alter", "three", "--config", "nosuch.config=1"}, `error: cannot alter topic "three": config nosuch.config: unknown topic config` + "\n"},
		{[]string{"topic", "alter", "three", "--partitions", "2"}, `topic "three" has 3 partitions and partitions can only be added (removing some would move keys): ask for more than 3`},
		{[]string{"cluster", "add-voter", "--node-id", "9", "--raft-addr", "127.0.0.1:1"}, "error: add voter 9: a single node has no metadata quorum to change\n"},
		{[]string{"topic", "reassign", "nosuch", "--replica-assignment", "0:1"}, `no topic "nosuch"`},
		{[]string{"topic", "reassign", "three", "--replica-assignment", "0:1"}, "error: cannot reassign partition 0 of \"three\": invalid replica assignment: a single node cannot move three-0\n"},
		{[]string{"group", "seek", "g1", "--topic", "nosuch", "--to-earliest"}, `no topic "nosuch"`},
		{[]string{"produce", "three", "-v", "x", "--partition", "7"}, `1 record not produced: topic "three" has no partition 7 (it has 3)`},
	} {
		r := runCLI(t, addr, "", tc.args...)
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("strand %v: exit %d, stdout %q, stderr %q; want exit %d and one line saying %q", tc.args, r.code, r.stdout, r.stderr, exitError, tc.want)
		}
	}
}

// TestCLIProduceFlags: one record from --key/--value, records ended by a
// delimiter of the user's choice (values with newlines), acks and
// compression choices, and a record above 1 MiB once the topic allows it
// — the limit named when it does not.
func TestCLIProduceFlags(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "pf", "--partitions", "1")
	ok(t, addr, "", "produce", "pf", "-k", "user-1", "-v", `{"plan":"pro"}`, "--acks", "1", "--compression", "zstd")
	ok(t, addr, "line one\nline two;second;", "produce", "pf", "-D", ";", "--acks", "0", "--compression", "lz4")
	big := strings.Repeat("x", 2<<20)
	r := runCLI(t, addr, big, "produce", "pf")
	if r.code != exitError || !strings.Contains(r.stderr, `a record is larger than 1048588 bytes, topic "pf"'s max.message.bytes`) {
		t.Errorf("a 2 MiB record to a topic of 1 MiB records: exit %d, %q", r.code, r.stderr)
	}
	ok(t, addr, "", "topic", "alter", "pf", "--config", "max.message.bytes=3000000")
	ok(t, addr, big, "produce", "pf")
	out := ok(t, addr, "", "consume", "pf", "--count", "4", "--format", `%k=%S|`).stdout
	if want := fmt.Sprintf("user-1=14|=17|=6|=%d|", len(big)); out != want {
		t.Errorf("consumed %q, want %q", out, want)
	}
	if r := runCLI(t, addr, "", "produce", "pf", "--acks", "2", "-v", "x"); r.code != exitUsage {
		t.Errorf("--acks 2: exit %d, %q", r.code, r.stderr)
	}
}

// TestCLIConsumeTo: --to stops each partition before an offset or a
// time; --from takes RFC 3339; with --follow, --to waits for its bound.
func TestCLIConsumeTo(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "ct", "--partitions", "1")
	ok(t, addr, strings.Repeat("r\n", 20), "produce", "ct")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "5", "--to", "8"}, "5 6 7 "},
		{[]string{"--from", "2020-01-01T00:00:00Z", "--to", "3"}, "0 1 2 "},
		{[]string{"--from", "17", "--to", fmt.Sprint("@", time.Now().Add(time.Hour).UnixMilli())}, "17 18 19 "},
		{[]string{"--from", "18", "--to", "end"}, "18 19 "},
	} {
		if out := ok(t, addr, "", append([]string{"consume", "ct", "--format", "%o "}, tc.args...)...).stdout; out != tc.want {
			t.Errorf("consume %v: %q, want %q", tc.args, out, tc.want)
		}
	}
	if r := runCLI(t, addr, "", "consume", "ct", "--to", "soon"); r.code != exitUsage {
		t.Errorf("--to soon: exit %d, %q", r.code, r.stderr)
	}
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLI(t, addr, "", "consume", "ct", "--from", "19", "--to", "22", "--follow", "--format", "%o ")
	}()
	time.Sleep(time.Second)
	ok(t, addr, strings.Repeat("r\n", 5), "produce", "ct")
	select {
	case r := <-done:
		if r.code != 0 || r.stdout != "19 20 21 " {
			t.Errorf("consume --follow --to 22: exit %d, %q (%s)", r.code, r.stdout, r.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consume --follow --to 22 did not stop at offset 22")
	}
}

// TestCLIJSONOutput: the commands that printed prose under -o json print
// JSON: topic alter (what changed), topic delete (what was deleted) and
// produce (its summary, on stdout).
func TestCLIJSONOutput(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "js")
	var altered struct {
		Topic      string            `json:"topic"`
		Partitions int               `json:"partitions"`
		Set        map[string]string `json:"set"`
	}
	decodeJSON(t, ok(t, addr, "", "topic", "alter", "js", "--partitions", "2", "--config", "retention.ms=1000", "-o", "json").stdout, &altered)
	if altered.Topic != "js" || altered.Partitions != 2 || altered.Set["retention.ms"] != "1000" {
		t.Errorf("topic alter -o json: %+v", altered)
	}
	var produced struct {
		Topic    string `json:"topic"`
		Produced int    `json:"produced"`
	}
	decodeJSON(t, ok(t, addr, "a\nb\nc\n", "produce", "js", "-o", "json").stdout, &produced)
	if produced.Topic != "js" || produced.Produced != 3 {
		t.Errorf("produce -o json: %+v", produced)
	}
	var deleted []struct {
		Topic   string `json:"topic"`
		Deleted bool   `json:"deleted"`
	}
	decodeJSON(t, ok(t, addr, "", "topic", "delete", "js", "-o", "json").stdout, &deleted)
	if len(deleted) != 1 || deleted[0].Topic != "js" || !deleted[0].Deleted {
		t.Errorf("topic delete -o json: %+v", deleted)
	}
}

// TestCLIConsumeEncoding: bytes that are not UTF-8 are never replaced —
// JSON carries them as base64 and says so — and --encoding prints keys
// and values as hex or base64 in --format and JSON alike.
func TestCLIConsumeEncoding(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "enc")
	ok(t, addr, "k1:\xff\xfe\n", "produce", "enc", "-K", ":")
	out := ok(t, addr, "", "consume", "enc", "-o", "json").stdout
	var j map[string]any
	decodeJSON(t, out, &j)
	if j["key"] != "k1" || j["key_encoding"] != nil || j["value"] != "//4=" || j["value_encoding"] != "base64" {
		t.Errorf("a value that is not UTF-8, as JSON: %s", out)
	}
	if out := ok(t, addr, "", "consume", "enc", "--encoding", "hex", "--format", "%k %s").stdout; out != "6b31 fffe" {
		t.Errorf("--encoding hex: %q", out)
	}
	decodeJSON(t, ok(t, addr, "", "consume", "enc", "-o", "json", "--encoding", "base64").stdout, &j)
	if j["key"] != "azE=" || j["key_encoding"] != "base64" || j["value"] != "//4=" {
		t.Errorf("--encoding base64 as JSON: %v", j)
	}
	if r := runCLI(t, addr, "", "consume", "enc", "--encoding", "rot13"); r.code != exitUsage {
		t.Errorf("--encoding rot13: exit %d", r.code)
	}
}

// TestCLIConsumeJSONShape: consume -o json has the one JSON shape —
// RFC 3339 UTC milliseconds beside the epoch milliseconds, headers as a
// list (a repeated key kept, a header value that is not UTF-8 as base64
// with its own encoding), a missing key as null.
func TestCLIConsumeJSONShape(t *testing.T) {
	b := startBroker(t)
	ok(t, b.Addr(), "", "topic", "create", "shape")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("shape"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := time.UnixMilli(1767225600123)
	rec := &kgo.Record{Value: []byte("v"), Timestamp: at, Headers: []kgo.RecordHeader{
		{Key: "h", Value: []byte("1")}, {Key: "h", Value: []byte("2")}, {Key: "bin", Value: []byte{0xff}}}}
	if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := ok(t, b.Addr(), "", "consume", "shape", "-o", "json").stdout
	var j map[string]any
	decodeJSON(t, out, &j)
	want := `[map[key:h value:1] map[key:h value:2] map[encoding:base64 key:bin value:/w==]]`
	if j["timestamp"] != "2026-01-01T00:00:00.123Z" || j["timestamp_ms"] != float64(1767225600123) ||
		j["key"] != nil || fmt.Sprint(j["headers"]) != want {
		t.Errorf("consume -o json: %s", out)
	}
	if _, has := j["key"]; !has {
		t.Errorf("no key field (want null): %s", out)
	}

	// The console's API gives the same record the same fields, same values.
	resp, err := http.Get("http://" + b.ConsoleAddr() + "/api/v1/topics/shape/partitions/0/records")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var api struct {
		Records []map[string]any `json:"records"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&api); err != nil || len(api.Records) != 1 {
		t.Fatalf("console records: %v, %+v", err, api)
	}
	for field, v := range j {
		if field == "topic" {
			continue // the route names it
		}
		if got, has := api.Records[0][field]; !has || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("field %q: CLI %v, console API %v (has %v)", field, v, got, has)
		}
	}
}

// TestCLITopicDescribeELR: on a single node the table has no ELR columns
// and the JSON an empty "elr" per partition. In a five-node cluster (in
// this process), a topic on nodes 1 and 2 with min.insync.replicas 2: the
// replica stopped first shows in the ELR column and in "elr"; once both
// are stopped both are in the ELR and the last leader is the last known
// ELR, in a column of its own.
func TestCLITopicDescribeELR(t *testing.T) {
	t.Parallel()
	single := startBroker(t).Addr()
	ok(t, single, "", "topic", "create", "solo", "--partitions", "2")
	r := ok(t, single, "", "topic", "describe", "solo")
	if !strings.Contains(r.stdout, "PARTITION  LEADER  REPLICAS  ISR  STATUS  START  END  RECORDS\n") || strings.Contains(r.stdout, "ELR") {
		t.Errorf("single node: want the usual columns and no ELR:\n%s", r.stdout)
	}
	r = ok(t, single, "", "topic", "describe", "solo", "-o", "json")
	if strings.Count(r.stdout, `"elr": []`) != 2 || strings.Contains(r.stdout, "last_known_elr") {
		t.Errorf("single node json: want an empty elr per partition and no last_known_elr:\n%s", r.stdout)
	}

	// Five nodes, the topic on nodes 1 and 2: the quorum outlives both.
	nodes, addrs := startNodes(t, 5)
	brokers := strings.Join(addrs, ",")
	waitCLI(t, "topic elr created on nodes 1 and 2", func() bool { // every node registered
		r := runCLI(t, brokers, "", "topic", "create", "elr", "--replica-assignment", "1:2", "--config", "min.insync.replicas=2")
		return r.code == 0 || strings.Contains(r.stderr, "already exists")
	})
	var desc topicDescription
	described := func() bool { // node 5's view, once it has the topic
		r := runCLI(t, addrs[4], "", "topic", "describe", "elr", "-o", "json")
		desc = topicDescription{}
		if r.code == 0 {
			decodeJSON(t, r.stdout, &desc)
		}
		return len(desc.Partitions) == 1
	}
	// table is node 5's describe table: its header and partition 0's row.
	table := func() (header, row string) {
		r := ok(t, addrs[4], "", "topic", "describe", "elr")
		lines := strings.Split(r.stdout, "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "PARTITION") })
		if i < 0 || i+1 >= len(lines) {
			t.Fatalf("describe table without a header:\n%s", r.stdout)
		}
		return lines[i], lines[i+1]
	}
	stop := func(id int) {
		t.Helper()
		if err := nodes[id-1].Close(); err != nil {
			t.Fatal(err)
		}
		nodes[id-1] = nil
	}
	waitCLI(t, "ISR 1,2", func() bool { return described() && len(desc.Partitions[0].ISR) == 2 })

	stop(2)
	waitCLI(t, "ELR [2]", func() bool { return described() && fmt.Sprint(desc.Partitions[0].ELR) == "[2]" })
	if p := desc.Partitions[0]; p.LastKnownELR != nil || p.Status != "under-replicated" || fmt.Sprint(p.ISR) != "[1]" {
		t.Errorf("node 2 stopped: %+v; want ISR [1], under-replicated, no last known ELR", p)
	}
	// Another run of the CLI may take its metadata from another node, whose
	// view can lag node 5's by a moment: wait for it too.
	var header, row string
	elrColumn := func() bool {
		header, row = table()
		return strings.HasSuffix(header, "RECORDS  ELR") && strings.HasSuffix(row, "  2") && strings.Index(header, "ELR") == len(row)-1
	}
	for deadline := time.Now().Add(20 * time.Second); !elrColumn(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node 2 stopped: want an ELR column last, showing 2:\n%s\n%s", header, row)
		}
	}

	stop(1)
	waitCLI(t, "ELR [1 2], last known [1]", func() bool {
		return described() && fmt.Sprint(desc.Partitions[0].ELR) == "[1 2]" && fmt.Sprint(desc.Partitions[0].LastKnownELR) == "[1]"
	})
	if p := desc.Partitions[0]; p.Status != "offline" || len(p.ISR) != 0 || p.Leader != -1 {
		t.Errorf("nodes 1 and 2 stopped: %+v; want offline, no ISR", p)
	}
	header, row = table()
	if !strings.HasSuffix(header, "RECORDS  ELR  LAST KNOWN ELR") || !strings.HasSuffix(row, "  1,2  1") ||
		strings.Index(header, "ELR") != strings.LastIndex(row, "1,2") {
		t.Errorf("nodes 1 and 2 stopped: want ELR and LAST KNOWN ELR columns last, showing 1,2 and 1:\n%s\n%s", header, row)
	}
}

// waitCLI polls cond until it holds, for up to 20 s.
func waitCLI(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// startNodes starts an n-node cluster in this process (ids 1..n, every one
// a voter) and returns its nodes and Kafka addresses. Each is closed at
// cleanup; a test that stops one sets its entry to nil.
func startNodes(t *testing.T, n int) ([]*strand.Broker, []string) {
	t.Helper()
	quorum := make([]strand.Voter, n)
	addrs := make([]string, n)
	for i := range n {
		quorum[i] = strand.Voter{ID: int32(i + 1), Addr: freeAddr(t)}
		addrs[i] = freeAddr(t)
	}
	nodes := make([]*strand.Broker, n)
	errs := make(chan error, n)
	root := t.TempDir()
	for i := range n {
		go func() { // together: each waits for a quorum
			var err error
			nodes[i], err = strand.Start(context.Background(), strand.Config{
				Dir: filepath.Join(root, fmt.Sprint("n", i+1)), Addr: addrs[i], NodeID: int32(i + 1),
				Cluster: &strand.ClusterConfig{Quorum: quorum, HeartbeatInterval: 100 * time.Millisecond,
					SessionTimeout: 2 * time.Second, ElectionTimeout: 500 * time.Millisecond},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			errs <- err
		}()
	}
	var failed error
	for range n {
		failed = errors.Join(failed, <-errs)
	}
	t.Cleanup(func() {
		for _, b := range nodes {
			if b != nil { // nil: failed to start, or stopped by the test
				b.Close()
			}
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	return nodes, addrs
}
