package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The README test runs every shell block of README.md, in order, as a
// newcomer would in a fresh directory, and checks what each command prints
// against the "# …" lines under it. A README change that breaks a command,
// or an output that drifts from what the README shows, fails it.
//
// How the README is read:
//
//   - A section is a "## " heading with what follows it ("### " subsections
//     included). Every ```sh block is run, in README order, in one bash
//     session (the reader's second terminal): variables exported, jobs
//     started with & and files written stay for the blocks after.
//   - A block preceded by <!-- readme-test: skip (why) --> is not run; the
//     reason is required, and there may be at most maxSkippedBlocks.
//   - Lines starting with "#" right after a command are its expected
//     output, in order, each matching one whole output line (blanks
//     collapsed) with "…" standing for anything. A command whose expected
//     output starts with "error:" must fail; any other must succeed.
//   - Every 127.0.0.1:PORT the README names is a free loopback port of the
//     test's choosing, so the test never touches another broker on a
//     shared machine; the defaults a command falls back to (--brokers, the
//     registry, the console; serve's listeners) point at the README's
//     default addresses, mapped the same way.
//   - "unset STRAND_BROKERS" (back to the default broker) sets it to the
//     test's stand-in for the default again.
//   - ./strand (and strand on the PATH) is the binary built from this
//     tree; "go build … ./cmd/strand" is therefore not run.
//   - A "strand serve" without & is the reader's other terminal: the test
//     starts it beside the session and waits until it serves; a later one
//     replaces it (Ctrl-C), and so does a section's first "strand serve
//     … &" (the README says to stop the tour's broker first).
//   - "sleep N" waits for the cluster to notice something: the next
//     command is instead retried until it prints what the README shows,
//     for at most a minute (a loaded machine takes longer), and so is a
//     "cluster info" or "cluster features" right behind a retried one
//     (each node applies the change a moment apart).
//   - A command that runs kcat or curl is skipped when the tool is not
//     installed (CI installs both).

// maxSkippedBlocks bounds the blocks the test does not run: a README that
// cannot be followed unattended is a README that can drift.
const maxSkippedBlocks = 5

// readmeBlock is one ```sh block.
type readmeBlock struct {
	section string
	line    int    // of the opening fence, 1-based
	skip    string // the marker's reason; "" runs the block
	cmds    []readmeCmd
}

type readmeCmd struct {
	text string   // continuation lines joined
	want []string // expected output lines
}

var (
	skipMarkerRE = regexp.MustCompile(`^<!-- readme-test: skip \((.*)\) -->$`)
	loopbackRE   = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// parseReadme returns the README's shell blocks in order, and the sections
// that have any.
func parseReadme(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var (
		blocks   []readmeBlock
		section  string
		fence    string // "" outside a code block
		cur      *readmeBlock
		lastText string // the last non-blank line outside code blocks
		cont     string // a command continued with a trailing backslash
	)
	for i, line := range strings.Split(readme, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && strings.HasPrefix(trimmed, "```"):
			fence = trimmed
			if trimmed == "```sh" {
				cur = &readmeBlock{section: section, line: i + 1}
				if strings.HasPrefix(lastText, "<!-- readme-test") {
					m := skipMarkerRE.FindStringSubmatch(lastText)
					if m == nil || strings.TrimSpace(m[1]) == "" {
						t.Fatalf("README.md:%d: marker %q: want <!-- readme-test: skip (the reason) -->", i, lastText)
					}
					cur.skip = m[1]
				}
			}
		case fence != "" && trimmed == "```":
			if cur != nil {
				blocks = append(blocks, *cur)
			}
			fence, cur = "", nil
		case fence != "":
			if cur == nil || trimmed == "" {
				continue
			}
			if cont != "" {
				trimmed = cont + " " + trimmed
				cont = ""
			}
			if c, ok := strings.CutSuffix(trimmed, `\`); ok {
				cont = strings.TrimSpace(c)
				continue
			}
			if strings.HasPrefix(trimmed, "#") {
				if len(cur.cmds) > 0 {
					last := &cur.cmds[len(cur.cmds)-1]
					last.want = append(last.want, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
				}
				continue
			}
			cur.cmds = append(cur.cmds, readmeCmd{text: trimmed})
		case strings.HasPrefix(trimmed, "## "):
			section = strings.TrimPrefix(trimmed, "## ")
		case trimmed != "":
			lastText = trimmed
		}
	}
	return blocks
}

// TestReadme runs the README: see the comment above.
func TestReadme(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseReadme(t, string(raw))
	var skipped []string
	sections := map[string]int{} // runnable commands per section with shell blocks
	for _, b := range blocks {
		if _, ok := sections[b.section]; !ok {
			sections[b.section] = 0
		}
		if b.skip != "" {
			skipped = append(skipped, fmt.Sprintf("README.md:%d (%s): %s", b.line, b.section, b.skip))
			continue
		}
		sections[b.section] += len(b.cmds)
	}
	t.Logf("blocks not run:\n  %s", strings.Join(skipped, "\n  "))
	if len(skipped) > maxSkippedBlocks {
		t.Fatalf("%d README blocks are marked skip, at most %d may be", len(skipped), maxSkippedBlocks)
	}
	for s, n := range sections {
		if n == 0 {
			t.Errorf("README section %q has shell blocks but no command the test runs", s)
		}
	}
	for _, want := range []string{"Five-minute tour", "Schemas", "Exactly-once: transactions",
		"Consumer groups: KIP-848, and rebalances you can see", "A three-node cluster on one machine"} {
		if sections[want] == 0 {
			t.Errorf("README section %q is gone or has no command the test runs", want)
		}
	}
	if t.Failed() {
		return
	}
	r := newReadmeRun(t, string(raw))
	for _, b := range blocks {
		if b.skip != "" {
			continue
		}
		if r.section != b.section {
			r.section, r.stoppedTerminal = b.section, false
			t.Logf("=== section %q", b.section)
		}
		for _, c := range b.cmds {
			if !r.run(c, b.line) {
				return
			}
		}
	}
}

// readmeRun is the state of one walk through the README.
type readmeRun struct {
	t        *testing.T
	dir      string
	addrs    *strings.Replacer
	defaults map[string]string // README default address → the test's
	session  *shellSession
	terminal *serveProc // the "other terminal"'s broker
	settle   bool       // a "sleep" came before the next command
	section  string
	// stoppedTerminal: this section has started a background broker, so
	// the terminal's was stopped.
	stoppedTerminal bool
}

func newReadmeRun(t *testing.T, readme string) *readmeRun {
	dir := t.TempDir()
	bin := strandBin(t)
	if err := os.Symlink(bin, filepath.Join(dir, "strand")); err != nil {
		t.Fatal(err)
	}
	var pairs []string
	seen := map[string]bool{}
	for _, a := range loopbackRE.FindAllString(readme, -1) {
		if !seen[a] {
			seen[a] = true
			pairs = append(pairs, a, freeAddr(t))
		}
	}
	addrs := strings.NewReplacer(pairs...)
	r := &readmeRun{t: t, dir: dir, addrs: addrs, defaults: map[string]string{}}
	for _, d := range []string{"127.0.0.1:9092", "127.0.0.1:9644", "127.0.0.1:9645", "127.0.0.1:8081"} {
		if !seen[d] {
			t.Fatalf("the README no longer names the default address %s", d)
		}
		r.defaults[d] = addrs.Replace(d)
	}
	env := append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"STRAND_BROKERS="+r.defaults["127.0.0.1:9092"],
		"STRAND_SCHEMA_REGISTRY=http://"+r.defaults["127.0.0.1:8081"],
		"STRAND_CONSOLE="+r.defaults["127.0.0.1:9645"])
	r.session = startSession(t, dir, env)
	return r
}

// run runs one README command and checks it; false stops the walk.
func (r *readmeRun) run(c readmeCmd, blockLine int) bool {
	t := r.t
	t.Helper()
	// The built binary stands in for go run (no source in the scratch
	// directory), as the README says it may.
	line := strings.ReplaceAll(r.addrs.Replace(c.text), "go run ./cmd/strand ", "./strand ")
	want := make([]string, len(c.want))
	for i, w := range c.want {
		want[i] = r.addrs.Replace(w)
	}
	switch {
	case strings.HasPrefix(c.text, "go build"):
		if !strings.Contains(c.text, "./cmd/strand") {
			t.Errorf("README.md:%d builds something other than ./cmd/strand: %s", blockLine, c.text)
		}
		return true // strandBin built it from this tree
	case c.text == "unset STRAND_BROKERS" || strings.HasPrefix(c.text, "unset STRAND_BROKERS "):
		// Back to the default broker: the test's stands for it.
		line = "export STRAND_BROKERS=" + r.defaults["127.0.0.1:9092"]
	case strings.HasPrefix(c.text, "sleep "):
		r.settle = true
		return true
	}
	if tool := missingTool(c.text, "kcat", "curl"); tool != "" {
		t.Logf("skipped (no %s installed): %s", tool, c.text)
		return true
	}
	if serveRE.MatchString(c.text) {
		line = r.serveDefaults(line)
		if !strings.HasSuffix(line, "&") {
			return r.startTerminal(c, line, want)
		}
		if !r.stoppedTerminal {
			r.stopTerminal()
			r.stoppedTerminal = true
		}
		out, _, ok := r.session.run(t, line, time.Minute)
		if !ok {
			return false
		}
		return r.awaitServing(c.text, out, want)
	}
	wantsErr := len(want) > 0 && strings.HasPrefix(want[0], "error:")
	deadline := time.Now().Add(time.Minute)
	for {
		began := time.Now()
		out, rc, ok := r.session.run(t, line, 2*time.Minute)
		if !ok {
			return false
		}
		t.Logf("$ %s   (%v, exit %d)\n%s", c.text, time.Since(began).Round(time.Millisecond), rc, out)
		missing := matchLines(out, want)
		failedAsShown := wantsErr == (rc != 0)
		if missing == "" && failedAsShown {
			break
		}
		if r.settle && time.Now().Before(deadline) {
			time.Sleep(time.Second)
			continue
		}
		switch {
		case !failedAsShown && wantsErr:
			t.Errorf("README command %q succeeded; the README shows it failing", c.text)
		case !failedAsShown:
			t.Errorf("README command %q failed (exit %d):\n%s", c.text, rc, out)
		default:
			t.Errorf("README command %q printed:\n%s\nwhich lacks the README's line %q (or has it out of order)", c.text, out, missing)
		}
		return false
	}
	// A status command read the change from one node; the next may ask
	// another that applies it a moment later, so it settles too.
	r.settle = r.settle && statusRE.MatchString(c.text)
	return true
}

// statusRE matches the read-only commands that show the cluster's state.
var statusRE = regexp.MustCompile(`^\./strand cluster (info|features)\s*$`)

var serveRE = regexp.MustCompile(`(^|\s|/)strand serve\b`)

// serveDefaults adds the listeners a README serve line leaves to their
// defaults, as the test's mapped addresses: on a shared machine the real
// defaults may belong to someone else.
func (r *readmeRun) serveDefaults(line string) string {
	amp := strings.HasSuffix(line, "&")
	line = strings.TrimSpace(strings.TrimSuffix(line, "&"))
	for flag, def := range map[string]string{"--listen": "127.0.0.1:9092", "--metrics-listen": "127.0.0.1:9644",
		"--console-listen": "127.0.0.1:9645", "--schema-registry-listen": "127.0.0.1:8081"} {
		if !strings.Contains(line, flag+" ") && !strings.Contains(line, flag+"=") {
			line += " " + flag + " " + r.defaults[def]
		}
	}
	if amp {
		line += " &"
	}
	return line
}

// startTerminal runs a foreground "strand serve" as the reader's other
// terminal would, replacing the one before.
func (r *readmeRun) startTerminal(c readmeCmd, line string, want []string) bool {
	t := r.t
	r.stopTerminal()
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = r.dir
	cmd.Env = r.session.env
	p := startProc(t, cmd)
	p.awaitServing(t)
	if p.addr == "" {
		t.Errorf("README command %q did not serve:\n%s", c.text, p.logs.String())
		return false
	}
	r.terminal = p
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		missing := matchLines(p.logs.String(), want)
		if missing == "" {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("README command %q logged:\n%s\nwhich lacks the README's line %q", c.text, p.logs.String(), missing)
			return false
		}
	}
}

// stopTerminal stops the terminal's broker as Ctrl-C does.
func (r *readmeRun) stopTerminal() {
	if r.terminal == nil {
		return
	}
	_ = r.terminal.cmd.Process.Signal(os.Interrupt)
	if err := r.terminal.wait(r.t, time.Minute); err != nil {
		r.t.Errorf("the terminal's strand serve, stopped with Ctrl-C: %v\n%s", err, r.terminal.logs.String())
	}
	r.terminal = nil
}

// awaitServing waits until a broker started with & logs that it serves,
// and the lines the README shows under it.
func (r *readmeRun) awaitServing(cmd, outFile string, want []string) bool {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		log, _ := os.ReadFile(outFile)
		if servingRE.Match(log) && matchLines(string(log), want) == "" {
			return true
		}
		if time.Now().After(deadline) {
			r.t.Errorf("README command %q did not serve within a minute:\n%s", cmd, log)
			return false
		}
	}
}

// matchLines returns the first expected line that no output line matches
// after the previous expected line's match ("" when all do).
func matchLines(out string, want []string) string {
	lines := strings.Split(normalize(out), "\n")
	next := 0
	for _, w := range want {
		re := wantRE(w)
		i := slices.IndexFunc(lines[next:], re.MatchString)
		if i < 0 {
			return w
		}
		next += i + 1
	}
	return ""
}

// wantRE is an expected line as a pattern for a whole output line. An
// ellipsis standing alone between words may stand for nothing too (an
// empty table cell).
func wantRE(w string) *regexp.Regexp {
	if normalize(w) == "…" {
		return regexp.MustCompile(`^.*$`) // any one line
	}
	const gap = "(?: .* | )"
	q := " " + regexp.QuoteMeta(normalize(w)) + " "
	q = strings.ReplaceAll(q, " … ", gap)
	q = strings.ReplaceAll(q, "…", ".*")
	if rest, ok := strings.CutPrefix(q, gap); ok {
		q = "(?:.* )?" + rest
	} else {
		q = q[1:]
	}
	if rest, ok := strings.CutSuffix(q, gap); ok {
		q = rest + "(?: .*)?"
	} else {
		q = q[:len(q)-1]
	}
	return regexp.MustCompile(`^` + q + `$`)
}

// missingTool returns the first of tools the command runs that is not
// installed, or "".
func missingTool(cmd string, tools ...string) string {
	for _, tool := range tools {
		if !regexp.MustCompile(`(^|[\s|(])` + tool + `\s`).MatchString(cmd) {
			continue
		}
		if _, err := exec.LookPath(tool); err != nil {
			return tool
		}
	}
	return ""
}

// normalize collapses runs of blanks and trims each line, so that expected
// output compares without depending on table padding.
func normalize(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// shellSession is one bash process the README's commands run in, in turn,
// as in a terminal: each command's output goes to a file of its own (a
// job it starts with & keeps writing there), and bash reports its exit
// status on a pipe the test reads.
type shellSession struct {
	dir   string
	env   []string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan string // status lines
	n     int
	mu    sync.Mutex
}

func startSession(t *testing.T, dir string, env []string) *shellSession {
	t.Helper()
	s := &shellSession{dir: dir, env: env, done: make(chan string, 1)}
	s.cmd = exec.Command("bash", "--noprofile", "--norc", "-o", "pipefail")
	s.cmd.Dir, s.cmd.Env = dir, env
	// Its own process group: the test ends every process the README
	// started (brokers left running with &) by the group's id, and
	// nothing else.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	s.cmd.Stderr = &stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.done <- sc.Text()
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.stdin.Close()
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	})
	return s
}

// run runs line in the session and returns the file its output went to
// and its exit status; ok is false (and the test failed) if it did not
// finish within limit.
func (s *shellSession) run(t *testing.T, line string, limit time.Duration) (out string, rc int, ok bool) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	outFile := filepath.Join(s.dir, fmt.Sprintf(".readme-out-%d", s.n))
	// The newline before "}" ends a trailing comment; stdin is /dev/null
	// so that no command reads the session's own script.
	script := fmt.Sprintf("{ %s\n} </dev/null >%q 2>&1; echo \"__readme_status %d $?\"\n", line, outFile, s.n)
	if _, err := io.WriteString(s.stdin, script); err != nil {
		t.Errorf("README session: %v", err)
		return "", 0, false
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case status, open := <-s.done:
			if !open {
				t.Errorf("README session ended running %q", line)
				return "", 0, false
			}
			var n int
			if _, err := fmt.Sscanf(status, "__readme_status %d %d", &n, &rc); err != nil || n != s.n {
				continue
			}
			if strings.HasSuffix(strings.TrimSpace(line), "&") {
				return outFile, rc, true // a job: its output keeps coming
			}
			raw, _ := os.ReadFile(outFile)
			return string(raw), rc, true
		case <-timer.C:
			raw, _ := os.ReadFile(outFile)
			t.Errorf("README command %q still running after %v:\n%s", line, limit, raw)
			return "", 0, false
		}
	}
}
