package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesALockedDataDir: a second `strand serve` on a running
// broker's data directory exits at once, naming the directory and the
// holder's pid; after the holder is killed with SIGKILL, a new one starts.
func TestServeRefusesALockedDataDir(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	first := startServe(t, "--data-dir", data)
	if first.addr == "" {
		t.Fatalf("first broker did not start:\n%s", first.logs.String())
	}
	second := startServe(t, "--data-dir", data)
	if second.addr != "" {
		t.Fatalf("second broker serves %s on a locked directory", second.addr)
	}
	if err := second.wait(t, time.Minute); err == nil {
		t.Fatal("second broker exited 0")
	}
	out := second.logs.String()
	for _, want := range []string{data, "in use by process " + strconv.Itoa(first.cmd.Process.Pid)} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal does not name %q:\n%s", want, out)
		}
	}
	_ = first.cmd.Process.Kill()
	_ = first.wait(t, time.Minute)
	third := startServe(t, "--data-dir", data)
	if third.addr == "" {
		t.Fatalf("broker did not start after the holder was killed:\n%s", third.logs.String())
	}
	third.stop(t)
}
