package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand"
)

// TestCLIQuota: strand quota set, list (table and -o json) and remove
// against a real broker; an unknown combination is a usage error.
func TestCLIQuota(t *testing.T) {
	t.Parallel()
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, strandBin(t), args...)
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), code
	}
	if out, code := run("quota", "set", "--user", "alice", "--producer-byte-rate", "1048576"); code != 0 || !strings.Contains(out, "set producer_byte_rate of user=alice to 1048576") {
		t.Fatalf("quota set: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "set", "--default-user", "--client-id", "etl", "--consumer-byte-rate", "2000000"); code != 0 {
		t.Fatalf("quota set default user: exit %d\n%s", code, out)
	}
	out, code := run("quota", "list", "-o", "json")
	var qs []listedQuota
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 2 {
		t.Fatalf("quota list -o json: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "list"); code != 0 || !strings.Contains(out, "user=<default>,client-id=etl") || !strings.Contains(out, "1048576") {
		t.Fatalf("quota list: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "set", "--user", "a", "--default-user", "--producer-byte-rate", "1"); code != exitUsage {
		t.Fatalf("--user with --default-user: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "remove", "--user", "alice", "--producer-byte-rate"); code != 0 {
		t.Fatalf("quota remove: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "list", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 1 {
		t.Fatalf("quota list after remove: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "set", "--client-id", "batch", "--request-percentage", "50"); code != 0 || !strings.Contains(out, "request_percentage") {
		t.Fatalf("quota set --request-percentage: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "list", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) != 2 {
		t.Fatalf("quota list with request_percentage: exit %d\n%s", code, out)
	}
	if out, code := run("quota", "remove", "--client-id", "batch", "--request-percentage"); code != 0 {
		t.Fatalf("quota remove --request-percentage: exit %d\n%s", code, out)
	}
}
