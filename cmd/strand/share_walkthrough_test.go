package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand"
)

// TestShareWorkQueueWalkthrough is docs/SHARE.md's walkthrough through the
// CLI: a work queue whose share group has a dead-letter topic; a consumer
// that rejects the poison record; the record in `strand dlq list` with its
// reason; `strand dlq redrive` after the fix; the record accepted once.
func TestShareWorkQueueWalkthrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := newRootCmd()
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetIn(strings.NewReader(stdin))
		cmd.SetArgs(append(args, "--brokers", addr))
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("strand %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	run("", "topic", "create", "jobs", "--partitions", "3")
	run("", "group", "config", "workers", "--config", "errors.deadletterqueue.topic.name=jobs.dlq", "--config", "share.auto.offset.reset=earliest")
	run("job-1\njob-2\npoison\njob-3\n", "produce", "jobs")

	out := run("", "consume", "jobs", "--share-group", "workers", "--reject-matching", "poison", "--idle-timeout", "2s", "--progress", "never")
	got := strings.Fields(out)
	slices.Sort(got)
	if want := []string{"job-1", "job-2", "job-3", "poison"}; !slices.Equal(got, want) {
		t.Fatalf("the worker printed %v, want %v", got, want)
	}
	var dead []dlqEntry
	if err := json.Unmarshal([]byte(run("", "dlq", "list", "jobs", "-o", "json")), &dead); err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Value != "poison" || !strings.Contains(dead[0].Reason, "share group workers: rejected by member") {
		t.Fatalf("dlq list: %+v", dead)
	}
	run("", "dlq", "redrive", "jobs")
	out = run("", "consume", "jobs", "--share-group", "workers", "--idle-timeout", "2s", "--progress", "never")
	if strings.TrimSpace(out) != "poison" {
		t.Fatalf("after the redrive the worker printed %q, want the poison record once", out)
	}
	var cfgs []groupConfig
	if err := json.Unmarshal([]byte(run("", "group", "config", "workers", "-o", "json")), &cfgs); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cfgs, groupConfig{Name: "errors.deadletterqueue.topic.name", Value: "jobs.dlq", Source: "group"}) {
		t.Errorf("group config: %+v", cfgs)
	}
}
