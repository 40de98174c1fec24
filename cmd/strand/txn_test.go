package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCLITxn: a producer leaves a transaction open; strand txn list and
// describe show it Ongoing with its partition; strand txn abort writes the
// abort marker on that partition, which lets read_committed readers past
// it; a wrong start offset is refused with what to do next.
func TestCLITxn(t *testing.T) {
	b := startBroker(t)
	ok(t, b.Addr(), "", "topic", "create", "hang", "--partitions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("hanger"), kgo.DefaultProduceTopic("hang"),
		kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("before")).FirstErr(); err == nil {
		t.Fatal("a transactional client produced outside a transaction")
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var listed []txnRow
	decodeJSON(t, ok(t, b.Addr(), "", "txn", "list", "-o", "json").stdout, &listed)
	if len(listed) != 1 || listed[0].TransactionalID != "hanger" || listed[0].State != "Ongoing" {
		t.Fatalf("txn list: %+v", listed)
	}
	var described []txnRow
	decodeJSON(t, ok(t, b.Addr(), "", "txn", "describe", "hanger", "-o", "json").stdout, &described)
	if len(described) != 1 || described[0].State != "Ongoing" || len(described[0].Partitions) != 1 || described[0].Partitions[0] != "hang-0" ||
		described[0].TimeoutMs != 600000 || described[0].StartTimestamp == "" {
		t.Fatalf("txn describe: %+v", described)
	}
	table := ok(t, b.Addr(), "", "txn", "describe", "hanger").stdout
	if !strings.Contains(table, "Ongoing") || !strings.Contains(table, "hang-0") {
		t.Fatalf("txn describe table:\n%s", table)
	}

	if r := runCLI(t, b.Addr(), "", "txn", "abort", "--topic", "hang", "--partition", "0", "--start-offset", "5"); r.code == 0 ||
		!strings.Contains(r.stderr, "no open transaction starts at offset 5") {
		t.Fatalf("abort at a wrong offset: code %d, stderr %q", r.code, r.stderr)
	}
	out := ok(t, b.Addr(), "", "txn", "abort", "--topic", "hang", "--partition", "0", "--start-offset", "0").stdout
	if !strings.Contains(out, "aborted producer") {
		t.Fatalf("txn abort: %q", out)
	}
	// The partition's transaction is over: its record is aborted and a
	// read_committed reader reaches the end.
	rc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("hang"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	adm := kadm.NewClient(rc)
	ends, err := adm.ListEndOffsets(ctx, "hang")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.ListCommittedOffsets(ctx, "hang")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("hang", 0)
	stable, _ := committed.Lookup("hang", 0)
	if end.Offset != 2 || stable.Offset != 2 {
		t.Fatalf("after the abort: end offset %d, read_committed end %d; want 2 and 2", end.Offset, stable.Offset)
	}
}

// TestCLIProduceTransactional: strand produce --transactional-id writes its
// records in one transaction, --abort aborts it, and strand consume
// --isolation read_committed prints only committed records and stops at
// the end (a transaction's marker is the partition's last offset).
func TestCLIProduceTransactional(t *testing.T) {
	b := startBroker(t)
	ok(t, b.Addr(), "", "topic", "create", "eos", "--partitions", "1")
	ok(t, b.Addr(), "one\ntwo\n", "produce", "eos", "--transactional-id", "cli-1")
	r := ok(t, b.Addr(), "lost\n", "produce", "eos", "--transactional-id", "cli-1", "--abort")
	if !strings.Contains(r.stderr, "aborted the transaction") {
		t.Fatalf("--abort: stderr %q", r.stderr)
	}
	ok(t, b.Addr(), "three\n", "produce", "eos", "--transactional-id", "cli-1")
	if r := runCLI(t, b.Addr(), "", "produce", "eos", "--abort", "-v", "x"); r.code == 0 || !strings.Contains(r.stderr, "--abort needs --transactional-id") {
		t.Fatalf("--abort alone: code %d stderr %q", r.code, r.stderr)
	}
	r = ok(t, b.Addr(), "", "consume", "eos", "--isolation", "read_committed", "--progress", "always", "--idle-timeout", "90s")
	if r.stdout != "one\ntwo\nthree\n" || !strings.Contains(r.stderr, "reached the end") {
		t.Fatalf("read_committed: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = ok(t, b.Addr(), "", "consume", "eos", "--progress", "always", "--idle-timeout", "90s")
	if r.stdout != "one\ntwo\nlost\nthree\n" || !strings.Contains(r.stderr, "reached the end") {
		t.Fatalf("read_uncommitted: stdout %q, stderr %q", r.stdout, r.stderr)
	}
}
