package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// Heartbeat: v0-v4.
//
// Behavior:
//   - Keeps a member's session alive. REBALANCE_IN_PROGRESS tells a member
//     of a rebalancing group to rejoin; ILLEGAL_GENERATION,
//     UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID (v3+ static members) fence
//     stale members; an empty group id is INVALID_GROUP_ID.

func (s *Server) handleHeartbeat(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	greq := group.HeartbeatRequest{GroupID: req.Group, Generation: group.Generation(req.Generation), MemberID: req.MemberID}
	if req.InstanceID != nil {
		greq.InstanceID = *req.InstanceID
	}
	resp.ErrorCode = int16(s.groupsFor(greq.GroupID).Heartbeat(ctx, greq))
	return resp, nil
}
