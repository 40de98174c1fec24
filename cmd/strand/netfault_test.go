package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
)

// Network faults for REPLICATION.md §6.3's scenarios: the three nodes run
// in a private network namespace on 127.0.0.2–4, each sending from its own
// address (--source-ip), and nftables rules in that namespace drop the
// packets between chosen nodes — silently, established connections too,
// as a failed switch port or a firewall change would. The host's network
// is never touched.

// netnsEnv marks a test process already inside its own network namespace.
const netnsEnv = "STRAND_IN_NETNS"

// The ports every node uses on its own address in the namespace.
const (
	clientPort   = 9092
	raftPort     = 9093
	internalPort = 9094
)

// inNetns runs the calling test again inside a fresh network namespace
// (unshare --net): true in that child, which runs the test; false in the
// parent, which has waited for the child and reported its outcome. Without
// root, unshare, ip or nft the test is skipped — unless STRAND_REQUIRE_NETNS
// is set (CI), where a missing tool is a failure, not a silent pass.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) == "1" {
		netnsCmd(t, "ip", "link", "set", "lo", "up")
		netnsCmd(t, "nft", "add table inet chaos")
		netnsCmd(t, "nft", "add chain inet chaos out { type filter hook output priority 0 ; }")
		return true
	}
	missing := ""
	for _, tool := range []string{"unshare", "ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing += " " + tool
		}
	}
	if os.Geteuid() != 0 {
		missing += " root"
	}
	if missing != "" {
		if os.Getenv("STRAND_REQUIRE_NETNS") != "" {
			t.Fatalf("network fault scenarios need%s (apt-get install -y nftables iproute2 util-linux; run as root)", missing)
		}
		t.Skipf("network fault scenarios need%s", missing)
	}
	timeout := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 10*time.Second
	}
	args := []string{"--net", "--", os.Args[0], "-test.run", "^" + t.Name() + "$", "-test.v", "-test.timeout", timeout.String()}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1", "STRAND_TEST_BIN="+strandBin(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s, run in its own network namespace, failed (%v):\n%s", t.Name(), err, out)
	}
	t.Logf("in its own network namespace:\n%s", out)
	return false
}

func netnsCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if name == "nft" { // nft takes a rule as one argument and parses it itself
		args = []string{strings.Join(args, " ")}
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// host is node n's address in the namespace.
func host(n int) string { return fmt.Sprintf("127.0.0.%d", n+1) }

// newNetCluster starts three nodes on their own addresses, each sending
// from it, with fixed ports (the namespace is the test's alone).
func newNetCluster(t *testing.T, extra ...string) *procCluster {
	t.Helper()
	return netCluster(t, true, extra...) // the scenarios run as a cluster spanning machines would
}

// netCluster is newNetCluster with inter-node TLS or without.
func netCluster(t *testing.T, tls bool, extra ...string) *procCluster {
	t.Helper()
	c := newCluster(3, extra)
	if tls {
		c.secure(t)
	}
	root := t.TempDir()
	var voters []string
	for n := 1; n <= 3; n++ {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", n, host(n), raftPort))
		c.dirs[n] = fmt.Sprintf("%s/n%d", root, n)
		c.addrs[n] = fmt.Sprintf("%s:%d", host(n), clientPort)
		c.own[n] = []string{"--internal-listen", fmt.Sprintf("%s:%d", host(n), internalPort), "--source-ip", host(n)}
	}
	c.quorum = strings.Join(voters, ",")
	c.start(t)
	return c
}

// cut drops every packet between nodes a and b, both ways.
func cut(t *testing.T, a, b int) {
	t.Helper()
	for _, pair := range [][2]int{{a, b}, {b, a}} {
		netnsCmd(t, "nft", "add rule inet chaos out ip saddr", host(pair[0]), "ip daddr", host(pair[1]), "drop")
	}
	t.Logf("cut %d ⟷ %d", a, b)
}

// cutFetches drops replica fetches from follower f to leader l's internal
// listener (and their answers) while every other link between the two —
// Raft, controller calls, clients — stays up.
func cutFetches(t *testing.T, f, l int) {
	t.Helper()
	netnsCmd(t, "nft", "add rule inet chaos out ip saddr", host(f), "ip daddr", host(l), "tcp dport", fmt.Sprint(internalPort), "drop")
	netnsCmd(t, "nft", "add rule inet chaos out ip saddr", host(l), "ip daddr", host(f), "tcp sport", fmt.Sprint(internalPort), "drop")
	t.Logf("cut node %d's fetches from node %d", f, l)
}

// heal removes every fault.
func heal(t *testing.T) {
	t.Helper()
	netnsCmd(t, "nft", "flush chain inet chaos out")
	t.Log("healed")
}

// partitionView is one partition's leader and ISR, and the controller, as
// node n's metadata shows them.
type partitionView struct {
	leader, controller int32
	isr, replicas      []int32
}

// nodeClient is a client that talks to node n first.
func (c *procCluster) nodeClient(t *testing.T, n int) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[n]))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func (c *procCluster) view(ctx context.Context, t *testing.T, n int, topic string, p int32) (partitionView, error) {
	t.Helper()
	cl := c.nodeClient(t, n)
	defer cl.Close()
	meta, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return partitionView{}, err
	}
	pd, ok := meta.Topics[topic].Partitions[p]
	if !ok {
		return partitionView{}, fmt.Errorf("node %d: no partition %s-%d", n, topic, p)
	}
	return partitionView{leader: pd.Leader, controller: meta.Controller, isr: pd.ISR, replicas: pd.Replicas}, nil
}

// await polls node n's view of partition p until ok holds, and returns
// how long that took.
func (c *procCluster) await(ctx context.Context, t *testing.T, n int, topic string, p int32, within time.Duration, what string, ok func(partitionView) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var last partitionView
	var err error
	for time.Since(start) < within {
		if last, err = c.view(ctx, t, n, topic, p); err == nil && ok(last) {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s-%d: %s did not happen within %v (node %d shows leader %d, ISR %v, controller %d; %v)", topic, p, what, within, n, last.leader, last.isr, last.controller, err)
	return 0
}

// pickLeaderNotController finds a partition of topic whose leader is not
// the controller, and returns it with its leader, the controller and the
// third node.
func (c *procCluster) pickLeaderNotController(ctx context.Context, t *testing.T, topic string, partitions int32) (p int32, leader, controller, other int) {
	t.Helper()
	for range 50 {
		for p := range partitions {
			v, err := c.view(ctx, t, 1, topic, p)
			if err != nil || v.leader < 1 || v.controller < 1 || v.leader == v.controller {
				continue
			}
			l, ctl := int(v.leader), int(v.controller)
			return p, l, ctl, 6 - l - ctl
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no partition of %s is led by a node other than the controller", topic)
	return
}

const lag = 3 * time.Second // --replica-lag-time-max of the network scenarios

// TestS2FollowerLag is scenario S2: the link between a partition's leader
// and one follower goes dark (neither is the controller, so both stay
// registered) under acks=all load for the lag time plus 5 s, then heals.
// The follower leaves the ISR within lag + lag/2 + 2 s (the leader's check
// cadence, AlterPartition, propagation), produces go on acknowledged by
// the other two, and it is back in the ISR within 10 s of the heal.
// STRAND_S2_ROUNDS sets the cycles (CI: 3).
func TestS2FollowerLag(t *testing.T) {
	if !inNetns(t) {
		return
	}
	c := newNetCluster(t, "--replica-lag-time-max", lag.String())
	scenarioOn(t, c, rounds(t, "STRAND_S2_ROUNDS", 3), func(ctx context.Context, c *procCluster, i int) {
		p, l, ctl, f := c.pickLeaderNotController(ctx, t, "sc", 3)
		cut(t, l, f)
		out := c.await(ctx, t, ctl, "sc", p, 30*time.Second, fmt.Sprintf("node %d leaving the ISR", f), func(v partitionView) bool {
			return !slices.Contains(v.isr, int32(f))
		})
		t.Logf("round %d: partition %d (leader %d): follower %d out of the ISR %v after the cut (bound %v)", i, p, l, f, out.Round(time.Millisecond), lag+lag/2+2*time.Second)
		if out > lag+lag/2+2*time.Second {
			t.Errorf("round %d: follower %d left the ISR %v after the cut, past lag + lag/2 + 2 s", i, f, out)
		}
		time.Sleep(lag + 5*time.Second - out)
		heal(t)
		back := c.await(ctx, t, ctl, "sc", p, 30*time.Second, fmt.Sprintf("node %d rejoining the ISR", f), func(v partitionView) bool {
			return slices.Contains(v.isr, int32(f))
		})
		t.Logf("round %d: follower %d back in the ISR %v after the heal", i, f, back.Round(time.Millisecond))
		if back > 10*time.Second {
			t.Errorf("round %d: follower %d rejoined the ISR %v after the heal, past 10 s", i, f, back)
		}
	})
}

// TestS3MinISR is scenario S3: both followers of a partition stop
// fetching from its leader (their fetches are dropped; the leader still
// reaches the controller, so it stays leader). Once the ISR is {leader},
// below min.insync.replicas 2, not one acks=all produce to that partition
// succeeds — every answer is NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_
// AFTER_APPEND or REQUEST_TIMED_OUT — until a follower is back; after the
// heal acknowledgements resume within 10 s. STRAND_S3_ROUNDS sets the
// cycles (CI: 2).
func TestS3MinISR(t *testing.T) {
	if !inNetns(t) {
		return
	}
	c := newNetCluster(t, "--replica-lag-time-max", lag.String())
	scenarioOn(t, c, rounds(t, "STRAND_S3_ROUNDS", 2), func(ctx context.Context, c *procCluster, i int) {
		if i == 0 { // probes go to a topic of their own: the checker owns every record of the load's
			ok(t, c.addrs[1], "", "topic", "create", "probe", "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
			c.waitInSync(ctx, t, "probe", 20*time.Second)
		}
		ch := c.load
		p, l, ctl, other := c.pickLeaderNotController(ctx, t, "sc", 3)
		probe := c.partitionLedBy(ctx, t, "probe", 3, l)
		cutFetches(t, ctl, l)
		cutFetches(t, other, l)
		alone := c.await(ctx, t, ctl, "sc", p, 30*time.Second, fmt.Sprintf("the ISR shrinking to its leader %d", l), func(v partitionView) bool {
			return slices.Equal(v.isr, []int32{int32(l)})
		})
		from := time.Now()
		// A follower level with its leader stays in sync however long it
		// is silent (Kafka's isCaughtUp): the probe partition needs a write
		// the followers cannot fetch before its ISR shrinks too.
		c.produceRaw(ctx, t, l, "probe", probe, 1, 100*time.Millisecond)
		c.await(ctx, t, ctl, "probe", probe, 30*time.Second, fmt.Sprintf("the ISR shrinking to its leader %d", l), func(v partitionView) bool {
			return slices.Equal(v.isr, []int32{int32(l)})
		})
		t.Logf("round %d: partition %d's ISR is {%d} %v after the cut", i, p, l, alone.Round(time.Millisecond))
		codes := c.produceRaw(ctx, t, l, "probe", probe, -1, 4*time.Second)
		healed := time.Now()
		heal(t)
		total := 0
		for _, n := range codes {
			total += n
		}
		t.Logf("round %d: %d acks=all produces to the leader while its ISR was {%d}: error codes %v", i, total, l, codes)
		for code, n := range codes {
			if code != kerr.NotEnoughReplicas.Code && code != kerr.NotEnoughReplicasAfterAppend.Code && code != kerr.RequestTimedOut.Code {
				t.Errorf("round %d: %d produces answered with error %d (%v) while the ISR was below min.insync.replicas", i, n, code, kerr.ErrorForCode(code))
			}
		}
		if d, ok := ch.firstAckAfter(p, from); ok && from.Add(d).Before(healed) {
			t.Errorf("round %d: the load's producer got an acknowledgement for partition %d %v into the ISR={%d} window", i, p, d, l)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if d, ok := ch.firstAckAfter(p, healed); ok {
				t.Logf("round %d: acknowledgements on partition %d resumed %v after the heal", i, p, d.Round(time.Millisecond))
				if d > 10*time.Second {
					t.Errorf("round %d: acknowledgements resumed %v after the heal, past 10 s", i, d)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no acknowledgement on partition %d within 20 s of the heal", i, p)
			}
		}
	})
}

// partitionLedBy returns a partition of topic that node n leads.
func (c *procCluster) partitionLedBy(ctx context.Context, t *testing.T, topic string, partitions int32, n int) int32 {
	t.Helper()
	for range 50 {
		for p := range partitions {
			if v, err := c.view(ctx, t, n, topic, p); err == nil && v.leader == int32(n) {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("node %d leads no partition of %s", n, topic)
	return -1
}

// produceRaw sends one-record produce requests for partition p straight
// to node n for d (at least one), and counts the error codes answered.
func (c *procCluster) produceRaw(ctx context.Context, t *testing.T, n int, topic string, p int32, acks int16, d time.Duration) map[int16]int {
	t.Helper()
	cl := c.nodeClient(t, n)
	defer cl.Close()
	meta, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int16]int{}
	for end := time.Now().Add(d); len(codes) == 0 || time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		batch, err := record.Encode(0, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte("s3-probe")}}, record.BatchOptions{ProducerID: record.NoProducerID})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = acks, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, meta.Topics[topic].ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(n))
		if err != nil {
			t.Fatalf("produce to node %d: %v", n, err)
		}
		codes[resp.Topics[0].Partitions[0].ErrorCode]++
	}
	return codes
}

// TestS4IsolatedLeader is scenario S4 as Jepsen's 2013 Kafka test ran it:
// a partition's leader loses the controller and both followers, but not
// its clients. It keeps taking produces and believing it leads until its
// session ends; the controller fences it and elects a follower. Nothing it
// took after the cut may be acknowledged, since no follower has it: the
// checker finds no acknowledged record lost after the heal, and the
// replicas converge. STRAND_S4_ROUNDS sets the cycles (CI: 2).
func TestS4IsolatedLeader(t *testing.T) {
	if !inNetns(t) {
		return
	}
	c := newNetCluster(t, "--replica-lag-time-max", lag.String())
	scenarioOn(t, c, rounds(t, "STRAND_S4_ROUNDS", 2), func(ctx context.Context, c *procCluster, i int) {
		p, l, ctl, other := c.pickLeaderNotController(ctx, t, "sc", 3)
		cut(t, l, ctl)
		cut(t, l, other)
		moved := c.await(ctx, t, ctl, "sc", p, 30*time.Second, fmt.Sprintf("a leader other than the isolated %d", l), func(v partitionView) bool {
			return v.leader > 0 && v.leader != int32(l)
		})
		t.Logf("round %d: partition %d led by another node %v after its leader %d was isolated", i, p, moved.Round(time.Millisecond), l)
		time.Sleep(2 * time.Second) // both leaders take produces for a while
		heal(t)
	})
}

// TestS5ControllerIsolated is scenario S5 with a network cut: the node
// leading the metadata quorum loses both others while topics are being
// created through a follower and the load's ISRs churn (the cut node is
// fenced, its partitions move). The two others elect a controller: the
// first create sent after the cut succeeds within the election timeout
// + 5 s. After the heal every node shows the same topics, each create
// that was acknowledged exists with the id its answer gave — applied
// once — and the load's checker finds nothing lost. STRAND_S5_ROUNDS sets
// the cycles (CI: 2).
func TestS5ControllerIsolated(t *testing.T) {
	if !inNetns(t) {
		return
	}
	const electionTimeout = time.Second // ClusterConfig's default for three voters
	c := newNetCluster(t, "--replica-lag-time-max", lag.String())
	scenarioOn(t, c, rounds(t, "STRAND_S5_ROUNDS", 2), func(ctx context.Context, c *procCluster, i int) {
		// Node 1 may still be applying the topic's creation (a loaded
		// machine): ask until it knows the partition and a controller.
		var v partitionView
		c.await(ctx, t, 1, "sc", 0, 10*time.Second, "a controller known", func(pv partitionView) bool {
			v = pv
			return pv.controller >= 1
		})
		ctl := int(v.controller)
		via := ctl%3 + 1 // a follower of the quorum takes the creates
		creates := c.createLoop(ctx, t, via, fmt.Sprintf("s5-%d-", i), 250*time.Millisecond)
		time.Sleep(time.Second)
		cut(t, ctl, via)
		cut(t, ctl, 6-ctl-via)
		cutAt := time.Now()
		time.Sleep(10 * time.Second)
		heal(t)
		time.Sleep(2 * time.Second)
		done := creates.stop()
		first := time.Duration(-1)
		acked := map[string]kadm.CreateTopicResponse{}
		for _, r := range done {
			if r.err == nil {
				acked[r.resp.Topic] = r.resp
				if r.started.After(cutAt) && (first < 0 || r.finished.Sub(cutAt) < first) {
					first = r.finished.Sub(cutAt)
				}
			}
		}
		t.Logf("round %d: controller %d cut off; %d creates through node %d, %d acknowledged; the first sent after the cut succeeded %v after it", i, ctl, len(done), via, len(acked), first.Round(time.Millisecond))
		switch {
		case first < 0:
			t.Errorf("round %d: no create sent after the controller was cut off succeeded\n%s", i, c.tailLogs(60))
		case first > electionTimeout+5*time.Second:
			t.Errorf("round %d: the first create after the cut succeeded %v after it, past the election timeout + 5 s\n%s", i, first, c.tailLogs(60))
		}
		c.checkTopicsAgree(ctx, t, fmt.Sprintf("s5-%d-", i), acked)
	})
}

// createResult is one CreateTopics call of createLoop.
type createResult struct {
	resp              kadm.CreateTopicResponse
	err               error
	started, finished time.Time
}

// creates is a running createLoop.
type creates struct {
	stop func() []createResult
}

// createLoop creates a topic (2 partitions, RF 2) named prefix<k> through
// node n every interval, each call on its own so a call stuck on a lost
// controller holds up none of the next, until stop, which waits for the
// calls in flight. RF 2, not 3: once the new controller fences the cut-off
// node, two brokers are live, and a create asking for three replicas is
// refused INVALID_REPLICATION_FACTOR (as Kafka refuses it), which is not
// the unavailability S5 looks for.
func (c *procCluster) createLoop(ctx context.Context, t *testing.T, n int, prefix string, interval time.Duration) creates {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[n]), kgo.RequestTimeoutOverhead(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	loop, cancel := context.WithCancel(ctx)
	results := make(chan createResult, 1024)
	var calls sync.WaitGroup
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for k := 0; ; k++ {
			select {
			case <-loop.Done():
				return
			case <-tick.C:
			}
			calls.Add(1)
			go func() {
				defer calls.Done()
				r := createResult{started: time.Now()}
				r.resp, r.err = adm.CreateTopic(ctx, 2, 2, nil, fmt.Sprint(prefix, k))
				if r.err == nil {
					r.err = r.resp.Err
				}
				r.finished = time.Now()
				results <- r
			}()
		}
	}()
	return creates{stop: func() []createResult {
		cancel()
		time.Sleep(interval) // the ticker goroutine sees the cancel before the Wait
		calls.Wait()
		cl.Close()
		close(results)
		var out []createResult
		for r := range results {
			out = append(out, r)
		}
		return out
	}}
}

// checkTopicsAgree waits until every node shows the same topics named
// prefix… (ids, partition counts, replicas), and checks that each
// acknowledged create exists with the id it was answered with: a create
// retried through a new controller was not applied a second time.
func (c *procCluster) checkTopicsAgree(ctx context.Context, t *testing.T, prefix string, acked map[string]kadm.CreateTopicResponse) {
	t.Helper()
	var views [4]string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		for n := 1; n <= 3; n++ {
			views[n] = c.topicsView(ctx, t, n, prefix, acked)
		}
		if views[1] == views[2] && views[2] == views[3] && !strings.Contains(views[1], "missing") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes' topics %s… disagree or miss acknowledged creates:\nnode 1: %s\nnode 2: %s\nnode 3: %s", prefix, views[1], views[2], views[3])
		}
	}
}

// topicsView is node n's metadata of topics named prefix…, in one
// comparable string, naming acknowledged topics missing or changed.
func (c *procCluster) topicsView(ctx context.Context, t *testing.T, n int, prefix string, acked map[string]kadm.CreateTopicResponse) string {
	t.Helper()
	cl := c.nodeClient(t, n)
	defer cl.Close()
	meta, err := kadm.NewClient(cl).Metadata(ctx)
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for _, td := range meta.Topics.Sorted() {
		if !strings.HasPrefix(td.Topic, prefix) {
			continue
		}
		var reps []string
		for _, pd := range td.Partitions.Sorted() {
			reps = append(reps, fmt.Sprint(pd.Replicas))
		}
		out = append(out, fmt.Sprintf("%s=%s%v", td.Topic, td.ID, reps))
		if a, ok := acked[td.Topic]; ok && a.ID != td.ID {
			out = append(out, fmt.Sprintf("missing: %s acknowledged with id %s", td.Topic, a.ID))
		}
	}
	for name := range acked {
		if _, ok := meta.Topics[name]; !ok {
			out = append(out, "missing: "+name)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
