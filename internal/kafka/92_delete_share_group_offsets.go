package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// DeleteShareGroupOffsets: v0 (KIP-932).
//
// Behavior:
//   - Forgets the group's share-partition state on each named topic (a
//     tombstone in __share_group_state): the next fetch starts it again by
//     share.auto.offset.reset.
//   - Only while the group has no members: NON_EMPTY_GROUP otherwise; on
//     a cluster only the group's coordinator answers (NOT_COORDINATOR).
//   - On a cluster the state is deleted at each share-partition's share
//     coordinator (DeleteShareGroupState), whichever node leads it; the
//     leader's window is fenced and reloaded (share/remote.go).
//   - An unknown topic: UNKNOWN_TOPIC_OR_PARTITION.

func (s *Server) handleDeleteShareGroupOffsets(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	node, code, msg := s.emptyShareGroup(req.GroupID)
	if node == nil {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		topic, err := s.b.Topic(rt.Topic)
		if err == nil {
			t.TopicID = [16]byte(topic.ID)
			for p := range topic.Partitions() {
				if err = node.DeleteOffsets(ctx, req.GroupID, share.TopicPartition{TopicID: topic.ID, Topic: rt.Topic, Partition: p}); err != nil {
					break
				}
			}
		}
		t.ErrorCode, t.ErrorMessage = shareAckCode(err), shareMessage(err)
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
