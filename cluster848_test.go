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

// TestCluster848Group: franz-go consumers on the KIP-848 protocol against a
// 3-node cluster. The group's coordinator is the leader of its
// __consumer_offsets partition; when that node stops, the partition's new
// leader replays the group's records and the members carry on at their
// epochs with their partitions: no record is consumed twice and every one
// is committed. The nodes talk mutual TLS (startTLSCluster).
func TestCluster848Group(t *testing.T) {
	c, _ := startTLSCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{seeds, kgo.RetryTimeout(time.Minute)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	const topic, group = "orders848", "g848"
	adm := kadm.NewClient(newClient())
	if _, err := adm.CreateTopic(ctx, 6, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: fmt.Append(nil, "k", i%30), Value: fmt.Append(nil, i)}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 600)

	var (
		mu        sync.Mutex
		seen      = map[string]int{} // "partition/offset" → deliveries
		committed int
	)
	var wg sync.WaitGroup
	for i := range 2 {
		cl := newClient(kgo.ClientID(fmt.Sprint("m", i)), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 500)
				recs := fs.Records()
				mu.Lock()
				for _, r := range recs {
					seen[fmt.Sprint(r.Partition, "/", r.Offset)]++
				}
				mu.Unlock()
				if len(recs) > 0 && cl.CommitRecords(ctx, recs...) == nil {
					mu.Lock()
					committed += len(recs)
					mu.Unlock()
				}
				cl.AllowRebalance()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, ctx.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	consumed := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) >= n && committed >= n
		}
	}
	waitFor("600 records consumed and committed", consumed(600))

	var before kadm.DescribedConsumerGroup
	waitFor("a stable group of 2", func() bool {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		before = ds[group]
		return err == nil && before.Err == nil && before.State == "Stable" && len(before.Members) == 2
	})
	coord := before.Coordinator.NodeID
	t.Logf("group %s: coordinator node %d, epoch %d", group, coord, before.Epoch)

	// The coordinator stops: its __consumer_offsets partition moves, and
	// the new leader loads the group from the replicated records.
	if err := c.nodes[coord].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, coord)
	var after kadm.DescribedConsumerGroup
	last := time.Now()
	waitFor("the group on a new coordinator", func() bool {
		// A fresh admin client each time: kadm keeps a coordinator it
		// cannot dial cached.
		cl, err := kgo.NewClient(seeds)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ds, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, group)
		after = ds[group]
		if time.Since(last) > 2*time.Second {
			last = time.Now()
			t.Logf("describe: %v %v coordinator %d state %q epoch %d/%d members %d", err, after.Err, after.Coordinator.NodeID, after.State, after.Epoch, after.AssignmentEpoch, len(after.Members))
			for _, m := range after.Members {
				t.Logf("  member %s epoch %d assigned %v target %v", m.MemberID, m.MemberEpoch, m.Assignment, m.TargetAssignment)
			}
		}
		return err == nil && after.Err == nil && after.Coordinator.NodeID != coord && after.State == "Stable" && len(after.Members) == 2
	})
	ids := map[string]bool{}
	for _, m := range before.Members {
		ids[m.MemberID] = true
	}
	for _, m := range after.Members {
		if !ids[m.MemberID] {
			t.Fatalf("member %s after the failover was not in the group before: %+v → %+v", m.MemberID, before.Members, after.Members)
		}
	}
	t.Logf("group %s: coordinator node %d after the failover, epoch %d", group, after.Coordinator.NodeID, after.Epoch)

	produce(600, 900)
	waitFor("900 records consumed and committed", consumed(900))
	mu.Lock()
	defer mu.Unlock()
	for k, n := range seen {
		if n > 1 {
			t.Errorf("record %s delivered %d times", k, n)
		}
	}
	if len(seen) != 900 {
		t.Fatalf("%d distinct records consumed, want 900", len(seen))
	}
}
