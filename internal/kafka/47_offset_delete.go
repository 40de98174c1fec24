package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// OffsetDelete: v0.
//
// Behavior:
//   - Deletes a group's committed offsets for the given partitions
//     (KIP-496), writing tombstones to __consumer_offsets; a partition
//     without a commit succeeds.
//   - An unknown group: GROUP_ID_NOT_FOUND (top level). While the group has
//     members, a partition of a topic they subscribe to is
//     GROUP_SUBSCRIBED_TO_TOPIC; a non-"consumer" group with members is
//     NON_EMPTY_GROUP.

func (s *Server) handleOffsetDelete(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	var tps []group.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tps = append(tps, group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
		}
	}
	code, codes := s.groupsFor(req.Group).DeleteOffsets(ctx, req.Group, tps)
	resp.ErrorCode = int16(code)
	if code != group.CodeNone {
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = int16(codes[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}])
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
