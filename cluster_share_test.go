package strand

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	// share.auto.offset.reset is latest (the default; no group config set):
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

// TestClusterShareGroupOffsets: DescribeShareGroupOffsets on a cluster sees
// the share-partitions of every node, not only those of the partitions the
// answering node leads: the group's coordinator asks each
// share-partition's share coordinator for its summary. A share group
// (share.auto.offset.reset=earliest, a group config kept in the metadata)
// accepts every record of a three-partition topic whose partitions are led
// by different nodes; then each share-partition starts at its log end,
// with no lag. Deleting the group then leaves its configs, as in Kafka.
func TestClusterShareGroupOffsets(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	adm := kadm.NewClient(c.client(1, seeds))
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "so"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "so-workers"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, c.client(2, seeds))
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %+v", err, resp)
	}
	prod := c.client(1, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPartition = 10
	for p := range int32(3) {
		for i := range perPartition {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "so", Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl := c.client(3, seeds, kgo.ShareGroup("so-workers"), kgo.ConsumeTopics("so"), kgo.FetchMaxWait(100*time.Millisecond))
	for got := 0; got < 3*perPartition; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records delivered", got, 3*perPartition)
		}
		var rs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { rs = append(rs, r) })
		cl.MarkAcks(kgo.AckAccept, rs...)
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		got += len(rs)
	}
	cl.Close()
	if ls := c.leaders(1, "so"); ls[0] == ls[1] && ls[1] == ls[2] {
		t.Logf("every partition is led by node %d: the test proves less", ls[0])
	}
	var d kadm.DescribedShareGroupOffsets
	for {
		ds, err := adm.DescribeShareGroupOffsets(ctx, "so-workers")
		if err != nil {
			t.Fatalf("%v; the last answer: %+v", err, d)
		}
		d = ds["so-workers"]
		done := d.Err == nil
		for p := range int32(3) {
			o, ok := d.Offsets.Lookup("so", p)
			done = done && ok && o.Err == nil && o.StartOffset == perPartition && o.Lag == 0
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("share group offsets: %+v", d)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// DeleteGroups leaves the group's configs in the metadata, as Kafka's.
	for {
		r, err := adm.DeleteGroup(ctx, "so-workers")
		if err == nil && r.Err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("delete group: %v %v", err, r.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "so-workers"
	dreq.Resources = append(dreq.Resources, dres)
	rc, err := dreq.RequestWith(ctx, c.client(1, seeds))
	if err != nil {
		t.Fatal(err)
	}
	kept := false
	for _, r := range rc.Resources {
		for _, c := range r.Configs {
			kept = kept || c.Name == "share.auto.offset.reset" && c.Value != nil && *c.Value == "earliest" && c.Source == kmsg.ConfigSourceGroupConfig
		}
	}
	if !kept {
		t.Errorf("after DeleteGroups the group's configs are %+v, want share.auto.offset.reset=earliest kept", rc.Resources)
	}
}

// TestClusterShareDeadLettersLedElsewhere: a share-partition's dead letters
// reach the dead-letter partition wherever it is led. An auto-created
// dead-letter topic has its source's replicas and so, at first, its
// leaders; but after a failover the two elections may choose different
// nodes, and a leader that appended its dead letters to its own follower
// copy failed every rejection with NOT_LEADER_OR_FOLLOWER (the client fails
// such an acknowledgement and does not retry it: the records came back
// after their locks expired and failed again, a stall). Here the
// dead-letter topic is created led by another node than the share-partition
// from the start: each rejection must succeed and its record be in the
// dead-letter topic.
func TestClusterShareDeadLettersLedElsewhere(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, dlq, group = "sdl", "sdl.dlq", "sdl-workers"
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	adm := kadm.NewClient(c.client(1, seeds))
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	leader := c.leaders(1, topic)[0]
	replicas := []int32{leader%3 + 1, (leader+1)%3 + 1, leader} // led by another node
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = dlq, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	creq.Topics = append(creq.Topics, ct)
	if resp, err := creq.RequestWith(ctx, c.client(1, seeds)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", dlq, err, resp)
	}
	for c.leaders(1, dlq)[0] != replicas[0] {
		if ctx.Err() != nil {
			t.Fatalf("%s-0 is led by %d, want %d", dlq, c.leaders(1, dlq)[0], replicas[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	setGroupConfigs(t, ctx, c, c.client(2, seeds), group, map[string]string{"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": dlq})
	rejectPoison(t, ctx, c, seeds, group, topic, dlq, fmt.Sprintf("the dead-letter partition is led by node %d, the share-partition by node %d", replicas[0], leader))
}

// TestClusterShareDeadLettersNodeDown: the first dead letter of a share
// group comes while a node is down: the dead-letter topic is auto-created
// on the live brokers (its source's assignment names the dead node, which
// the controller refuses: INVALID_REPLICA_ASSIGNMENT failed the rejection,
// and every one after it, for as long as the node stayed down).
func TestClusterShareDeadLettersNodeDown(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, dlq, group = "sdn", "sdn.dlq", "sdn-workers"
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	if r, err := kadm.NewClient(c.client(1, seeds)).CreateTopic(ctx, 1, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	setGroupConfigs(t, ctx, c, c.client(2, seeds), group, map[string]string{"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": dlq})
	leader := c.leaders(1, topic)[0]
	down := leader%3 + 1 // a follower: the share-partition stays where it is
	if err := c.nodes[down].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, down)
	var up []string
	for n, a := range c.addrs {
		if n != down {
			up = append(up, a)
		}
	}
	rejectPoison(t, ctx, c, kgo.SeedBrokers(up...), group, topic, dlq, fmt.Sprintf("node %d down", down))
}

// setGroupConfigs sets a group's configs (IncrementalAlterConfigs, GROUP)
// and waits until every running node of c has them (a cluster keeps them
// in its metadata, which each node applies a moment later).
func setGroupConfigs(t *testing.T, ctx context.Context, c *testCluster, cl *kgo.Client, group string, configs map[string]string) {
	t.Helper()
	defer func() {
		for n, node := range c.nodes {
			for k, v := range configs {
				for node.b.Share().Coordinator.Configs(group)[k] != v {
					if ctx.Err() != nil {
						t.Fatalf("node %d has group %s's configs %v, want %s=%s", n, group, node.b.Share().Coordinator.Configs(group), k, v)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}
	}()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, cfg)
	}
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %+v", err, resp)
	}
}

// rejectPoison produces ten records to topic's partition 0, three of them
// poison, and has a share consumer of group reject the poison and accept
// the rest: every acknowledgement must succeed, and the dead-letter topic
// dlq hold each poison record once.
func rejectPoison(t *testing.T, ctx context.Context, c *testCluster, seeds kgo.Opt, group, topic, dlq, setting string) {
	t.Helper()
	prod := c.client(1, seeds, kgo.DefaultProduceTopic(topic))
	const jobs, poison = 10, 3
	for i := range jobs {
		v := fmt.Sprint("job-", i)
		if i%(jobs/poison) == 0 && i/(jobs/poison) < poison {
			v = fmt.Sprint("poison-", i)
		}
		if err := prod.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var ackErrs []error
	var mu sync.Mutex
	cl := c.client(3, seeds, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				if r.Err != nil {
					ackErrs = append(ackErrs, r.Err)
				}
			}
		}))
	defer cl.Close()
	rejected := map[string]bool{}
	for done := 0; done < jobs; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records acknowledged", done, jobs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if strings.HasPrefix(string(r.Value), "poison-") {
				cl.MarkAcks(kgo.AckReject, r)
				rejected[string(r.Value)] = true
			} else {
				cl.MarkAcks(kgo.AckAccept, r)
			}
			done++
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(ackErrs) > 0 {
			t.Fatalf("acknowledgements failed (%s): %v", setting, ackErrs)
		}
		mu.Unlock()
	}
	if len(rejected) != poison {
		t.Fatalf("rejected %v, want %d records", rejected, poison)
	}
	cons := c.client(1, seeds, kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]int{}
	for len(got) < poison {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the dead-letter topic holds %v, want %v", got, rejected)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
	}
	for v, n := range got {
		if !rejected[v] || n != 1 {
			t.Errorf("%s is in the dead-letter topic %d times (rejected: %t)", v, n, rejected[v])
		}
	}
}
