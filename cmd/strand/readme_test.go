package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestReadmeTour runs every command of the README's "Five-minute tour", so
// the tour cannot rot. The broker is one the test starts, so the tour's
// addresses (127.0.0.1:9092 for Kafka, 127.0.0.1:9644 for metrics,
// 127.0.0.1:9645 for the console) become
// its own; "./strand" and "go run ./cmd/strand" become the binary built
// from this source. "strand serve" and "go build" are skipped (the test
// did both), and so are kcat and curl lines when they are not installed.
// A "# …" comment line right after a command is its expected output: each
// comment line without an ellipsis must appear in what the command printed.
func TestReadmeTour(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := tourSteps(t, string(raw))
	if len(steps) < 10 {
		t.Fatalf("the tour has only %d commands: is the section still there?", len(steps))
	}
	b := startBroker(t)
	bin := strandBin(t)
	dir := t.TempDir()
	replacer := strings.NewReplacer(
		"127.0.0.1:9092", b.Addr(),
		"127.0.0.1:9644", b.MetricsAddr(),
		"127.0.0.1:9645", b.ConsoleAddr(),
		"go run ./cmd/strand ", bin+" ",
		"./strand ", bin+" ",
	)
	for _, s := range steps {
		switch {
		case strings.Contains(s.cmd, "strand serve"):
			continue // the test's broker stands in for it
		case strings.HasPrefix(s.cmd, "go build"):
			if !strings.Contains(s.cmd, "./cmd/strand") {
				t.Errorf("tour builds something other than ./cmd/strand: %s", s.cmd)
			}
			continue // built by strandBin from the same source
		}
		if tool := missingTool(s.cmd, "kcat", "curl"); tool != "" {
			t.Logf("skipped (no %s installed): %s", tool, s.cmd)
			continue
		}
		line := replacer.Replace(s.cmd)
		cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr())
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s\n%s", s.cmd, out)
		if err != nil {
			t.Fatalf("tour command failed (%v): %s\n%s", err, s.cmd, out)
		}
		have := normalize(string(out))
		for _, want := range s.want {
			if !strings.Contains(have, normalize(want)) {
				t.Errorf("tour command %s\nprinted:\n%s\nwithout the README's %q", s.cmd, out, want)
			}
		}
	}
}

type tourStep struct {
	cmd  string
	want []string // expected output lines (comments after the command)
}

// tourSteps extracts the commands of the fenced sh blocks of the tour.
func tourSteps(t *testing.T, readme string) []tourStep {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Five-minute tour\n")
	if !ok {
		t.Fatal(`README.md has no "## Five-minute tour" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var steps []tourStep
	inBlock := false
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			inBlock = !inBlock && trimmed == "```sh"
		case !inBlock || trimmed == "":
		case strings.HasPrefix(trimmed, "#"):
			text := strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
			if len(steps) > 0 && text != "" && !strings.Contains(text, "…") {
				last := &steps[len(steps)-1]
				last.want = append(last.want, text)
			}
		default:
			steps = append(steps, tourStep{cmd: trimmed})
		}
	}
	return steps
}

// missingTool returns the first of tools the command runs that is not
// installed, or "".
func missingTool(cmd string, tools ...string) string {
	for _, tool := range tools {
		if !strings.Contains(" "+cmd, " "+tool+" ") {
			continue
		}
		if _, err := exec.LookPath(tool); err != nil {
			return tool
		}
	}
	return ""
}

// normalize collapses runs of blanks, so that expected output compares
// without depending on table padding.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
