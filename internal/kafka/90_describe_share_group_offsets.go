package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/share"
)

// DescribeShareGroupOffsets: v0-v1 (KIP-932; v1 adds Lag).
//
// Behavior:
//   - Per group and partition: the share-partition start offset (-1 where
//     the group has no state), leader epoch -1, and (v1) the lag: the
//     records from the start offset to the high watermark not yet
//     acknowledged or archived.
//   - Null topics: every partition the group has state for.
//   - A group with neither members, configs nor state: GROUP_ID_NOT_FOUND.
//   - Topics the principal may not describe answer
//     TOPIC_AUTHORIZATION_FAILED (authz_custom.go).

func (s *Server) handleDescribeShareGroupOffsets(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	node, code := s.shareNode()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		known := node != nil && len(node.Manager.Partitions(rg.GroupID)) > 0
		switch {
		case node == nil:
			g.ErrorCode = code
		case !known && !node.Coordinator.Has(rg.GroupID):
			g.ErrorCode = kerr.GroupIDNotFound.Code
		default:
			g.Topics = s.shareOffsets(node, rg)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func (s *Server) shareOffsets(node *broker.ShareNode, rg kmsg.DescribeShareGroupOffsetsRequestGroup) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	want := map[string][]int32{}
	if rg.Topics == nil {
		for _, k := range node.Manager.Partitions(rg.GroupID) {
			if t, err := s.b.TopicByID(broker.TopicID(k.TopicID)); err == nil {
				want[t.Name] = append(want[t.Name], k.Partition)
			}
		}
	}
	for _, t := range rg.Topics {
		want[t.Topic] = append(want[t.Topic], t.Partitions...)
	}
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, name := range slices.Sorted(maps.Keys(want)) {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = name
		t, terr := s.b.Topic(name)
		if terr == nil {
			rt.TopicID = [16]byte(t.ID)
		}
		for _, p := range slices.Compact(slices.Sorted(slices.Values(want[name]))) {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
			if terr != nil || p < 0 || p >= t.Partitions() {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			tp := share.TopicPartition{TopicID: t.ID, Topic: name, Partition: p}
			if sum, ok := node.Manager.Summary(rg.GroupID, tp); ok {
				rp.StartOffset = int64(sum.Start)
				if part, err := t.Partition(broker.PartitionID(p)); err == nil {
					rp.Lag = max(0, int64(part.HighWatermark())-int64(sum.Start)-int64(sum.Done))
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
