package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/share"
)

// AlterShareGroupOffsets: v0 (KIP-932).
//
// Behavior:
//   - Sets each named share-partition's start offset, forgetting its
//     records' states (their delivery counts too), persisted before the
//     answer; a group without state gets it here.
//   - Only while the group has no members: NON_EMPTY_GROUP otherwise; on
//     a cluster only the group's coordinator answers (NOT_COORDINATOR).
//   - On a cluster the state is written at each share-partition's share
//     coordinator (InitializeShareGroupState at the next state epoch), so
//     partitions led by any node are reset; their leaders' windows are
//     fenced and reloaded (sharenode.Node.Reset, share/remote.go).
//   - An unknown topic or partition answers UNKNOWN_TOPIC_OR_PARTITION for
//     it; a negative offset INVALID_REQUEST.

func (s *Server) handleAlterShareGroupOffsets(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	node, code, msg := s.emptyShareGroup(req.GroupID)
	if node == nil {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		topic, terr := s.b.Topic(rt.Topic)
		if terr == nil {
			t.TopicID = [16]byte(topic.ID)
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			var err error
			switch {
			case terr != nil || rp.Partition < 0 || rp.Partition >= topic.Partitions():
				err = broker.ErrUnknownTopicOrPartition
			case rp.StartOffset < 0:
				err = kerr.InvalidRequest
			default:
				err = node.Reset(ctx, req.GroupID, share.TopicPartition{TopicID: topic.ID, Topic: rt.Topic, Partition: rp.Partition}, share.Offset(rp.StartOffset))
			}
			p.ErrorCode, p.ErrorMessage = shareAckCode(err), shareMessage(err)
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}
