package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// LeaveGroup: v0-v5.
//
// Behavior:
//   - Members leave the group, which rebalances without them.
//   - v0-v2: one member by id; its result is the response's error code.
//   - v3+ (KIP-345): a batch of members, each by member id or by
//     group.instance.id (an admin removing static members), with one
//     result per member; the top-level code is for group-level errors.
//   - v5+: a reason per member (logged).
//   - An unknown group: UNKNOWN_MEMBER_ID for each member.

func (s *Server) handleLeaveGroup(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	greq := group.LeaveRequest{GroupID: req.Group}
	if req.Version < 3 {
		greq.Members = []group.LeaveMember{{MemberID: req.MemberID}}
	}
	for _, m := range req.Members {
		lm := group.LeaveMember{MemberID: m.MemberID}
		if m.InstanceID != nil {
			lm.InstanceID = *m.InstanceID
		}
		if m.Reason != nil {
			lm.Reason = *m.Reason
		}
		greq.Members = append(greq.Members, lm)
	}
	r := s.groupsFor(greq.GroupID).Leave(ctx, greq)
	resp.ErrorCode = int16(r.Code)
	if req.Version < 3 {
		if r.Code == group.CodeNone && len(r.Members) == 1 {
			resp.ErrorCode = int16(r.Members[0].Code)
		}
		return resp, nil
	}
	for _, m := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.ErrorCode = m.MemberID, int16(m.Code)
		if m.InstanceID != "" {
			id := m.InstanceID
			rm.InstanceID = &id
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
