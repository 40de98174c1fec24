package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// TestGroupShareCommands: strand group list and describe show a KIP-932
// share group — its type, state, members and each member's partitions —
// beside the other kinds.
func TestGroupShareCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), ConsoleAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	adm, err := kadm.NewOptClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if r, err := adm.CreateTopic(ctx, 3, 1, nil, "queue"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx, &kgo.Record{Topic: "queue", Value: []byte("x")}, &kgo.Record{Topic: "queue", Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("workers"), kgo.ConsumeTopics("queue"), kgo.ClientID("worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	go func() {
		for ctx.Err() == nil {
			if member.PollFetches(ctx).IsClientClosed() {
				return
			}
		}
	}()

	var d []groupDescription
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := runGroupCLI(t, ctx, addr, "group", "describe", "workers", "-o", "json")
		if err == nil && json.Unmarshal([]byte(out), &d) == nil && len(d) == 1 && len(d[0].Members) == 1 && len(d[0].Members[0].Assigned["queue"]) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe never showed the member with its three partitions: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d[0].Type != "share" || d[0].State != "Stable" || d[0].Members[0].ClientID != "worker-1" {
		t.Errorf("describe: %+v", d[0])
	}
	out, err := runGroupCLI(t, ctx, addr, "group", "describe", "workers", "--console", b.ConsoleAddr())
	if err != nil || !strings.Contains(out, "share") || !strings.Contains(out, "queue[0,1,2]") || !strings.Contains(out, "IN FLIGHT") {
		t.Errorf("describe as a table: %v\n%s", err, out)
	}
	// The share-partitions the member fetched from, from the console.
	waitFor := time.Now().Add(30 * time.Second)
	for {
		out, err = runGroupCLI(t, ctx, addr, "group", "describe", "workers", "-o", "json", "--console", b.ConsoleAddr())
		if err == nil && json.Unmarshal([]byte(out), &d) == nil && len(d) == 1 && len(d[0].SharePartitions) == 3 {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatalf("describe never showed the three share-partitions: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range d[0].SharePartitions {
		if p.Topic != "queue" || p.Start > p.End || p.InFlight != int(p.End-p.Start) {
			t.Errorf("share-partition %+v", p)
		}
	}
	out, err = runGroupCLI(t, ctx, addr, "group", "list", "-o", "json")
	var rows []groupSummary
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("group list: %v\n%s", err, out)
	}
	found := false
	for _, r := range rows {
		found = found || (r.Group == "workers" && r.Type == "share" && r.State == "Stable")
	}
	if !found {
		t.Errorf("group list does not show the share group: %+v", rows)
	}

	// seek: refused while the member is there; then the share-partitions
	// start again at the log start.
	if out, err := runGroupCLI(t, ctx, addr, "group", "seek", "workers", "--to-earliest", "--topic", "queue"); err == nil || !strings.Contains(err.Error(), "live member") {
		t.Errorf("seek with a live member: %v\n%s", err, out)
	}
	member.Close()
	out, err = runGroupCLI(t, ctx, addr, "group", "seek", "workers", "--to-earliest", "--topic", "queue", "-o", "json")
	if err != nil {
		t.Fatalf("seek: %v\n%s", err, out)
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, "workers")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, ok := offs["workers"].Offsets.Lookup("queue", p); !ok || o.StartOffset != 0 {
			t.Errorf("after seek --to-earliest: partition %d at %+v, want 0", p, o)
		}
	}
}
