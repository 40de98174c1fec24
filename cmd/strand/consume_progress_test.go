package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsumeSummaryAndProgress: a read to a pipe says nothing on stderr;
// --progress always ends with the summary (records, partitions, why it
// stopped); and under a real terminal (script(1) gives the command a
// pty) with records going to a file, auto shows the progress line and the
// summary on the terminal and keeps both out of the file.
func TestConsumeSummaryAndProgress(t *testing.T) {
	b := startBroker(t)
	addr := b.Addr()
	ok(t, addr, "", "topic", "create", "prog", "--partitions", "2")
	var in strings.Builder
	for i := range 500 {
		fmt.Fprintf(&in, "r%d\n", i)
	}
	ok(t, addr, in.String(), "produce", "prog")

	r := ok(t, addr, "", "consume", "prog")
	if strings.Count(r.stdout, "\n") != 500 || r.stderr != "" {
		t.Fatalf("consume to a pipe: %d lines, stderr %q", strings.Count(r.stdout, "\n"), r.stderr)
	}
	r = ok(t, addr, "", "consume", "prog", "--progress", "always", "--count", "120")
	if !strings.Contains(r.stderr, "consumed 120 records from 2 partition(s) in ") || !strings.Contains(r.stderr, "stopped at --count") {
		t.Errorf("--progress always --count 120: stderr %q", r.stderr)
	}
	if r := runCLI(t, addr, "", "consume", "prog", "--progress", "sometimes"); r.code != exitUsage || !strings.Contains(r.stderr, "want auto, always or never") {
		t.Errorf("--progress sometimes: exit %d, %q", r.code, r.stderr)
	}

	out := filepath.Join(t.TempDir(), "records.txt")
	cmd := exec.Command("script", "-qec", fmt.Sprintf("%s consume prog > %s", strandBin(t), out), "/dev/null")
	cmd.Env = append(os.Environ(), "STRAND_BROKERS="+addr)
	term, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, term)
	}
	if !strings.Contains(string(term), "consumed 500 records from 2 partition(s)") || !strings.Contains(string(term), "reached the end") {
		t.Errorf("the terminal shows no summary: %q", term)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), "\n") != 500 || strings.Contains(string(data), "consumed") {
		t.Errorf("the file holds %d lines (want 500 records only)", strings.Count(string(data), "\n"))
	}
}
