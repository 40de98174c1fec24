package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// TestDLQCommands: a jsonschema topic quarantines records of the wrong
// shape; "strand dlq list" shows them with reasons; after the schema is
// altered to accept them, an interrupted redrive and a resumed one move
// each exactly once, and a rerun writes nothing.
func TestDLQCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("pay"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	schema := `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"strand.validation": kadm.StringPtr("jsonschema"), "strand.validation.schema": &schema}, "pay"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		v := fmt.Sprintf(`{"amount":%d}`, i)
		if i%2 == 1 {
			v = fmt.Sprintf(`{"amount":"%d"}`, i)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out, err := runGroupCLI(t, ctx, addr, "dlq", "list", "pay", "-o", "json")
	if err != nil {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	var rows []dlqEntry
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rows) != 10 || rows[0].Reason != "jsonschema: /amount: got string, want number" || rows[0].SourceTopic != "pay" {
		t.Fatalf("dlq list: %+v", rows)
	}
	table, err := runGroupCLI(t, ctx, addr, "dlq", "list", "pay")
	if err != nil || !strings.Contains(table, "REASON") || !strings.Contains(table, "got string, want number") {
		t.Fatalf("dlq list table: %v\n%s", err, table)
	}

	accept := `{"type":"object","properties":{"amount":{"type":["number","string"]}},"required":["amount"]}`
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "strand.validation.schema", Value: &accept}}, "pay"); err != nil {
		t.Fatal(err)
	}
	o := &clientOptions{brokers: addr, timeout: 30 * time.Second}
	ictx, stop := context.WithCancel(ctx)
	sum, err := redriveDLQ(ictx, o, "pay", func(int64) {}, func(int64) { stop() })
	if err == nil || !sum.Interrupted || sum.Redriven == 0 || sum.Redriven == 10 {
		t.Fatalf("interrupted redrive: %+v %v", sum, err)
	}
	first := sum.Redriven
	out, err = runGroupCLI(t, ctx, addr, "dlq", "redrive", "pay", "-o", "json")
	if err != nil {
		t.Fatalf("redrive: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Redriven != 10-first || sum.AlreadyDone != first || sum.StillInvalid != 0 {
		t.Fatalf("resumed redrive %+v after %d", sum, first)
	}
	out, err = runGroupCLI(t, ctx, addr, "dlq", "redrive", "pay")
	if err != nil || !strings.HasPrefix(out, "redriven 0, still invalid 0, already done 10") {
		t.Fatalf("rerun: %v\n%s", err, out)
	}

	// The topic now holds each of the 20 records exactly once.
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("pay"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	for n := 0; n < 20; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 20", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)]++
			n++
		})
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s is in the topic %d times", k, n)
		}
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct keys", len(seen))
	}
}

// TestDLQRedriveCrashBeforeCommit: a redrive that dies after producing a
// chunk and committing its position in the transaction, before ending it,
// leaves the transaction open; the next run (same transactional id) aborts
// it and redrives everything, and a read_committed consumer sees each
// record exactly once.
func TestDLQRedriveCrashBeforeCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("crash"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"strand.validation": kadm.StringPtr("json")}, "crash"); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		v := fmt.Sprintf(`{"i":%d}`, i)
		if i%2 == 1 {
			v = fmt.Sprintf(`bad %d`, i)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: int32((i / 2) % 2), Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "strand.validation", Value: kadm.StringPtr("none")}}, "crash"); err != nil {
		t.Fatal(err)
	}
	o := &clientOptions{brokers: addr, timeout: 30 * time.Second}
	crash := errors.New("crash")
	redriveAfterProduce = func() error { return crash }
	sum, err := redriveDLQ(ctx, o, "crash", func(int64) {}, func(int64) {})
	redriveAfterProduce = nil
	if !errors.Is(err, crash) || sum.Interrupted {
		t.Fatalf("crashed redrive: %+v %v", sum, err)
	}
	sum, err = redriveDLQ(ctx, o, "crash", func(int64) {}, func(int64) {})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Redriven != 6 || sum.AlreadyDone != 0 {
		t.Fatalf("resumed redrive %+v: want the crashed (aborted) chunk redriven again, with the rest", sum)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("crash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	for n := 0; n < 12; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 12", n)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)]++; n++ })
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s is in the topic %d times", k, n)
		}
	}
}
