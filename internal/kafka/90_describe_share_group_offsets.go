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
//   - On a cluster the summaries come from each share-partition's share
//     coordinator (ReadShareGroupStateSummary, sharenode), so every node's
//     share-partitions are seen; null topics ask about every partition of
//     every topic. The lag is computed where this node holds a replica of
//     the partition (its high watermark), else -1.
//   - Topics the principal may not describe answer
//     TOPIC_AUTHORIZATION_FAILED (authz_custom.go).

func (s *Server) handleDescribeShareGroupOffsets(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	node, code := s.shareNode()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		var parts []share.TopicPartition
		var err error
		if node != nil {
			parts, err = node.Partitions(ctx, rg.GroupID)
		}
		switch {
		case node == nil:
			g.ErrorCode = code
		case err != nil:
			g.ErrorCode, g.ErrorMessage = shareCode(err), shareMessage(err)
		case len(parts) == 0 && !node.Coordinator.Has(rg.GroupID):
			g.ErrorCode = kerr.GroupIDNotFound.Code
		default:
			g.Topics = s.shareOffsets(ctx, node, rg, parts)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func (s *Server) shareOffsets(ctx context.Context, node *broker.ShareNode, rg kmsg.DescribeShareGroupOffsetsRequestGroup, parts []share.TopicPartition) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	want := map[string][]int32{}
	if rg.Topics == nil {
		for _, tp := range parts {
			want[tp.Topic] = append(want[tp.Topic], tp.Partition)
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
			sum, ok, err := node.Summary(ctx, rg.GroupID, tp)
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = shareCode(err), shareMessage(err)
			} else if ok {
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
