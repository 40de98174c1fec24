package strand

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterLeaderHints: after leadership of a partition moves away from
// a node, a Produce (v10+) or consumer Fetch (v16+) sent to that node
// answers NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH) naming the new
// leader and its epoch (KIP-951 CurrentLeader) and lists the new leader's
// client endpoint (NodeEndpoints); a franz-go producer that knew the old
// leader keeps producing, and every record is read back once.
func TestClusterLeaderHints(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "kh", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	create.Topics = append(create.Topics, rt)
	if resp, err := create.RequestWith(ctx, c.client(2)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create kh: %v %+v", err, resp)
	}
	c.waitISR(1, "kh", []int32{1, 2, 3}, 10*time.Second)
	before := c.metadata(1, []string{"kh"}).Topics[0].Partitions[0]
	if before.Leader != 1 {
		t.Fatalf("kh-0 is led by %d, want its first replica 1", before.Leader)
	}
	p := c.client(3)
	vals := produceAll(ctx, t, p, "kh", "before", 20)

	c.failOver(1, "kh") // leadership goes to 2, the next replica; 1 returns a follower
	after := c.metadata(1, []string{"kh"}).Topics[0].Partitions[0]
	if after.Leader == 1 || after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("after node 1's failover kh-0 is led by %d at epoch %d (before: 1 at %d)", after.Leader, after.LeaderEpoch, before.LeaderEpoch)
	}
	wantHost, wantPort := hostPort(t, c.addrs[after.Leader])
	checkEndpoints := func(what string, got []int32, hosts []string, ports []int32) {
		t.Helper()
		if !slices.Equal(got, []int32{after.Leader}) || hosts[0] != wantHost || ports[0] != wantPort {
			t.Fatalf("%s to node 1: NodeEndpoints %v %v %v, want node %d at %s:%d", what, got, hosts, ports, after.Leader, wantHost, wantPort)
		}
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "kh", c.metadata(1, []string{"kh"}).Topics[0].TopicID
	pp := kmsg.NewProduceRequestTopicPartition()
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	presp, err := pr.RequestWith(ctx, c.node(1))
	if err != nil {
		t.Fatal(err)
	}
	if presp.Version < 10 {
		t.Fatalf("produce answered at v%d; KIP-951 needs v10+", presp.Version)
	}
	sp := presp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != after.Leader || sp.CurrentLeader.LeaderEpoch != after.LeaderEpoch {
		t.Fatalf("produce to node 1: error %v, CurrentLeader %+v; want NOT_LEADER_OR_FOLLOWER naming %d at epoch %d",
			kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader, after.Leader, after.LeaderEpoch)
	}
	var ids, ports []int32
	var hosts []string
	for _, b := range presp.Brokers {
		ids, hosts, ports = append(ids, b.NodeID), append(hosts, b.Host), append(ports, b.Port)
	}
	checkEndpoints("produce", ids, hosts, ports)

	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "kh", pt.TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, before.LeaderEpoch
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fresp, err := fr.RequestWith(ctx, c.node(1))
	if err != nil {
		t.Fatal(err)
	}
	if fresp.Version < 16 {
		t.Fatalf("fetch answered at v%d; KIP-951 needs v16+", fresp.Version)
	}
	fpr := fresp.Topics[0].Partitions[0]
	if (fpr.ErrorCode != kerr.NotLeaderForPartition.Code && fpr.ErrorCode != kerr.FencedLeaderEpoch.Code) ||
		fpr.CurrentLeader.LeaderID != after.Leader || fpr.CurrentLeader.LeaderEpoch != after.LeaderEpoch {
		t.Fatalf("fetch from node 1 at the old epoch: error %v, CurrentLeader %+v; want NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH naming %d at epoch %d",
			kerr.ErrorForCode(fpr.ErrorCode), fpr.CurrentLeader, after.Leader, after.LeaderEpoch)
	}
	ids, hosts, ports = nil, nil, nil
	for _, b := range fresp.Brokers {
		ids, hosts, ports = append(ids, b.NodeID), append(hosts, b.Host), append(ports, b.Port)
	}
	checkEndpoints("fetch", ids, hosts, ports)

	// The producer still thinks node 1 leads: its next batch goes there,
	// and the hint moves it.
	vals = append(vals, produceAll(ctx, t, p, "kh", "after", 20)...)
	consumeAll(ctx, t, c, 2, "kh", vals)
}

func hostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, int32(n)
}
