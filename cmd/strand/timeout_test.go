package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// blackHole is a listener that accepts connections and never answers: a
// broker that hangs (stopped, wedged, or a wrong port behind a proxy).
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestClientCommandsHonourTimeout: against a broker that accepts and never
// answers, every client command gives up at its --timeout (2 s here, the
// default is 15 s) with an error, instead of waiting for minutes.
func TestClientCommandsHonourTimeout(t *testing.T) {
	t.Parallel()
	addr := blackHole(t)
	for _, args := range [][]string{
		{"topic", "list"}, {"topic", "create", "x"}, {"topic", "describe", "x"},
		{"topic", "alter", "x", "--config", "retention.ms=1"}, {"topic", "delete", "x"}, {"topic", "table", "x"},
		{"group", "list"}, {"group", "describe", "g"}, {"group", "lag", "g"},
		{"group", "seek", "g", "--topic", "x", "--to-earliest"},
		{"dlq", "list", "x"}, {"dlq", "redrive", "x"},
		{"produce", "x"}, {"consume", "x"}, {"consume", "x", "--follow"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			r := runCLI(t, addr, "a\nb\n", append(args, "--timeout", "2s")...)
			took := time.Since(start)
			if r.code == 0 {
				t.Fatalf("exit 0 against a broker that never answers:\n%s", r.stdout)
			}
			if r.code == exitUsage {
				t.Fatalf("usage error: %s", r.stderr)
			}
			if took > 12*time.Second {
				t.Fatalf("took %v with --timeout 2s:\n%s", took.Round(time.Millisecond), r.stderr)
			}
		})
	}
}

// startCLI starts the binary without waiting for it.
func startCLI(t *testing.T, brokers string, stdin io.Reader, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	cmd := exec.Command(strandBin(t), append([]string{"--brokers", brokers}, args...)...)
	cmd.Stdin = stdin
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, &errOut, done
}

// exitWithin waits for the process to exit within d and returns its code.
func exitWithin(t *testing.T, done chan error, d time.Duration, stderr *bytes.Buffer) int {
	t.Helper()
	select {
	case err := <-done:
		done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(d):
		t.Fatalf("still running %v after the signal:\n%s", d, stderr.String())
		return 0
	}
}

// TestClientCommandsHonourSIGINT: with a long --timeout, an interrupt
// stops a command waiting on a hung broker; a command that finishes its
// step before stopping (produce flushes what it read) quits at a second
// interrupt with status 130.
func TestClientCommandsHonourSIGINT(t *testing.T) {
	t.Parallel()
	addr := blackHole(t)
	for _, args := range [][]string{
		{"dlq", "redrive", "x"}, {"consume", "x", "--follow"}, {"topic", "list"}, {"group", "lag", "g"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			cmd, stderr, done := startCLI(t, addr, strings.NewReader(""), append(args, "--timeout", "5m")...)
			time.Sleep(time.Second)
			_ = cmd.Process.Signal(syscall.SIGINT)
			if code := exitWithin(t, done, 10*time.Second, stderr); code == 0 {
				t.Fatalf("exit 0 after an interrupt:\n%s", stderr.String())
			}
		})
	}
	t.Run("produce twice", func(t *testing.T) {
		t.Parallel()
		// An *os.File, so the process reads it directly: exec's copying
		// goroutine would keep Wait from returning while the pipe is open.
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pw.Close(); pr.Close() })
		cmd, stderr, done := startCLI(t, addr, pr, "produce", "x", "--timeout", "5m")
		if _, err := pw.Write([]byte("a\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGINT) // stops reading; the flush waits on the hung broker
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGINT)
		if code := exitWithin(t, done, 10*time.Second, stderr); code != 130 {
			t.Fatalf("exit %d after two interrupts, want 130:\n%s", code, stderr.String())
		}
	})
}
