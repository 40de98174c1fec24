package strand

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describePartition asks node id for partition 0 of topic by
// DescribeTopicPartitions.
func (c *testCluster) describePartition(id int32, topic string) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	c.t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.node(id))
	if err != nil {
		c.t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		c.t.Fatalf("describe %s on node %d: %+v", topic, id, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// waitDescribed waits until node id describes partition 0 of topic as ok
// says, and returns that description.
func (c *testCluster) waitDescribed(id int32, topic, what string, ok func(kmsg.DescribeTopicPartitionsResponseTopicPartition) bool) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	c.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		p := c.describePartition(id, topic)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s/0 from node %d: %+v; want %s", topic, id, p, what)
		}
	}
}

// createOnePartition creates topic, one partition on replicas, with
// min.insync.replicas minISR, through node seed.
func (c *testCluster) createOnePartition(ctx context.Context, seed int32, topic string, replicas []int32, minISR string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsgStr(minISR)
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.client(seed))
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		c.t.Fatalf("create %s on %v: %v %+v", topic, replicas, err, resp)
	}
}

// TestClusterDescribeTopicPartitionsELR: with min.insync.replicas 3 on
// three replicas, the replica that stops leaves an ISR that is then too
// small and becomes an eligible leader replica, which
// DescribeTopicPartitions shows (offline, too); back in the ISR, it leaves
// the ELR.
func TestClusterDescribeTopicPartitionsELR(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createOnePartition(ctx, 1, "elr", []int32{1, 2, 3}, "3")
	c.waitISR(1, "elr", []int32{1, 2, 3}, 10*time.Second)
	if p := c.describePartition(1, "elr"); len(p.EligibleLeaderReplicas)+len(p.LastKnownELR) != 0 {
		t.Fatalf("a whole ISR: ELR %v, last known %v; want none", p.EligibleLeaderReplicas, p.LastKnownELR)
	}

	if err := c.nodes[3].Close(); err != nil {
		t.Fatal(err)
	}
	delete(c.nodes, 3)
	p := c.waitDescribed(1, "elr", "ELR [3], node 3 offline", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return slices.Equal(p.EligibleLeaderReplicas, []int32{3}) && slices.Equal(p.OfflineReplicas, []int32{3})
	})
	if isr := slices.Sorted(slices.Values(p.ISR)); !slices.Equal(isr, []int32{1, 2}) || len(p.LastKnownELR) != 0 ||
		!slices.Equal(p.Replicas, []int32{1, 2, 3}) || (p.LeaderID != 1 && p.LeaderID != 2) {
		t.Errorf("node 3 stopped: %+v; want ISR [1 2] led by one of them, replicas [1 2 3], no last known ELR", p)
	}
	c.waitDescribed(2, "elr", "ELR [3] as node 1 says", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return slices.Equal(p.EligibleLeaderReplicas, []int32{3})
	})

	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	c.waitDescribed(1, "elr", "ISR [1 2 3], no ELR", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return len(p.ISR) == 3 && len(p.EligibleLeaderReplicas) == 0 && len(p.OfflineReplicas) == 0
	})
}

// TestClusterDescribeTopicPartitionsLastKnownELR: with min.insync.replicas
// 2 on replicas 1 and 2 (of five nodes, so the quorum outlives both), the
// partition's last replica to stop empties its ISR: both replicas are in
// the ELR, the partition has no leader, and its last leader is the last
// known ELR.
func TestClusterDescribeTopicPartitionsLastKnownELR(t *testing.T) {
	c := startClusterN(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createOnePartition(ctx, 3, "lk", []int32{1, 2}, "2")
	c.waitISR(3, "lk", []int32{1, 2}, 10*time.Second)
	for _, id := range []int32{2, 1} {
		if err := c.nodes[id].Close(); err != nil {
			t.Fatal(err)
		}
		delete(c.nodes, id)
	}
	p := c.waitDescribed(3, "lk", "no ISR, ELR [1 2], last known ELR [1], both offline (fenced)", func(p kmsg.DescribeTopicPartitionsResponseTopicPartition) bool {
		return len(p.ISR) == 0 && slices.Equal(p.EligibleLeaderReplicas, []int32{1, 2}) && slices.Equal(p.LastKnownELR, []int32{1}) &&
			slices.Equal(p.OfflineReplicas, []int32{1, 2})
	})
	if p.LeaderID != -1 {
		t.Errorf("both replicas stopped: %+v; want no leader", p)
	}
}
