package main

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKIP848BrokerKilledMidReconciliation is B-T6 with a real process: a
// `strand serve` SIGKILLed while KIP-848 members reconcile (a fourth member
// joined a group of three, and partitions are being revoked and handed
// over). After the restart the same members carry on: the group is Stable
// again with every partition owned once, no partition was ever held by two
// members (the clients' own assign/revoke/lost callbacks), every record is
// consumed, and no committed offset went back.
func TestKIP848BrokerKilledMidReconciliation(t *testing.T) {
	const parts, topic, group = 12, "orders848", "g848-kill"
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"--data-dir", dir, "--listen", addr,
		"--group-consumer-heartbeat-interval", "250ms", "--group-consumer-session-timeout", "20s"}
	broker := startServe(t, args...)
	defer func() { broker.stop(t) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if r, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	produced := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := produced; i < produced+n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i % 101)), Value: []byte(strconv.Itoa(i))})
		}
		if err := admCl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		produced += n
	}

	var mu sync.Mutex
	owner := map[int32]string{}    // partition → member holding it, from the callbacks
	committed := map[int32]int64{} // the highest offset a commit was acknowledged for
	seen := map[string]int{}
	assigned := func(name string, ps map[string][]int32) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps[topic] {
			if o, held := owner[p]; held && o != name {
				t.Errorf("partition %d assigned to %s while %s holds it", p, name, o)
			}
			owner[p] = name
		}
	}
	released := func(name string, ps map[string][]int32) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps[topic] {
			if owner[p] == name {
				delete(owner, p)
			}
		}
	}
	var wg sync.WaitGroup
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
		wg.Wait()
	}()
	start := func(name string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer(),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(time.Minute),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { assigned(name, ps) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { released(name, ps) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { released(name, ps) }))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				fs := cl.PollRecords(ctx, 500)
				if fs.IsClientClosed() || ctx.Err() != nil {
					cl.AllowRebalance()
					return
				}
				recs := fs.Records()
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
				}
				mu.Unlock()
				if len(recs) > 0 {
					// Slow members: a revocation waits for this commit,
					// which keeps the group reconciling long enough to
					// be killed in the middle.
					time.Sleep(100 * time.Millisecond)
					if err := cl.CommitRecords(ctx, recs...); err == nil {
						mu.Lock()
						for _, r := range recs {
							committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
						}
						mu.Unlock()
					}
				}
				cl.AllowRebalance()
			}
		}()
	}
	describe := func() (kadm.DescribedConsumerGroup, error) {
		ds, err := adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return kadm.DescribedConsumerGroup{}, err
		}
		return ds[group], ds[group].Err
	}
	stable := func(n int) kadm.DescribedConsumerGroup {
		t.Helper()
		for ctx.Err() == nil {
			d, err := describe()
			held := 0
			for _, m := range d.Members {
				if !maps.EqualFunc(m.Assignment, m.TargetAssignment, func(a, b map[int32]struct{}) bool { return maps.Equal(a, b) }) {
					held = -1
					break
				}
				held += len(m.Assignment[topic])
			}
			if err == nil && d.State == "Stable" && len(d.Members) == n && held == parts {
				return d
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("group not stable with %d members: %v", n, ctx.Err())
		return kadm.DescribedConsumerGroup{}
	}
	waitConsumed := func() {
		t.Helper()
		for ctx.Err() == nil {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n == produced {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("records consumed: %v", ctx.Err())
	}

	for i := range 3 {
		start(fmt.Sprintf("m%d", i))
	}
	produce(6000)
	before := stable(3)
	waitConsumed()

	// A fourth member joins under load; the broker is killed as soon as the
	// group is seen reconciling.
	produce(30_000)
	start("m3")
	var snap kadm.DescribedConsumerGroup
	for ctx.Err() == nil {
		d, err := describe()
		if err == nil && d.Epoch > before.Epoch && (d.State == "Reconciling" || d.State == "Assigning") {
			snap = d
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := broker.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = broker.wait(t, 10*time.Second)
	pending := 0
	for _, m := range snap.Members {
		if !maps.EqualFunc(m.Assignment, m.TargetAssignment, func(a, b map[int32]struct{}) bool { return maps.Equal(a, b) }) {
			pending++
		}
	}
	t.Logf("SIGKILLed the broker with the group %s at epoch %d (assignment epoch %d), %d of %d members not at their target",
		snap.State, snap.Epoch, snap.AssignmentEpoch, pending, len(snap.Members))
	if pending == 0 {
		t.Fatalf("killed outside a reconciliation: %+v", snap)
	}
	mu.Lock()
	committedAtKill := maps.Clone(committed)
	mu.Unlock()
	killedAt := time.Now()
	broker = startServe(t, args...)

	after := stable(4)
	t.Logf("after the restart: Stable with %d members at epoch %d, %v after the kill", len(after.Members), after.Epoch,
		time.Since(killedAt).Round(time.Millisecond))
	fetched, err := adm.FetchOffsets(ctx, group)
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, fetched.Error())
	}
	for p, c := range committedAtKill {
		if o, ok := fetched.Lookup(topic, p); !ok || o.At < c {
			t.Errorf("partition %d: committed %d before the kill, %+v after", p, c, o)
		}
	}
	produce(1200)
	waitConsumed()
	mu.Lock()
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	held := len(owner)
	mu.Unlock()
	t.Logf("%d records, all consumed; %d delivered again (uncommitted at the kill); %d partitions held", produced, dups, held)
	if held != parts {
		t.Fatalf("clients hold %d partitions, want %d", held, parts)
	}
}
