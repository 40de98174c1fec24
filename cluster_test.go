package strand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/testnet"
)

// testCluster is three nodes in this process, each with its own data
// directory, Kafka listener and Raft port on loopback.
type testCluster struct {
	t      *testing.T
	quorum []Voter
	dirs   map[int32]string
	addrs  map[int32]string // Kafka listeners, fixed across restarts
	nodes  map[int32]*Broker
	tune   func(*ClusterConfig) // changes every node's cluster config, if set
	config func(*Config)        // changes every node's config, if set
	// clientOpts are every test client's options (SASL credentials).
	clientOpts []kgo.Opt
}

func freePort(t *testing.T) string { return testnet.FreeAddr(t) }

func startCluster(t *testing.T) *testCluster {
	t.Helper()
	return startClusterN(t, 3)
}

// startClusterN starts n nodes, ids 1..n, every one a voter.
func startClusterN(t *testing.T, n int32) *testCluster {
	t.Helper()
	return startClusterTuned(t, n, nil)
}

// startClusterTuned is startClusterN with tune applied to each node's
// cluster config.
func startClusterTuned(t *testing.T, n int32, tune func(*ClusterConfig)) *testCluster {
	t.Helper()
	return startClusterWith(t, n, tune, nil)
}

// startClusterWith is startClusterTuned with config applied to each node's
// Config, and clientOpts given to every client the harness makes.
func startClusterWith(t *testing.T, n int32, tune func(*ClusterConfig), config func(*Config), clientOpts ...kgo.Opt) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dirs: map[int32]string{}, addrs: map[int32]string{}, nodes: map[int32]*Broker{}, tune: tune,
		config: config, clientOpts: clientOpts}
	root := t.TempDir()
	for id := int32(1); id <= n; id++ {
		c.quorum = append(c.quorum, Voter{ID: id, Addr: freePort(t)})
		c.dirs[id] = filepath.Join(root, fmt.Sprint("n", id))
		c.addrs[id] = freePort(t)
	}
	type started struct {
		id  int32
		b   *Broker
		err error
	}
	results := make(chan started, n)
	for id := int32(1); id <= n; id++ {
		go func() { // together: each waits for a quorum
			b, err := c.open(id)
			results <- started{id, b, err}
		}()
	}
	for range n {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		c.nodes[r.id] = r.b
	}
	t.Cleanup(func() {
		for _, b := range c.nodes {
			b.Close()
		}
	})
	var all []int32
	for id := int32(1); id <= n; id++ {
		all = append(all, id)
	}
	c.waitLive(all...)
	return c
}

func (c *testCluster) start(id int32) error {
	b, err := c.open(id)
	if err == nil {
		c.nodes[id] = b
	}
	return err
}

func (c *testCluster) open(id int32) (*Broker, error) {
	cc := &ClusterConfig{Quorum: c.quorum, HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout: 2 * time.Second, ElectionTimeout: 500 * time.Millisecond, ReplicaLagTime: 2 * time.Second,
		PartitionBalancerInterval: -1} // tests place partitions where they check them (tune turns it on)
	if c.tune != nil {
		c.tune(cc)
	}
	cfg := Config{
		Dir: c.dirs[id], Addr: c.addrs[id], NodeID: id,
		Cluster:                    cc,
		GroupInitialRebalanceDelay: -1,
		MetricsAddr:                "127.0.0.1:0",
		ConsoleAddr:                "127.0.0.1:0",
		SchemaRegistryAddr:         "127.0.0.1:0",
	}
	if c.config != nil {
		c.config(&cfg)
	}
	return Start(context.Background(), cfg)
}

// scrape returns node id's /metrics lines that start with prefix.
func (c *testCluster) scrape(id int32, prefix string) []string {
	c.t.Helper()
	resp, err := http.Get("http://" + c.nodes[id].MetricsAddr() + "/metrics")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return out
}

// waitLive waits until node ids are the cluster's unfenced brokers, as
// every live node's Metadata says.
func (c *testCluster) waitLive(ids ...int32) {
	c.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ok := true
		for _, id := range ids {
			got := c.metadata(id, nil).Brokers
			ids2 := make([]int32, len(got))
			for i, b := range got {
				ids2[i] = b.NodeID
			}
			slices.Sort(ids2)
			ok = ok && slices.Equal(ids2, ids)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("brokers %v never became the cluster's live brokers", ids)
		}
	}
}

// metadata asks node id directly for topics (nil: all).
func (c *testCluster) metadata(id int32, topics []string) *kmsg.MetadataResponse {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs[id])}, c.clientOpts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// node returns a handle that sends requests to node id itself (its
// client's seed: a new client does not know node ids before metadata).
func (c *testCluster) node(id int32) *kgo.Broker { return c.client(id).SeedBrokers()[0] }

func (c *testCluster) client(seed int32, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(c.addrs[seed])}, c.clientOpts...), opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// leaders returns each partition's leader as node id's Metadata says,
// once it knows the topic (a node's image follows the controller's by a
// Raft heartbeat or so; clients retry the same way).
func (c *testCluster) leaders(id int32, topic string) []int32 {
	c.t.Helper()
	resp := c.metadata(id, []string{topic})
	for deadline := time.Now().Add(5 * time.Second); len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0; resp = c.metadata(id, []string{topic}) {
		if time.Now().After(deadline) {
			c.t.Fatalf("metadata of %s from node %d: %+v", topic, id, resp.Topics)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := make([]int32, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

// TestClusterServesClients: a topic created through one node is placed on
// all three, with leaders on each; a client that knows only one node finds
// them all, produces to every partition and a consumer group reads every
// record back in per-key order, its coordinator on whichever node leads
// __consumer_offsets; a produce sent to a node that does not lead the
// partition is NOT_LEADER_OR_FOLLOWER.
func TestClusterServesClients(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(2))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	leaders := c.leaders(3, "orders")
	for id := int32(1); id <= 3; id++ {
		if n := countOf(leaders, id); n != 2 {
			t.Fatalf("node %d leads %d of 6 partitions (%v), want 2", id, n, leaders)
		}
	}
	if _, err := adm.CreateTopic(ctx, 1, 4, nil, "rf4"); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("replication factor 4 on three brokers: %v, want INVALID_REPLICATION_FACTOR", err)
	}

	prod := c.client(3, kgo.DefaultProduceTopic("orders"))
	const n = 600
	for i := range n {
		r := &kgo.Record{Key: []byte(fmt.Sprint("k", i%20)), Value: []byte(fmt.Sprint(i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	cons := c.client(1, kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("g"), kgo.DisableAutoCommit())
	last := map[string]int{}
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			var v int
			fmt.Sscan(string(r.Value), &v)
			if prev, ok := last[string(r.Key)]; ok && v <= prev {
				t.Fatalf("key %s: %d after %d", r.Key, v, prev)
			}
			last[string(r.Key)] = v
			got++
		})
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != n {
		t.Fatalf("the group committed %d records' worth of offsets, want %d", committed, n)
	}

	// Each node's metrics: one raft leader; the partitions each leads (each
	// node opens its partitions as its metadata reaches it: wait for all).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		leadersSeen, led, fenced := 0, 0, []string(nil)
		for id := int32(1); id <= 3; id++ {
			if slices.Contains(c.scrape(id, "strand_raft_state"), `strand_raft_state{state="leader"} 1`) {
				leadersSeen++
			}
			for _, line := range c.scrape(id, "strand_partitions_led ") {
				var n int
				fmt.Sscan(strings.TrimPrefix(line, "strand_partitions_led "), &n)
				led += n
			}
			// A node may be fenced for a moment on a loaded machine (a
			// heartbeat late past its session): it must come back.
			if got := c.scrape(id, "strand_broker_fenced "); !slices.Equal(got, []string{"strand_broker_fenced 0"}) {
				fenced = append(fenced, fmt.Sprintf("node %d: %v", id, got))
			}
		}
		if leadersSeen == 1 && led == 56 && len(fenced) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: %d raft leaders (want 1), %d partitions led (want 6 of orders + 50 of __consumer_offsets), fenced %v", leadersSeen, led, fenced)
		}
	}

	// The console's brokers page, on any node, shows the cluster.
	var page struct {
		Clustered    bool  `json:"clustered"`
		ControllerID int32 `json:"controller_id"`
		Raft         *struct {
			State string `json:"state"`
		} `json:"raft"`
		Brokers []struct {
			ID            int32  `json:"node_id"`
			Address       string `json:"address"`
			State         string `json:"state"`
			Controller    bool   `json:"controller"`
			PartitionsLed int    `json:"partitions_led"`
		} `json:"brokers"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		hresp, err := http.Get("http://" + c.nodes[2].ConsoleAddr() + "/api/v1/brokers")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(hresp.Body).Decode(&page)
		hresp.Body.Close()
		if err != nil || !page.Clustered || page.Raft == nil || len(page.Brokers) != 3 {
			t.Fatalf("brokers page: %v %+v", err, page)
		}
		ledOnPage := 0
		for _, b := range page.Brokers {
			ledOnPage += b.PartitionsLed
			if b.State != "live" || b.Address != c.addrs[b.ID] || b.Controller != (b.ID == page.ControllerID) {
				t.Fatalf("brokers page row %+v", b)
			}
		}
		if ledOnPage == 56 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the brokers page counts %d partitions led, want 56", ledOnPage)
		}
	}

	// Groups are spread: their coordinators (the leaders of their
	// __consumer_offsets partitions) are on every node, and each answers
	// for its own groups only.
	coordinators := map[int32]bool{}
	for i := range 12 {
		id := fmt.Sprint("group-", i)
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = id
		resp, err := req.RequestWith(ctx, c.client(1))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("FindCoordinator %s: %v %+v", id, err, resp)
		}
		coordinators[resp.NodeID] = true
		for other := int32(1); other <= 3; other++ {
			if other == resp.NodeID {
				continue
			}
			hb := kmsg.NewPtrHeartbeatRequest()
			hb.Group, hb.MemberID = id, "m"
			r, err := hb.RequestWith(ctx, c.node(other))
			if err != nil || r.ErrorCode != kerr.NotCoordinator.Code {
				t.Fatalf("heartbeat for %s (coordinated by %d) to node %d: %v, code %d; want NOT_COORDINATOR", id, resp.NodeID, other, err, r.ErrorCode)
			}
		}
	}
	if len(coordinators) != 3 {
		t.Fatalf("12 groups' coordinators are on nodes %v, want all three", coordinators)
	}

	// Producer ids come from blocks the controller hands out: no two
	// nodes give one id to two producers.
	ids := map[int64]int32{}
	for id := int32(1); id <= 3; id++ {
		cl := c.client(id)
		for range 2 {
			resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl.SeedBrokers()[0])
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("InitProducerId on node %d: %v %+v", id, err, resp)
			}
			if other, dup := ids[resp.ProducerID]; dup {
				t.Fatalf("nodes %d and %d both gave out producer id %d", other, id, resp.ProducerID)
			}
			ids[resp.ProducerID] = id
		}
	}

	// Auto-creation works through any node.
	auto := c.client(2, kgo.AllowAutoTopicCreation())
	if err := auto.ProduceSync(ctx, &kgo.Record{Topic: "auto-made", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to an unknown topic through node 2: %v", err)
	}

	// A produce to a node that does not lead the partition.
	var wrong int32
	for id := int32(1); id <= 3; id++ {
		if id != leaders[0] {
			wrong = id
		}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "orders", c.metadata(wrong, []string{"orders"}).Topics[0].TopicID // v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.node(wrong))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to node %d, which does not lead orders-0: error %d, want NOT_LEADER_OR_FOLLOWER", wrong, code)
	}
	// ListOffsets and Fetch too.
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	loResp, err := lo.RequestWith(ctx, c.node(wrong))
	if err != nil || loResp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets to node %d for orders-0: %v %+v, want NOT_LEADER_OR_FOLLOWER", wrong, err, loResp)
	}
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "orders", rt.TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes = 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fResp, err := fr.RequestWith(ctx, c.node(wrong))
	if err != nil || len(fResp.Topics) != 1 || fResp.Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("Fetch from node %d for orders-0: %v %+v, want NOT_LEADER_OR_FOLLOWER", wrong, err, fResp)
	}
}

// TestClusterNodeLoss: a node that stops takes only the partitions it led
// away — they have no leader, the others keep taking records — and when
// it starts again they come back with every record they had.
func TestClusterNodeLoss(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	leaders := c.leaders(1, "t")
	prod := c.client(1, kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(6) {
		for i := range 10 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const gone = 2
	if err := c.nodes[gone].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, gone)
	c.waitLive(1, 3)
	after := c.leaders(3, "t")
	for p, was := range leaders {
		switch {
		case was == gone && after[p] != -1:
			t.Fatalf("partition %d of the stopped node has leader %d", p, after[p])
		case was != gone && after[p] != was:
			t.Fatalf("partition %d moved from %d to %d", p, was, after[p])
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	for p, was := range leaders {
		if was == gone {
			continue
		}
		if err := prod.ProduceSync(short, &kgo.Record{Partition: int32(p), Value: []byte("more")}).FirstErr(); err != nil {
			t.Fatalf("partition %d on a live node: %v", p, err)
		}
	}
	cancelShort()

	if err := c.start(gone); err != nil {
		t.Fatal(err)
	}
	c.waitLive(1, 2, 3)
	for deadline := time.Now().Add(10 * time.Second); !slices.Equal(c.leaders(1, "t"), leaders); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("leaders after the restart %v, want %v", c.leaders(1, "t"), leaders)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for p, was := range leaders {
		want := int64(10)
		if was != gone {
			want = 11
		}
		if o, _ := ends.Lookup("t", int32(p)); o.Err != nil || o.Offset != want {
			t.Fatalf("partition %d (node %d) ends at %d (%v), want %d", p, was, o.Offset, o.Err, want)
		}
	}
}

func countOf(s []int32, v int32) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestClusterSaramaAndKafkaGo: sarama (a consumer group, synchronous
// producer) and segmentio/kafka-go (writer, group reader), each given one
// node's address, produce to and consume from partitions led by all three
// nodes, and their groups commit through whichever node coordinates them.
func TestClusterSaramaAndKafkaGo(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	for _, name := range []string{"sarama", "kafkago"} {
		if _, err := adm.CreateTopic(ctx, 6, 1, nil, name); err != nil {
			t.Fatal(err)
		}
		if leaders := c.leaders(1, name); countOf(leaders, 1) == 0 || countOf(leaders, 2) == 0 || countOf(leaders, 3) == 0 {
			t.Fatalf("%s's leaders %v: not on every node", name, leaders)
		}
	}
	const n = 300

	scfg := sarama.NewConfig()
	scfg.Version = sarama.V2_1_0_0
	scfg.Producer.Return.Successes = true
	scfg.Producer.RequiredAcks = sarama.WaitForAll
	scfg.Producer.Partitioner = sarama.NewRoundRobinPartitioner
	scfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	prod, err := sarama.NewSyncProducer([]string{c.addrs[2]}, scfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama", Value: sarama.StringEncoder(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	sg, err := sarama.NewConsumerGroup([]string{c.addrs[3]}, "sarama-group", scfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{want: n, done: make(chan struct{})}
	gctx, gcancel := context.WithCancel(ctx)
	go func() {
		for gctx.Err() == nil {
			_ = sg.Consume(gctx, []string{"sarama"}, h)
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatalf("sarama's group consumed %d of %d", h.count(), n)
	}
	gcancel()
	sg.Close()

	transport := &kafkago.Transport{} // its own, so its idle connections can be closed
	defer transport.CloseIdleConnections()
	w := &kafkago.Writer{Addr: kafkago.TCP(c.addrs[3]), Topic: "kafkago", Balancer: &kafkago.RoundRobin{}, RequiredAcks: kafkago.RequireAll, Transport: transport}
	var msgs []kafkago.Message
	for i := range n {
		msgs = append(msgs, kafkago.Message{Value: []byte(fmt.Sprint(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{c.addrs[1]}, GroupID: "kafkago-group", Topic: "kafkago", MaxWait: 200 * time.Millisecond})
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go read %d of %d: %v", len(seen), n, err)
		}
		seen[string(m.Value)] = true
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	for _, g := range []string{"sarama-group", "kafkago-group"} {
		lag, err := adm.Lag(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if err := lag.Error(); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		if total := lag[g].Lag.Total(); total != 0 {
			t.Fatalf("%s has lag %d after reading everything", g, total)
		}
	}
}

// countingHandler is a sarama group handler that marks and counts
// distinct values until it has want of them.
type countingHandler struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	done chan struct{}
}

func (h *countingHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *countingHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (h *countingHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		s.MarkMessage(m, "")
		h.mu.Lock()
		if h.seen == nil {
			h.seen = map[string]bool{}
		}
		h.seen[string(m.Value)] = true
		if len(h.seen) == h.want {
			s.Commit()
			close(h.done)
		}
		h.mu.Unlock()
	}
	return nil
}

// TestClusterAdminThroughAnyNode: partitions added, configs altered and a
// topic deleted through any node reach every node: new partitions are
// placed over the cluster, each node reports the new config, and the
// deleted topic's partition directories are removed on every node.
func TestClusterAdminThroughAnyNode(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm1, adm3 := kadm.NewClient(c.client(1)), kadm.NewClient(c.client(3))
	if _, err := adm1.CreateTopic(ctx, 3, 1, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	c.leaders(3, "grow") // node 3 knows the topic (kadm reads its partition count first)
	if cp, err := adm3.CreatePartitions(ctx, 3, "grow"); err != nil || cp.Error() != nil {
		t.Fatalf("create partitions: %v %v", err, cp.Error())
	}
	var leaders []int32
	for deadline := time.Now().Add(5 * time.Second); len(leaders) != 6; time.Sleep(50 * time.Millisecond) {
		if leaders = c.leaders(2, "grow"); time.Now().After(deadline) {
			t.Fatalf("after adding 3 partitions node 2 lists leaders %v", leaders)
		}
	}
	for id := int32(1); id <= 3; id++ {
		if countOf(leaders, id) != 2 {
			t.Fatalf("6 partitions led by %v, want 2 per node", leaders)
		}
	}
	r, err := adm3.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("60000")}}, "grow")
	if err == nil {
		_, err = r.On("grow", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "grow"
			res.ConfigNames = []string{"retention.ms"}
			req.Resources = append(req.Resources, res)
			resp, err := req.RequestWith(ctx, c.node(id))
			if err == nil && len(resp.Resources) == 1 && len(resp.Resources[0].Configs) == 1 && *resp.Resources[0].Configs[0].Value == "60000" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d never reported retention.ms=60000: %v %+v", id, err, resp)
			}
		}
	}
	dirs := func() (n int) {
		for id := int32(1); id <= 3; id++ {
			m, _ := filepath.Glob(filepath.Join(c.dirs[id], "grow-*"))
			n += len(m)
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); dirs() != 6; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) { // each node opens its partitions as its metadata reaches it
			t.Fatalf("%d partition directories of grow over the three nodes, want 6", dirs())
		}
	}
	if _, err := kadm.NewClient(c.client(2)).DeleteTopics(ctx, "grow"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); dirs() != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d partition directories of the deleted topic remain", dirs())
		}
	}
}

// TestClusterForwardsAdminRequests: CreateTopics and DeleteTopics sent to
// a node that does not lead the quorum are forwarded to the controller in
// an Envelope over the internal listener, answered with the controller's
// response, and the node already lists the topic when it answers. Client
// listeners do not advertise Envelope.
func TestClusterForwardsAdminRequests(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctl := c.metadata(1, nil).ControllerID
	var other int32 = 1
	if other == ctl {
		other = 2
	}
	node := c.node(other)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "forwarded", 3, 1
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
	resp, err := req.RequestWith(ctx, node)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics to node %d (controller %d): %v %+v", other, ctl, err, resp)
	}
	if got := c.metadata(other, []string{"forwarded"}); got.Topics[0].ErrorCode != 0 || len(got.Topics[0].Partitions) != 3 {
		t.Fatalf("node %d answered the create but does not list the topic: %+v", other, got.Topics[0])
	}
	again, err := req.RequestWith(ctx, node)
	if err != nil || again.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("a second create through node %d: %v %+v, want TOPIC_ALREADY_EXISTS", other, err, again)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("forwarded")
	del.Topics, del.TimeoutMillis = append(del.Topics, dt), 10000
	dresp, err := del.RequestWith(ctx, node)
	if err != nil || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteTopics to node %d: %v %+v", other, err, dresp)
	}
	if got := c.metadata(other, []string{"forwarded"}); got.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("node %d answered the delete but still lists the topic: %+v", other, got.Topics[0])
	}
	versions, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range versions.ApiKeys {
		if k.ApiKey == 58 {
			t.Fatal("a client listener advertises Envelope")
		}
	}
}
