package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveProc is a real `strand serve` process started by a test.
type serveProc struct {
	cmd    *exec.Cmd
	addr   string // the Kafka listener, once it serves
	logs   syncBuffer
	done   chan error
	served chan string
}

var servingRE = regexp.MustCompile(`serving Kafka on (\S+?),`)

// startServe starts `strand serve` with args (plus free-port listeners
// unless args set them) and waits until it serves or exits. It returns the
// process either way; wait tells which.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	return startServeNofile(t, 0, args...)
}

// startServeNofile is startServe with the open-files limit set to nofile
// (0: inherited), as `ulimit -n` would.
func startServeNofile(t *testing.T, nofile int, args ...string) *serveProc {
	t.Helper()
	p := launchServe(t, nofile, args...)
	p.awaitServing(t)
	return p
}

// launchServe starts `strand serve` and returns at once; awaitServing
// waits for it to serve or exit.
func launchServe(t *testing.T, nofile int, args ...string) *serveProc {
	t.Helper()
	full := append(serveDefaults(), args...)
	cmd := exec.Command(strandBin(t), full...)
	if nofile > 0 {
		// sh's ulimit, then exec: the broker itself runs under the limit.
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$@"`, nofile), "sh", strandBin(t)}, full...)...)
	}
	return startProc(t, cmd)
}

// serveDefaults are the arguments every test's `strand serve` starts
// with: free-port listeners, and no metrics, console or registry unless
// asked for.
func serveDefaults() []string {
	return []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", ""}
}

// startProc starts cmd, a `strand serve`, collecting its log.
func startProc(t *testing.T, cmd *exec.Cmd) *serveProc {
	t.Helper()
	p := &serveProc{cmd: cmd, done: make(chan error, 1), served: make(chan string, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	served := p.served
	var once sync.Once
	keep := keptLog(t, p.cmd)
	go func() {
		defer keep.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = p.logs.Write([]byte(line + "\n"))
			_, _ = keep.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				once.Do(func() { served <- m[1] })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
		}
	})
	return p
}

// keptLog returns where a copy of the process's log goes: a file in
// $STRAND_TEST_LOGS named after the test and the process id when that
// is set (to read a long scenario's timing afterwards), else nowhere.
func keptLog(t *testing.T, cmd *exec.Cmd) io.WriteCloser {
	dir := os.Getenv("STRAND_TEST_LOGS")
	if dir == "" {
		return nopWriteCloser{io.Discard}
	}
	name := fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), cmd.Process.Pid)
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Logf("STRAND_TEST_LOGS: %v", err)
		return nopWriteCloser{io.Discard}
	}
	return f
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func (p *serveProc) awaitServing(t *testing.T) {
	t.Helper()
	select {
	case p.addr = <-p.served:
	case err := <-p.done:
		p.done <- err
	case <-time.After(time.Minute):
		t.Fatalf("strand serve neither served nor exited in a minute:\n%s", p.logs.String())
	}
}

// wait waits (bounded) for the process to exit and returns its error.
func (p *serveProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(d):
		t.Fatalf("strand serve still running after %v:\n%s", d, p.logs.String())
		return nil
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.wait(t, time.Minute); err != nil {
		t.Fatalf("strand serve: %v\n%s", err, p.logs.String())
	}
}

// logged waits (bounded) for a log line matching re and returns its first
// submatch.
func (p *serveProc) logged(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(p.logs.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no log line matches %s:\n%s", re, p.logs.String())
	return ""
}

// contains reports whether the process's log holds s.
func (p *serveProc) contains(s string) bool { return strings.Contains(p.logs.String(), s) }
