package strand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isrs returns each partition's ISR (sorted) as node id's Metadata says.
func (c *testCluster) isrs(id int32, topic string) [][]int32 {
	c.t.Helper()
	resp := c.metadata(id, []string{topic})
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return nil
	}
	out := make([][]int32, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = slices.Sorted(slices.Values(p.ISR))
	}
	return out
}

// waitISR waits until every partition's ISR is want, as node id says.
func (c *testCluster) waitISR(id int32, topic string, want []int32, within time.Duration) {
	c.t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(50 * time.Millisecond) {
		got := c.isrs(id, topic)
		ok := len(got) > 0
		for _, isr := range got {
			ok = ok && slices.Equal(isr, want)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("ISRs of %s from node %d: %v, want %v everywhere", topic, id, got, want)
		}
	}
}

// produceAll produces n records to topic with acks=all (idempotent) and
// returns their values, failing the test on any error.
func produceAll(ctx context.Context, t *testing.T, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	var vals []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i % 7)), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		vals = append(vals, v)
	}
	return vals
}

// consumeAll reads topic from the start through node seed until it has
// want records, and fails on a duplicate or a missing one.
func consumeAll(ctx context.Context, t *testing.T, c *testCluster, seed int32, topic string, want []string) {
	t.Helper()
	cl := c.client(seed, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	for len(seen) < len(want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d acknowledged records: %v", len(seen), len(want), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for _, v := range want {
		switch seen[v] {
		case 1:
		case 0:
			t.Fatalf("acknowledged record %s is missing", v)
		default:
			t.Fatalf("record %s read %d times", v, seen[v])
		}
	}
}

// TestReplicationSeedExercise is the seed's replication extension: RF=3
// with min.insync.replicas=2 — stop a replica and it leaves the ISR while
// acks=all keeps working; stop a second and acks=all fails
// NOT_ENOUGH_REPLICAS; restart both and they catch up and rejoin; every
// acknowledged record is read back exactly once. Five nodes, all voters,
// so that two stopped replicas leave the metadata quorum a majority.
func TestReplicationSeedExercise(t *testing.T) {
	c := startClusterN(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsgStr("2")}, "r"); err != nil {
		t.Fatal(err)
	}
	resp := c.metadata(1, []string{"r"})
	for deadline := time.Now().Add(10 * time.Second); len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1; resp = c.metadata(1, []string{"r"}) {
		if time.Now().After(deadline) {
			t.Fatalf("metadata of r: %+v", resp.Topics)
		}
		time.Sleep(50 * time.Millisecond)
	}
	replicas := resp.Topics[0].Partitions[0].Replicas // leader first
	leader, f1, f2 := replicas[0], replicas[1], replicas[2]
	sorted := func(ids ...int32) []int32 { return slices.Sorted(slices.Values(ids)) }
	c.waitISR(leader, "r", sorted(leader, f1, f2), 10*time.Second)
	prod := c.client(leader)
	acked := produceAll(ctx, t, prod, "r", "a", 300)

	stop := func(id int32) {
		t.Helper()
		if err := c.nodes[id].Close(); err != nil {
			t.Fatal(err)
		}
		delete(c.nodes, id)
	}
	stop(f1)
	c.waitISR(leader, "r", sorted(leader, f2), 15*time.Second)
	c.waitMetric("strand_under_replicated_partitions", 1, leader)
	var page struct {
		Partitions []struct {
			Leader          int32   `json:"leader"`
			Replicas        []int32 `json:"replicas"`
			ISR             []int32 `json:"isr"`
			UnderReplicated bool    `json:"under_replicated"`
		} `json:"partitions"`
	}
	// Node f2's metadata follows the controller's by a moment.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c.getJSON(c.nodes[f2].ConsoleAddr(), "/api/v1/topics/r", &page)
		if len(page.Partitions) == 1 && page.Partitions[0].UnderReplicated && page.Partitions[0].Leader == leader &&
			len(page.Partitions[0].Replicas) == 3 && slices.Equal(sorted(page.Partitions[0].ISR...), sorted(leader, f2)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console's topic page on node %d: %+v", f2, page)
		}
	}
	var brokersPage struct {
		Brokers []struct {
			ID    int32    `json:"node_id"`
			Leads []string `json:"leads"`
		} `json:"brokers"`
	}
	c.getJSON(c.nodes[f2].ConsoleAddr(), "/api/v1/brokers", &brokersPage)
	for _, b := range brokersPage.Brokers {
		if slices.Contains(b.Leads, "r-0") != (b.ID == leader) {
			t.Fatalf("the console's brokers page: node %d leads %v; r-0's leader is %d", b.ID, b.Leads, leader)
		}
	}
	acked = append(acked, produceAll(ctx, t, prod, "r", "b", 300)...)

	stop(f2)
	c.waitISR(leader, "r", []int32{leader}, 15*time.Second)
	c.waitMetric("strand_under_min_isr_partitions", 1, leader)
	strict := c.client(leader, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	err := strict.ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with one in-sync replica of min 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}

	for _, id := range []int32{f1, f2} {
		if err := c.start(id); err != nil {
			t.Fatal(err)
		}
	}
	c.waitISR(leader, "r", sorted(leader, f1, f2), 30*time.Second)
	c.waitMetric("strand_under_replicated_partitions", 0, leader)
	if n := c.metric("strand_isr_expands_total", leader); n < 2 {
		t.Fatalf("strand_isr_expands_total on the leader is %v after two followers rejoined", n)
	}
	acked = append(acked, produceAll(ctx, t, prod, "r", "c", 300)...)
	consumeAll(ctx, t, c, f2, "r", acked)
}

// TestReplicationLeaderFailover: the leader of every partition stops; new
// leaders come from the ISR, and every record acknowledged with acks=all
// before the stop is still there, read through the new leaders; the old
// leader comes back as a follower and rejoins the ISR.
func TestReplicationLeaderFailover(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(2))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "f"); err != nil {
		t.Fatal(err)
	}
	c.waitISR(2, "f", []int32{1, 2, 3}, 10*time.Second)
	prod := c.client(2)
	acked := produceAll(ctx, t, prod, "f", "a", 300)
	before := c.leaders(2, "f")
	gone := before[0]
	live := slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == gone })
	if err := c.nodes[gone].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, gone)
	c.waitISR(live[0], "f", live, 15*time.Second)
	for p, l := range c.leaders(live[0], "f") {
		if !slices.Contains(live, l) {
			t.Fatalf("partition %d led by %d after node %d stopped", p, l, gone)
		}
	}
	acked = append(acked, produceAll(ctx, t, c.client(live[0]), "f", "b", 200)...)
	consumeAll(ctx, t, c, live[1], "f", acked)
	if err := c.start(gone); err != nil {
		t.Fatal(err)
	}
	c.waitISR(live[0], "f", []int32{1, 2, 3}, 30*time.Second)
}

func kmsgStr(s string) *string { return &s }

// getJSON decodes the JSON at http://addr+path into v.
func (c *testCluster) getJSON(addr, path string, v any) {
	c.t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		c.t.Fatalf("%s: %v", path, err)
	}
}

// metric sums an unlabelled metric over nodes ids' /metrics.
func (c *testCluster) metric(name string, ids ...int32) float64 {
	c.t.Helper()
	var sum float64
	for _, id := range ids {
		for _, line := range c.scrape(id, name+" ") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimPrefix(line, name+" "), &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// waitMetric waits until metric name, summed over ids, is want.
func (c *testCluster) waitMetric(name string, want float64, ids ...int32) {
	c.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.metric(name, ids...) != want; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("%s on nodes %v is %v, want %v", name, ids, c.metric(name, ids...), want)
		}
	}
}

// TestReplicationDLQ: a validated topic in a cluster quarantines invalid
// records into its DLQ, which has the topic's replicas, and both are
// readable through another node: with one replica the DLQ's high
// watermark moves with its leader's appends, with three with its
// followers' fetches.
func TestReplicationDLQ(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	prod := c.client(3)
	for _, rf := range []int16{1, 3} {
		topic := fmt.Sprintf("v%d", rf)
		if _, err := adm.CreateTopic(ctx, 3, rf, map[string]*string{"strand.validation": kmsgStr("json")}, topic); err != nil {
			t.Fatal(err)
		}
		var valid, invalid []string
		for i := range 30 {
			v := fmt.Sprintf(`{"i":%d}`, i)
			if i%3 == 1 {
				v = fmt.Sprintf("not json %d", i)
				invalid = append(invalid, v)
			} else {
				valid = append(valid, v)
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		consumeAll(ctx, t, c, 2, topic, valid)
		consumeAll(ctx, t, c, 2, topic+".dlq", invalid)
	}
	c.waitISR(2, "v3.dlq", []int32{1, 2, 3}, 10*time.Second)
}

// TestReplicationUncleanElection: a partition whose only in-sync replica
// is gone stays leaderless — its other replica, back and live, may lack
// acknowledged records — until the topic turns
// unclean.leader.election.enable on; then that replica leads, with what
// it has. Five voters, so two stopped nodes keep the quorum.
func TestReplicationUncleanElection(t *testing.T) {
	c := startClusterN(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.client(3)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "u", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create u on nodes 1 and 2: %v %+v", err, resp)
	}
	c.waitISR(3, "u", []int32{1, 2}, 10*time.Second)
	both := produceAll(ctx, t, cl, "u", "both", 50)
	stop := func(id int32) {
		t.Helper()
		if err := c.nodes[id].Close(); err != nil {
			t.Fatal(err)
		}
		delete(c.nodes, id)
	}
	stop(2)
	c.waitISR(3, "u", []int32{1}, 15*time.Second)
	produceAll(ctx, t, cl, "u", "only-on-1", 50) // min.insync.replicas 1: node 1 alone acknowledges
	stop(1)
	if err := c.start(2); err != nil {
		t.Fatal(err)
	}
	c.waitLive(2, 3, 4, 5)
	time.Sleep(time.Second) // a clean election would have happened by now
	if l := c.leaders(3, "u")[0]; l != -1 {
		t.Fatalf("partition led by %d with its only in-sync replica (1) stopped and unclean election off", l)
	}
	adm := kadm.NewClient(cl)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: kmsgStr("true")}}, "u"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); c.leaders(3, "u")[0] != 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("unclean election on: partition led by %d, want 2", c.leaders(3, "u")[0])
		}
	}
	c.waitISR(3, "u", []int32{2}, 10*time.Second)
	consumeAll(ctx, t, c, 3, "u", both) // what node 2 had; the records only node 1 held are gone
}

// preferred returns each partition's first replica, as node id says.
func (c *testCluster) preferred(id int32, topic string) []int32 {
	c.t.Helper()
	resp := c.metadata(id, []string{topic})
	out := make([]int32, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p.Replicas[0]
	}
	return out
}

// failOver stops node gone, waits for the ISRs of topic to lose it,
// starts it again and waits for them to be whole: leadership it had has
// moved to other replicas.
func (c *testCluster) failOver(gone int32, topic string) {
	c.t.Helper()
	if err := c.nodes[gone].Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.nodes, gone)
	var live []int32
	for id := range int32(3) {
		if id+1 != gone {
			live = append(live, id+1)
		}
	}
	c.waitISR(live[0], topic, live, 15*time.Second)
	if err := c.start(gone); err != nil {
		c.t.Fatal(err)
	}
	c.waitISR(live[0], topic, []int32{1, 2, 3}, 30*time.Second)
}

// TestReplicationPreferredElection: after a failover and the node's
// return, leadership stays where it went; ElectLeaders (preferred, every
// partition) moves it back to each partition's first replica, and asked
// again for named partitions answers ELECTION_NOT_NEEDED.
func TestReplicationPreferredElection(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := c.client(1)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 3, nil, "p"); err != nil {
		t.Fatal(err)
	}
	c.waitISR(1, "p", []int32{1, 2, 3}, 10*time.Second)
	pref := c.preferred(1, "p")
	c.failOver(pref[0], "p")
	if l := c.leaders(2, "p"); slices.Equal(l, pref) {
		t.Fatalf("leaders %v are the preferred ones right after node %d's failover", l, pref[0])
	}
	req := kmsg.NewPtrElectLeadersRequest() // Topics nil: every partition
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, c.client(2))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ElectLeaders: %v, code %d", err, resp.ErrorCode)
	}
	elected := 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Errorf("%s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			} else if rt.Topic == "p" {
				elected++
			}
		}
	}
	if elected == 0 {
		t.Fatalf("no partition of p elected: %+v", resp.Topics)
	}
	// kgo sends admin requests to the controller, which answers once its
	// metadata has the new leaders; the others follow within a heartbeat.
	for _, id := range []int32{1, 2, 3} {
		for deadline := time.Now().Add(5 * time.Second); !slices.Equal(c.leaders(id, "p"), pref); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after ElectLeaders node %d says leaders %v, want the preferred %v", id, c.leaders(id, "p"), pref)
			}
		}
	}
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "p", Partitions: []int32{0, 1, 2}}, {Topic: "nope", Partitions: []int32{0}}}
	resp, err = req.RequestWith(ctx, c.client(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		want := kerr.ElectionNotNeeded.Code
		if rt.Topic == "nope" {
			want = kerr.UnknownTopicOrPartition.Code
		}
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != want {
				t.Errorf("second election %s-%d: %v, want %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(want))
			}
		}
	}
}

// TestReplicationLeaderBalancing: with the controller's imbalance check
// on (every 500 ms here), leadership returns to the preferred replicas by
// itself after a failover.
func TestReplicationLeaderBalancing(t *testing.T) {
	c := startClusterTuned(t, 3, func(cc *ClusterConfig) { cc.LeaderImbalanceCheckInterval = 500 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(c.client(1)).CreateTopic(ctx, 3, 3, nil, "b"); err != nil {
		t.Fatal(err)
	}
	c.waitISR(1, "b", []int32{1, 2, 3}, 10*time.Second)
	pref := c.preferred(1, "b")
	c.failOver(pref[1], "b")
	for deadline := time.Now().Add(20 * time.Second); !slices.Equal(c.leaders(1, "b"), pref); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("leaders %v never went back to the preferred %v", c.leaders(1, "b"), pref)
		}
	}
}

// reassign asks node seed's controller to move topic's partition 0 to
// target and waits until the move is complete: nothing listed in
// progress, the replicas and ISR the target.
func (c *testCluster) reassign(ctx context.Context, seed int32, topic string, target []int32) {
	c.t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, target
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.client(seed))
	if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		c.t.Fatalf("reassign %s-0 to %v: %v %+v", topic, target, err, resp)
	}
	sorted := slices.Sorted(slices.Values(target))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		list, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, c.client(seed))
		meta := c.metadata(seed, []string{topic})
		done := err == nil && len(list.Topics) == 0 && len(meta.Topics) == 1 && len(meta.Topics[0].Partitions) == 1
		if done {
			p := meta.Topics[0].Partitions[0]
			done = slices.Equal(p.Replicas, target) && slices.Equal(slices.Sorted(slices.Values(p.ISR)), sorted) && slices.Contains(target, p.Leader)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("reassignment of %s-0 to %v not complete after 30 s: in progress %+v, metadata %+v (%v)", topic, target, list, meta.Topics, err)
		}
	}
}

// TestReplicationReassignment moves a partition under acks=all load:
// replication factor 1 → 3, then off its leader's node onto a fourth
// node. Every acknowledged record is read back once, and the node the
// partition left holds none of its data.
func TestReplicationReassignment(t *testing.T) {
	c := startClusterN(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "m", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, c.client(2)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create m on node 1: %v %+v", err, resp)
	}
	c.waitISR(2, "m", []int32{1}, 10*time.Second)

	prod := c.client(3)
	acked := produceAll(ctx, t, prod, "m", "before", 200)
	load, stopLoad := context.WithCancel(ctx)
	loaded := make(chan []string)
	go func() { // acks=all under way throughout both moves
		var vals []string
		for i := 0; load.Err() == nil; i++ {
			v := fmt.Sprintf("during-%d", i)
			if err := prod.ProduceSync(load, &kgo.Record{Topic: "m", Value: []byte(v)}).FirstErr(); err != nil {
				if load.Err() == nil {
					t.Errorf("produce %s during the reassignments: %v", v, err)
				}
				break
			}
			vals = append(vals, v)
		}
		loaded <- vals
	}()

	c.reassign(ctx, 2, "m", []int32{1, 2, 3})
	c.reassign(ctx, 4, "m", []int32{2, 3, 4})
	stopLoad()
	during := <-loaded
	if len(during) == 0 {
		t.Fatal("no record was acknowledged during the reassignments")
	}
	acked = append(acked, during...)
	acked = append(acked, produceAll(ctx, t, prod, "m", "after", 100)...)
	consumeAll(ctx, t, c, 4, "m", acked)
	c.waitISR(4, "m", []int32{2, 3, 4}, 10*time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		entries, _ := os.ReadDir(c.dirs[1])
		left := slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "m-") })
		if !left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 still holds m's data after the partition moved off it: %v", entries)
		}
	}
	t.Logf("%d records acknowledged during the two reassignments", len(during))
}

// TestReplicationLogDirsAndControlledShutdown: DescribeLogDirs answers per
// node for the replicas it holds, followers included (every node holds a
// copy of an RF 3 topic, only one node an RF 1 partition); a node that
// stops (controlled shutdown) has handed its leaderships over by the time
// Close returns — no partition is left led by it, nor leaderless.
func TestReplicationLogDirsAndControlledShutdown(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "ld3"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ld1"); err != nil {
		t.Fatal(err)
	}
	c.waitISR(1, "ld3", []int32{1, 2, 3}, 10*time.Second)
	produceAll(ctx, t, c.client(2), "ld3", "x", 60)
	c.waitISR(1, "ld3", []int32{1, 2, 3}, 10*time.Second)
	owner := c.leaders(1, "ld1")[0]
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{1, 2, 3} {
		held := map[string]int{}
		var bytes int64
		for _, d := range dirs[id] {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				held[p.Topic]++
				if p.Topic == "ld3" {
					bytes += p.Size
				}
			})
		}
		if held["ld3"] != 3 || bytes == 0 {
			t.Errorf("node %d reports %d partitions of ld3 (%d bytes), want all 3 replicas with data", id, held["ld3"], bytes)
		}
		if want := map[bool]int{true: 1, false: 0}[id == owner]; held["ld1"] != want {
			t.Errorf("node %d reports %d partitions of ld1 (on node %d), want %d", id, held["ld1"], owner, want)
		}
	}

	leader := c.leaders(2, "ld3")[0]
	if err := c.nodes[leader].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, leader)
	other := int32(1)
	for other == leader {
		other++
	}
	// Close returned: the controller has moved its leaderships; the node
	// asked may be a heartbeat behind.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		l := c.leaders(other, "ld3")
		if !slices.Contains(l, leader) && !slices.Contains(l, -1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after node %d's controlled shutdown the leaders of ld3 are %v", leader, l)
		}
	}
}
