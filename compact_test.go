package strand_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

// testClock is a clock the test moves by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock(t time.Time) *testClock {
	c := &testClock{}
	c.ns.Store(t.UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func startBroker(t *testing.T, cfg strand.Config) (*strand.Broker, *kgo.Client, *kadm.Client) {
	t.Helper()
	cfg.Dir = t.TempDir()
	b, err := strand.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b, cl, kadm.NewClient(cl)
}

// produce sends each record as its own batch and waits for it.
func produce(t *testing.T, cl *kgo.Client, rs ...*kgo.Record) {
	t.Helper()
	for _, r := range rs {
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func kv(topic, k string, v *string, ts time.Time) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(k), Timestamp: ts}
	if v != nil {
		r.Value = []byte(*v)
	}
	return r
}

func ptr(s string) *string { return &s }

// consumeUntil reads partition 0 of topic from the earliest offset over the
// wire with a fresh client until it has seen offset last, and returns every
// record as "offset:key=value" ("<nil>" for a null value).
func consumeUntil(t *testing.T, addr, topic string, last int64) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consuming %s: saw %v before %v", topic, got, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, r := range fs.Records() {
			v := "<nil>"
			if r.Value != nil {
				v = string(r.Value)
			}
			got = append(got, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, v))
			if r.Offset >= last {
				return got
			}
		}
	}
}

// offsets returns ListOffsets earliest and latest of partition 0, over the wire.
func offsets(t *testing.T, adm *kadm.Client, topic string) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	start, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := start.Lookup(topic, 0)
	e, _ := end.Lookup(topic, 0)
	if s.Err != nil || e.Err != nil {
		t.Fatal(s.Err, e.Err)
	}
	return s.Offset, e.Offset
}

// TestCompactedTopicOverTheWire is the scenario with franz-go: a
// compacted topic gets k1=v1, k2=v2, k1=v3, k2=null in separate segments; after
// the cleaner runs, a consumer from the earliest offset receives k1=v3 and the
// k2 tombstone at their original offsets; once delete.retention.ms has passed
// on the broker's clock and the cleaner runs again, only k1=v3. ListOffsets
// never moves.
func TestCompactedTopicOverTheWire(t *testing.T) {
	clock := newTestClock(time.Now())
	b, cl, adm := startBroker(t, strand.Config{Now: clock.Now})
	const topic = "table"
	err := b.CreateTopic(topic, 1, map[string]string{
		"cleanup.policy":      "compact",
		"segment.bytes":       "100", // one batch per segment
		"delete.retention.ms": "3600000",
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := clock.Now()
	produce(t, cl, kv(topic, "k1", ptr("v1"), ts), kv(topic, "k2", ptr("v2"), ts),
		kv(topic, "k1", ptr("v3"), ts), kv(topic, "k2", nil, ts))
	if err := b.Roll(topic, 0); err != nil { // seal the last one too
		t.Fatal(err)
	}
	if got := consumeUntil(t, b.Addr(), topic, 3); !slices.Equal(got, []string{"0:k1=v1", "1:k2=v2", "2:k1=v3", "3:k2=<nil>"}) {
		t.Fatalf("before cleaning: %v", got)
	}

	b.CleanLogs()
	if got := consumeUntil(t, b.Addr(), topic, 3); !slices.Equal(got, []string{"2:k1=v3", "3:k2=<nil>"}) {
		t.Fatalf("after cleaning: %v, want k1=v3 at 2 and the k2 tombstone at 3", got)
	}
	if s, e := offsets(t, adm, topic); s != 0 || e != 4 {
		t.Fatalf("after cleaning: earliest %d latest %d, want 0 and 4", s, e)
	}

	clock.Advance(time.Hour)
	b.CleanLogs()
	if s, e := offsets(t, adm, topic); s != 0 || e != 4 {
		t.Fatalf("after the delete horizon: earliest %d latest %d, want 0 and 4", s, e)
	}
	// A sentinel marks the end, so the consumer knows it has seen everything.
	produce(t, cl, kv(topic, "end", ptr("."), clock.Now()))
	if got := consumeUntil(t, b.Addr(), topic, 4); !slices.Equal(got, []string{"2:k1=v3", "4:end=."}) {
		t.Fatalf("after the delete horizon: %v, want only k1=v3 (and the sentinel)", got)
	}
}

// TestRetentionOverTheWire: strand.retention.records acts on append, and the
// retention service applies retention.ms on the broker's (injected) clock;
// offsets never renumber.
func TestRetentionOverTheWire(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := newTestClock(now)
	b, cl, adm := startBroker(t, strand.Config{Now: clock.Now, RetentionCheckInterval: 10 * time.Millisecond})

	if err := b.CreateTopic("last4", 1, map[string]string{"strand.retention.records": "4"}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		produce(t, cl, kv("last4", fmt.Sprint("k", i), ptr(fmt.Sprint(i)), now))
	}
	if s, e := offsets(t, adm, "last4"); s != 6 || e != 10 {
		t.Fatalf("retention.records=4 after 10 records: earliest %d latest %d, want 6 and 10", s, e)
	}
	if got := consumeUntil(t, b.Addr(), "last4", 9); !slices.Equal(got, []string{"6:k6=6", "7:k7=7", "8:k8=8", "9:k9=9"}) {
		t.Fatalf("consumed %v", got)
	}

	if err := b.CreateTopic("aged", 1, map[string]string{"retention.ms": "3600000", "segment.bytes": "100"}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		ts := now
		if i < 5 {
			ts = now.Add(-2 * time.Hour) // older than retention.ms on the broker's clock
		}
		produce(t, cl, kv("aged", fmt.Sprint("k", i), ptr(fmt.Sprint(i)), ts))
	}
	// The retention service (every 10ms) deletes the five old segments.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, e := offsets(t, adm, "aged")
		if s == 5 && e == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention.ms: earliest %d latest %d, want 5 and 10", s, e)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := consumeUntil(t, b.Addr(), "aged", 9); len(got) != 5 || got[0] != "5:k5=5" || got[4] != "9:k9=9" {
		t.Fatalf("consumed %v, want offsets 5-9 unchanged", got)
	}
	// Everything expires: the log empties, offsets keep climbing.
	clock.Advance(3 * time.Hour)
	b.ApplyRetention()
	if s, e := offsets(t, adm, "aged"); s != 10 || e != 10 {
		t.Fatalf("all expired: earliest %d latest %d, want 10 and 10", s, e)
	}
	produce(t, cl, kv("aged", "k10", ptr("10"), clock.Now()))
	if got := consumeUntil(t, b.Addr(), "aged", 10); !slices.Equal(got, []string{"10:k10=10"}) {
		t.Fatalf("consumed %v", got)
	}
}
