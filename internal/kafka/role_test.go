package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// TestFollowerAnswersNotLeader: a partition this node follows answers
// produce, and a fetch before v11, with NOT_LEADER_OR_FOLLOWER, serves a
// consumer's fetch v11+ from its copy (KIP-392, as Kafka does), and
// Metadata reports its leader epoch and leader.
func TestFollowerAnswersNotLeader(t *testing.T) {
	t.Parallel()
	ts := startServer(t, broker.Config{}, Config{})
	tp := createTopic(t, ts.b, "t", 1, nil)
	p, _ := tp.Partition(0)
	if err := p.BecomeFollower(3, 7, []broker.NodeID{0, 7}, []broker.NodeID{7}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts.addr)
	if pp := producePartition(t, c.do(produceReq("t", 0, batch(t, 1, -1, -1, -1)), 9)); pp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: %v", kerr.ErrorForCode(pp.ErrorCode))
	}
	if fp := fetchPartition(t, c.do(fetchReq("t", tp.ID, map[int32]int64{0: 0}), 10)); fp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch v10 from a follower: %v", kerr.ErrorForCode(fp.ErrorCode))
	}
	if fp := fetchPartition(t, c.do(fetchReq("t", tp.ID, map[int32]int64{0: 0}), 12)); fp.ErrorCode != 0 || fp.PreferredReadReplica != -1 {
		t.Fatalf("fetch v12 from a follower: %v, preferred replica %d", kerr.ErrorForCode(fp.ErrorCode), fp.PreferredReadReplica)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("t")
	req.Topics = append(req.Topics, rt)
	md := c.do(req, 9).(*kmsg.MetadataResponse)
	mp := md.Topics[0].Partitions[0]
	if mp.LeaderEpoch != 3 || mp.Leader != 7 {
		t.Fatalf("metadata: leader %d at epoch %d, want 7 at 3", mp.Leader, mp.LeaderEpoch)
	}
}
