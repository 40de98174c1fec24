package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterShareDeadLetters: a share group's configs on a three-node
// cluster (kept in its metadata) name a dead-letter topic and a
// delivery-count limit of 2; every node serves them. Three share consumers
// accept the jobs, reject the poison records and release the flaky ones
// every time: the rejected and the over-limit records are in the
// dead-letter topic with their reasons, once each, and nowhere else;
// `strand dlq list` shows them by reason and `strand dlq redrive` (run
// twice) brings each back exactly once, to be accepted after the fix.
func TestClusterShareDeadLetters(t *testing.T) {
	c := newProcCluster(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.tailLogs(30))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, group, parts = "dq", "dq-workers", 3
	brokers := c.brokers(0)
	prod := manualProducer(t, brokers)
	createReplicated(t, ctx, kadm.NewClient(prod), topic, parts)
	ok(t, brokers, "", "group", "config", group, "--config", "errors.deadletterqueue.topic.name="+topic+".dlq",
		"--config", "share.delivery.count.limit=2", "--config", "share.auto.offset.reset=earliest")
	for n := 1; n <= c.size; n++ { // every node reads them from its metadata image
		awaitGroupConfig(t, ctx, c.addrs[n], group, groupConfig{Name: "share.delivery.count.limit", Value: "2", Source: "group"})
	}

	var rs []*kgo.Record
	for i := range 60 {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "job-%d", i)})
	}
	for i := range 6 {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "poison-%d", i)},
			&kgo.Record{Topic: topic, Partition: int32(i % parts), Value: fmt.Appendf(nil, "flaky-%d", i)})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var fixed atomic.Bool
	w := startShareWorkDeciding(t, ctx, brokers, group, topic, func(v string) kgo.AckStatus {
		switch {
		case fixed.Load() || strings.HasPrefix(v, "job-"):
			return kgo.AckAccept
		case strings.HasPrefix(v, "poison-"):
			return kgo.AckReject
		}
		return kgo.AckRelease
	})
	dead := awaitDeadLetters(t, ctx, brokers, topic, 12)
	byReason := map[string][]string{}
	for _, d := range dead {
		switch {
		case strings.Contains(d.Reason, "share group "+group+": rejected by member"):
			byReason["rejected"] = append(byReason["rejected"], d.Value)
		case strings.Contains(d.Reason, "share group "+group+": delivery-count limit 2 reached (released by member"):
			byReason["limit"] = append(byReason["limit"], d.Value)
		default:
			t.Errorf("dead letter %q: reason %q", d.Value, d.Reason)
		}
	}
	for reason, prefix := range map[string]string{"rejected": "poison-", "limit": "flaky-"} {
		got := byReason[reason]
		slices.Sort(got)
		var want []string
		for i := range 6 {
			want = append(want, fmt.Sprint(prefix, i))
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("dead letters %s: %v, want %v once each", reason, got, want)
		}
	}
	w.await(ctx, 60)
	w.mu.Lock()
	for v := range w.accepted {
		if !strings.HasPrefix(v, "job-") && !w.rejected[v] {
			t.Errorf("%s was accepted before the fix", v)
		}
	}
	before := maps.Clone(w.deliveries)
	w.mu.Unlock()

	fixed.Store(true)
	ok(t, brokers, "", "dlq", "redrive", topic)
	ok(t, brokers, "", "dlq", "redrive", topic) // nothing left to move
	for _, prefix := range []string{"poison-", "flaky-"} {
		for w.countAccepted(prefix) < 6 {
			if ctx.Err() != nil {
				t.Fatalf("redriven %s records accepted: %d of 6", prefix, w.countAccepted(prefix))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(time.Second) // a second copy would come at once
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	for v, n := range w.deliveries {
		if strings.HasPrefix(v, "job-") && n != 1 {
			t.Errorf("%s delivered %d times", v, n)
		}
		if !strings.HasPrefix(v, "job-") && (n-before[v] != 1 || w.acceptances[v] != 1) {
			t.Errorf("%s delivered %d times after the redrive and accepted %d times, want once", v, n-before[v], w.acceptances[v])
		}
	}
	if n := len(awaitDeadLetters(t, ctx, brokers, topic, 12)); n != 12 {
		t.Errorf("after the redrive the dead-letter topic lists %d records, want the 12 it had", n)
	}
}

// countAccepted is how many values with prefix had an acceptance
// confirmed.
func (w *shareWork) countAccepted(prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for v, k := range w.acceptances {
		if strings.HasPrefix(v, prefix) && k > 0 {
			n++
		}
	}
	return n
}

// awaitGroupConfig waits until the node at addr describes group with want.
func awaitGroupConfig(t *testing.T, ctx context.Context, addr, group string, want groupConfig) {
	t.Helper()
	for {
		var cfgs []groupConfig
		r := runCLI(t, addr, "", "group", "config", group, "-o", "json")
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &cfgs) == nil && slices.Contains(cfgs, want) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("node %s never described %s with %+v: %s %s", addr, group, want, r.stdout, r.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// awaitDeadLetters waits until `strand dlq list topic` shows at least n
// records and returns them.
func awaitDeadLetters(t *testing.T, ctx context.Context, brokers, topic string, n int) []dlqEntry {
	t.Helper()
	for {
		var dead []dlqEntry
		r := runCLI(t, brokers, "", "dlq", "list", topic, "-o", "json")
		if r.code == 0 && json.Unmarshal([]byte(r.stdout), &dead) == nil && len(dead) >= n {
			return dead
		}
		if ctx.Err() != nil {
			t.Fatalf("dlq list %s: %d records, want %d: %s %s", topic, len(dead), n, r.stdout, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
