package kafka

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// ShareAcknowledge: v1-v2 (KIP-932; v2 adds KIP-1222's IsRenewAck and
// AcquisitionLockTimeoutMillis). v0 was Kafka 4.0's early access.
//
// Behavior:
//   - Acknowledges records of a share session without fetching: epoch 0
//     is INVALID_SHARE_SESSION_EPOCH (a session must exist), n > 0 must be
//     the session's epoch and moves it on, -1 closes the session after the
//     acknowledgements and releases the member's other acquired records.
//   - Per partition all or nothing, as ShareFetch's piggybacked ones:
//     durable (and dead letters written) before the response.

const apiKeyShareAcknowledge = 79

func (s *Server) handleShareAcknowledge(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	node, code := s.shareNode()
	if node == nil {
		resp.ErrorCode = code
		return resp, nil
	}
	group, member := deref(req.GroupID), deref(req.MemberID)
	resp.AcquisitionLockTimeoutMillis = int32(node.Coordinator.GroupConfig(group).Partition.LockDuration / time.Millisecond)
	if group == "" || member == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.ShareSessionEpoch == share.SessionOpen {
		resp.ErrorCode = kerr.InvalidShareSessionEpoch.Code
		return resp, nil
	}
	if err := node.Sessions.Check(group, member, req.ShareSessionEpoch); err != nil {
		resp.ErrorCode, resp.ErrorMessage = shareCode(err), shareMessage(err)
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			tp, err := s.shareTP(t.TopicID, p.Partition)
			if err == nil {
				acks := make([]share.Ack, 0, len(p.AcknowledgementBatches))
				for _, b := range p.AcknowledgementBatches {
					acks = append(acks, share.Ack{First: share.Offset(b.FirstOffset), Last: share.Offset(b.LastOffset), Types: ackTypes(b.AcknowledgeTypes)})
				}
				err = node.Manager.Acknowledge(ctx, group, member, tp, acks)
			}
			rp.ErrorCode, rp.ErrorMessage = shareAckCode(err), shareMessage(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if _, err := node.Sessions.Use(group, member, req.ShareSessionEpoch, nil, nil, connOf(ctx)); err != nil {
		resp.ErrorCode, resp.ErrorMessage = shareCode(err), shareMessage(err)
		return resp, nil
	}
	if req.ShareSessionEpoch == share.SessionFinal {
		node.Manager.ReleaseMember(ctx, group, member)
	}
	return resp, nil
}
