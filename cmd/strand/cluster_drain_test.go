package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestClusterDrainUnderLoad: on four nodes under an idempotent acks=all
// load (RF 3, min ISR 2), strand cluster drain moves every replica off
// node 4 — the load's topic, a topic of its own and the internal topics
// it holds — waits for the moves and says so; afterwards node 4 is in no
// replica set, every acknowledged record is in the log once at its
// offset, and a dry run on the drained node plans nothing.
func TestClusterDrainUnderLoad(t *testing.T) {
	c := newProcClusterN(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "drained"
	cl := c.nodeClient(t, 1)
	defer cl.Close()
	awaitBrokers(t, cl, 4)
	ok(t, c.addrs[1], "", "topic", "create", "solo", "--replica-assignment", "4,4,4")
	ok(t, c.addrs[1], "a\nb\nc\n", "produce", "solo")
	ch, prod, stopLoad := c.startLoad(ctx, t, topic, 200)
	time.Sleep(time.Second) // some records before the moves start

	r := ok(t, c.brokers(0), "", "cluster", "drain", "--node-id", "4", "--timeout", "2m")
	if !strings.Contains(r.stdout, "draining node 4: moving ") || !strings.Contains(r.stdout, "node 4 drained in ") || !strings.Contains(r.stderr, "moved 0 of ") {
		t.Fatalf("drain:\n%s\n%s", r.stdout, r.stderr)
	}
	t.Logf("drain: %s%s", r.stdout, r.stderr)
	time.Sleep(time.Second) // some records after
	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()

	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if slices.Contains(p.Replicas, 4) {
				t.Fatalf("%s-%d still on node 4 after the drain: replicas %v", td.Topic, p.Partition, p.Replicas)
			}
		}
	}
	t.Log(ch.verify(t, finalLog(ctx, t, c.brokers(4), topic)))
	got := strings.Fields(ok(t, c.brokers(4), "", "consume", "solo", "--count", "3", "--format", `%s\n`).stdout)
	if slices.Sort(got); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("the single-replica topic after its move: %q", got)
	}
	if r := ok(t, c.brokers(4), "", "cluster", "drain", "--node-id", "4", "--dry-run"); !strings.Contains(r.stdout, "node 4 holds no replicas") {
		t.Fatalf("dry run on a drained node:\n%s", r.stdout)
	}
}
