package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand"
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

// TestServeRefusesLostMeta: with meta.json gone, `strand serve` refuses to
// start over the partitions it cannot explain (deleting nothing), and
// --recover-topics brings them back.
func TestServeRefusesLostMeta(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: data, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, _, err := b.Produce("orders", []byte(strconv.Itoa(i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(data, "meta.json")); err != nil {
		t.Fatal(err)
	}
	refused := startServe(t, "--data-dir", data)
	if refused.addr != "" {
		t.Fatal("serve started without meta.json over existing partitions")
	}
	if err := refused.wait(t, time.Minute); err == nil {
		t.Fatal("serve exited 0")
	}
	for _, want := range []string{"orders-0", "orders-1", "--recover-topics"} {
		if !refused.contains(want) {
			t.Errorf("refusal lacks %q:\n%s", want, refused.logs.String())
		}
	}
	if _, err := os.Stat(filepath.Join(data, "orders-1", "00000000000000000000.log")); err != nil {
		t.Fatalf("partition data touched: %v", err)
	}
	recovered := startServe(t, "--data-dir", data, "--recover-topics")
	if recovered.addr == "" {
		t.Fatalf("--recover-topics did not start:\n%s", recovered.logs.String())
	}
	res := ok(t, recovered.addr, "", "topic", "describe", "orders", "-o", "json")
	if !strings.Contains(res.stdout, `"orders"`) {
		t.Fatalf("describe after recovery: %s", res.stdout)
	}
	recovered.stop(t)
}
