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

// TestCLIACL: strand acl create, list (table and -o json) and delete
// against a broker with an authorizer, as the super user; a user the ACL
// names can then produce under the prefix only, with a clear error
// outside it; a non-super user cannot manage ACLs.
func TestCLIACL(t *testing.T) {
	t.Parallel()
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SASLUsers: map[string]string{"admin": "adminpw", "alice": "alicepw"},
		Authorizer: true, SuperUsers: []string{"User:admin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := func(user string, args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, strandBin(t), args...)
		cmd.Env = append(os.Environ(), "STRAND_BROKERS="+b.Addr(), "STRAND_SASL_USER="+user, "STRAND_SASL_PASSWORD="+user+"pw")
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
	for _, topic := range []string{"orders.eu", "payments"} {
		if out, code := run("admin", "topic", "create", topic); code != 0 {
			t.Fatalf("create %s: exit %d\n%s", topic, code, out)
		}
	}
	if out, code := run("admin", "acl", "create", "--allow", "User:alice", "--operation", "write", "--operation", "describe",
		"--topic", "orders.", "--prefixed"); code != 0 || !strings.Contains(out, "created: Allow User:alice Write on Prefixed Topic \"orders.\"") {
		t.Fatalf("acl create: exit %d\n%s", code, out)
	}
	out, code := run("admin", "acl", "list", "-o", "json")
	var rows []aclRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 || rows[0].Principal != "User:alice" || rows[0].PatternType != "Prefixed" {
		t.Fatalf("acl list -o json: exit %d\n%s", code, out)
	}
	if out, code := run("admin", "acl", "list", "--principal", "User:alice"); code != 0 || !strings.Contains(out, "orders.") || !strings.Contains(out, "PERMISSION") {
		t.Fatalf("acl list: exit %d\n%s", code, out)
	}
	if out, code := run("alice", "produce", "orders.eu", "--value", "ok"); code != 0 {
		t.Fatalf("alice produce under the prefix: exit %d\n%s", code, out)
	}
	if out, code := run("alice", "produce", "payments", "--value", "no", "--timeout", "5s"); code == 0 || !strings.Contains(strings.ToLower(out), "authoriz") {
		t.Fatalf("alice produce outside the prefix: exit %d\n%s", code, out)
	}
	if out, code := run("alice", "acl", "list"); code == 0 || !strings.Contains(strings.ToLower(out), "authoriz") {
		t.Fatalf("alice listed ACLs: exit %d\n%s", code, out)
	}
	if out, code := run("admin", "acl", "delete"); code != exitUsage {
		t.Fatalf("acl delete without a filter: exit %d\n%s", code, out)
	}
	if out, code := run("admin", "acl", "delete", "--topic", "orders.", "--prefixed", "-o", "json"); code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 {
		t.Fatalf("acl delete: exit %d\n%s", code, out)
	}
	if out, code := run("admin", "acl", "list", "-o", "json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("acl list after delete: exit %d\n%s", code, out)
	}
}
