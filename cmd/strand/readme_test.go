package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
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
	steps := sectionSteps(t, string(raw), "Five-minute tour")
	if len(steps) < 10 {
		t.Fatalf("the tour has only %d commands: is the section still there?", len(steps))
	}
	runSectionSteps(t, steps)
}

// TestReadmeSchemas runs every command of the README's "Schemas" section:
// register with curl, produce with kcat, a record to the DLQ with its
// reason, a compatible evolution, a redrive.
func TestReadmeSchemas(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := sectionSteps(t, string(raw), "Schemas")
	if len(steps) < 8 {
		t.Fatalf("the Schemas section has only %d commands: is it still there?", len(steps))
	}
	runSectionSteps(t, steps)
}

// runSectionSteps runs README commands against a broker of the test's, in
// order, and checks each prints what the README says after it.
func runSectionSteps(t *testing.T, steps []tourStep) {
	t.Helper()
	b := startBroker(t)
	bin := strandBin(t)
	dir := t.TempDir()
	replacer := strings.NewReplacer(
		"127.0.0.1:9092", b.Addr(),
		"127.0.0.1:9644", b.MetricsAddr(),
		"127.0.0.1:9645", b.ConsoleAddr(),
		"127.0.0.1:8081", b.SchemaRegistryAddr(),
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
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr(), "STRAND_SCHEMA_REGISTRY=http://"+b.SchemaRegistryAddr())
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s\n%s", s.cmd, out)
		if err != nil {
			t.Fatalf("README command failed (%v): %s\n%s", err, s.cmd, out)
		}
		have := normalize(string(out))
		for _, want := range s.want {
			if !strings.Contains(have, normalize(want)) {
				t.Errorf("README command %s\nprinted:\n%s\nwithout the README's %q", s.cmd, out, want)
			}
		}
	}
}

type tourStep struct {
	cmd  string
	want []string // expected output lines (comments after the command)
	// fuzzy are expected lines with "…" standing for what varies; each
	// piece between them must appear.
	fuzzy []string
}

// sectionSteps extracts the commands of the fenced sh blocks of the
// README section with this heading.
func sectionSteps(t *testing.T, readme, heading string) []tourStep {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf(`README.md has no "## %s" section`, heading)
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
			if len(steps) > 0 && text != "" {
				last := &steps[len(steps)-1]
				if strings.Contains(text, "…") {
					last.fuzzy = append(last.fuzzy, text)
				} else {
					last.want = append(last.want, text)
				}
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

// TestReadmeCluster runs the README's three-node section: its three
// `strand serve` commands as real processes (on free ports), then every
// other command — cluster info, a topic created through one node, records
// produced through another and read back with kcat through the third, the
// SIGKILL of the controller and the topic create after it — checking each
// against the README's expected output. Then it starts the killed node
// again, as the section says, and waits for three live brokers.
func TestReadmeCluster(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := sectionSteps(t, string(raw), "A three-node cluster on one machine")
	bin := strandBin(t)
	dir := t.TempDir()
	var pairs []string
	for _, node := range []string{"91", "92", "93"} {
		for _, suffix := range []string{"92", "93", "94", "95", "96"} {
			pairs = append(pairs, "127.0.0.1:"+node+suffix, freeAddr(t))
		}
	}
	pairs = append(pairs, "./strand ", bin+" ")
	replacer := strings.NewReplacer(pairs...)
	serves := map[string]string{} // node id → its command
	var procs []*serveProc
	settle := false
	for _, s := range steps {
		line := replacer.Replace(s.cmd)
		if strings.HasPrefix(s.cmd, "./strand serve") {
			line = strings.TrimSuffix(strings.TrimSpace(line), "&")
			id := strings.Fields(strings.SplitN(line, "--node-id", 2)[1])[0]
			serves[id] = line
			procs = append(procs, launchShell(t, dir, line))
			continue
		}
		if procs != nil { // the first command after the serves
			for _, p := range procs {
				p.awaitServing(t)
			}
			procs = nil
			waitLive(t, replacer, 3)
		}
		if tool := missingTool(s.cmd, "kcat"); tool != "" {
			t.Logf("skipped (no %s installed): %s", tool, s.cmd)
			continue
		}
		// A README "sleep" waits for the cluster to notice a change (a
		// kill, a config): here the next command is retried until it
		// prints what the README says and fails only where the README
		// shows an error (a loaded machine may take longer), for at most
		// a minute.
		if strings.HasPrefix(s.cmd, "sleep ") {
			settle = true
			continue
		}
		wantsErr := slices.ContainsFunc(append(s.want, s.fuzzy...), func(w string) bool { return strings.HasPrefix(w, "error:") })
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			cmd := exec.Command("bash", "-o", "pipefail", "-c", line)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			t.Logf("$ %s\n%s", s.cmd, out)
			missing := missingOutput(string(out), append(s.want, s.fuzzy...), replacer)
			failedAsShown := wantsErr == (err != nil) || strings.HasPrefix(s.cmd, "pkill")
			if len(missing) == 0 && failedAsShown {
				break
			}
			if !settle {
				switch {
				case wantsErr && err == nil:
					t.Fatalf("README command %s succeeded; the README shows it failing:\n%s", s.cmd, out)
				case !failedAsShown:
					t.Fatalf("README command failed (%v): %s\n%s", err, s.cmd, out)
				}
				for _, want := range missing {
					t.Errorf("README command %s\nprinted:\n%s\nwithout the README's %q", s.cmd, out, want)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("README command %s (after a sleep) still printed, a minute on:\n%s\nwithout the README's %q (err %v)", s.cmd, out, missing, err)
			}
		}
		settle = false
	}
	if len(serves) != 3 {
		t.Fatalf("the section starts %d nodes, want 3", len(serves))
	}
	// Start every node that is gone (the killed controller) again.
	for id, line := range serves {
		if exec.Command("pgrep", "-f", "strand serve --node-id "+id+" ").Run() != nil {
			launchShell(t, dir, line).awaitServing(t)
		}
	}
	waitLive(t, replacer, 3)
	// ... and the restarted node rejoins every ISR it left.
	describe := replacer.Replace("./strand topic describe orders --brokers 127.0.0.1:9192")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		out, err := exec.Command("bash", "-c", describe).CombinedOutput()
		// 700 records, or a few more: a produce the README shows refused
		// may have gone through while the min.insync.replicas change
		// spread (the test retries it).
		if err == nil && strings.Contains(string(out), "6 partitions, 70") && strings.Count(string(out), " ok ") == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node never rejoined every ISR of orders:\n%s", out)
		}
	}
}

// missingOutput returns the README's expected lines that out lacks; "…"
// in a line stands for anything.
func missingOutput(out string, want []string, replacer *strings.Replacer) []string {
	have := normalize(out)
	var missing []string
	for _, w := range want {
		for _, part := range strings.Split(normalize(replacer.Replace(w)), "…") {
			if !strings.Contains(have, strings.TrimSpace(part)) {
				missing = append(missing, w)
				break
			}
		}
	}
	return missing
}

// waitLive waits until cluster info, asked of each node, lists n live
// brokers (each node's metadata follows the controller's by a heartbeat).
func waitLive(t *testing.T, replacer *strings.Replacer, n int) {
	t.Helper()
	for _, node := range []string{"127.0.0.1:9192", "127.0.0.1:9292", "127.0.0.1:9392"} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			out, _ := exec.Command("bash", "-c", replacer.Replace("./strand cluster info --brokers "+node)).CombinedOutput()
			if strings.Count(string(out), " live ") == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster info from %s never listed %d live brokers:\n%s", node, n, out)
			}
		}
	}
}

// launchShell runs a README `strand serve` line (through bash, for its
// quoting) in dir, as a process the test kills at the end.
func launchShell(t *testing.T, dir, line string) *serveProc {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = dir
	return startProc(t, cmd)
}
