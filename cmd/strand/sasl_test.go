package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand"
)

// TestCLISASL: client commands authenticate with --sasl-user and the
// password from STRAND_SASL_PASSWORD, with each mechanism; a wrong
// password exits non-zero, and a password is never taken from a flag.
func TestCLISASL(t *testing.T) {
	t.Parallel()
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SASLUsers: map[string]string{"ops": "hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(password string, args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, strandBin(t), args...)
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr(), "STRAND_SASL_PASSWORD="+password)
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
	if out, code := run("hunter2", "topic", "create", "audited", "--sasl-user", "ops", "--sasl-mechanism", "PLAIN"); code != 0 {
		t.Fatalf("create over PLAIN: exit %d\n%s", code, out)
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		if out, code := run("hunter2", "topic", "list", "--sasl-user", "ops", "--sasl-mechanism", mech); code != 0 || !strings.Contains(out, "audited") {
			t.Fatalf("list over %s: exit %d\n%s", mech, code, out)
		}
	}
	if out, code := run("guess", "topic", "list", "--timeout", "5s", "--sasl-user", "ops"); code == 0 {
		t.Fatalf("a wrong password listed topics:\n%s", out)
	}
	if out, code := run("", "topic", "list", "--sasl-user", "ops"); code == 0 || !strings.Contains(out, "STRAND_SASL_PASSWORD") {
		t.Fatalf("no password: exit %d\n%s", code, out)
	}
}
