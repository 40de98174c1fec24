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

// TestCLIUser: strand user create (password on stdin), list (table and -o
// json) and delete against a SASL broker, as a fixed admin user; the
// created user then authenticates with each mechanism and PLAIN, and no
// longer after delete; a mismatched --iterations is a usage error.
func TestCLIUser(t *testing.T) {
	t.Parallel()
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SASLUsers: map[string]string{"admin": "adminpw"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(stdin, user, password string, args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, strandBin(t), args...)
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr(), "STRAND_SASL_USER="+user, "STRAND_SASL_PASSWORD="+password)
		cmd.Stdin = strings.NewReader(stdin)
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
	if out, code := run("pw-of-erin\n", "admin", "adminpw", "user", "create", "erin"); code != 0 || !strings.Contains(out, `user "erin" can authenticate with SCRAM-SHA-256 and SCRAM-SHA-512`) {
		t.Fatalf("user create: exit %d\n%s", code, out)
	}
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"} {
		if out, code := run("", "erin", "pw-of-erin", "topic", "list", "--sasl-mechanism", mech); code != 0 {
			t.Fatalf("erin over %s: exit %d\n%s", mech, code, out)
		}
	}
	out, code := run("", "admin", "adminpw", "user", "list", "-o", "json")
	var users []listedUser
	if code != 0 || json.Unmarshal([]byte(out), &users) != nil || len(users) != 1 || users[0].User != "erin" || len(users[0].Credentials) != 2 {
		t.Fatalf("user list -o json: exit %d\n%s", code, out)
	}
	if out, code := run("", "admin", "adminpw", "user", "list"); code != 0 || !strings.Contains(out, "SCRAM-SHA-512 (4096 iterations)") || strings.Contains(out, "pw-of-erin") {
		t.Fatalf("user list: exit %d\n%s", code, out)
	}
	if out, code := run("x\n", "admin", "adminpw", "user", "create", "frank", "--iterations", "100"); code != exitUsage {
		t.Fatalf("--iterations 100: exit %d\n%s", code, out)
	}
	if out, code := run("", "admin", "adminpw", "user", "delete", "erin"); code != 0 || !strings.Contains(out, `deleted user "erin"`) {
		t.Fatalf("user delete: exit %d\n%s", code, out)
	}
	if out, code := run("", "erin", "pw-of-erin", "topic", "list", "--timeout", "5s"); code == 0 {
		t.Fatalf("a deleted user listed topics:\n%s", out)
	}
	if out, code := run("", "admin", "adminpw", "user", "delete", "erin"); code == 0 || !strings.Contains(out, "no user") {
		t.Fatalf("deleting a missing user: exit %d\n%s", code, out)
	}
}
