package strand

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterShareLeaderMoves: share consumers of a partition whose leader
// is on another node than the group's coordinator and the share-partition's
// share coordinator (in this process, so the race detector watches the
// inter-node path); when the partition's leader stops, the new leader
// reloads the share-partition's state from its coordinator and serves the
// rest: every record is accepted, none delivered again after its
// acknowledgement succeeded.
func TestClusterShareLeaderMoves(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "sq"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 2 {
		cl := c.client(int32(i+1), kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3]), kgo.ShareGroup("sg"), kgo.ConsumeTopics("sq"),
			kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryTimeout(time.Minute))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				var got []*kgo.Record
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					if acked[string(r.Value)] {
						t.Errorf("%s delivered again after its acknowledgement succeeded", r.Value)
					}
					got = append(got, r)
				})
				mu.Unlock()
				cl.MarkAcks(kgo.AckAccept, got...)
				if cl.FlushAcks(ctx) == nil {
					mu.Lock()
					for _, r := range got {
						acked[string(r.Value)] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	prod := c.client(1, kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3]), kgo.DefaultProduceTopic("sq"))
	count := func(prefix string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for v := range acked {
			var i int
			if _, err := fmt.Sscanf(v, prefix+"%d", &i); err == nil {
				n++
			}
		}
		return n
	}
	// share.auto.offset.reset is latest (no group configs on a cluster):
	// the share-partition starts where the first fetch finds the log.
	for i := 0; count("warm-") == 0; i++ {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("warm-", i))).FirstErr(); err != nil || ctx.Err() != nil {
			t.Fatalf("warm-up: %v %v", err, ctx.Err())
		}
		time.Sleep(200 * time.Millisecond)
	}
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("job-", i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	await := func(n int) {
		t.Helper()
		for count("job-") < n {
			if ctx.Err() != nil {
				t.Fatalf("%d of %d acknowledged", count("job-"), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	produce(0, 100)
	await(100)
	leader := c.leaders(1, "sq")[0]
	if err := c.nodes[leader].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, leader)
	produce(100, 100)
	await(200)
}
