package kafka

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// SyncGroup: v0-v5.
//
// Behavior:
//   - The leader sends every member's assignment (computed client-side);
//     each member, leader included, gets its own back. A follower's
//     SyncGroup waits for the leader's.
//   - The group's state and assignments are stored in __consumer_offsets
//     before anyone is answered, so a restarted broker knows the group.
//   - v3+: group.instance.id is checked (FENCED_INSTANCE_ID).
//   - v5+: ProtocolType and Protocol, when set, must match the group's
//     (INCONSISTENT_GROUP_PROTOCOL), and are returned.
//   - ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS as Kafka.

func (s *Server) handleSyncGroup(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	greq := group.SyncRequest{GroupID: req.Group, Generation: group.Generation(req.Generation), MemberID: req.MemberID}
	if req.InstanceID != nil {
		greq.InstanceID = *req.InstanceID
	}
	if req.ProtocolType != nil {
		greq.ProtocolType = *req.ProtocolType
	}
	if req.Protocol != nil {
		greq.Protocol = *req.Protocol
	}
	for _, a := range req.GroupAssignment {
		// Copied: the coordinator keeps it, and the request's bytes alias the
		// connection's frame buffer, which the next request reuses.
		greq.Assignments = append(greq.Assignments, group.MemberAssignment{MemberID: a.MemberID, Assignment: bytes.Clone(a.MemberAssignment)})
	}
	r := s.groupsFor(greq.GroupID).Sync(ctx, greq)
	resp.ErrorCode = int16(r.Code)
	resp.MemberAssignment = r.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if r.ProtocolType != "" {
		pt := r.ProtocolType
		resp.ProtocolType = &pt
	}
	if r.Protocol != "" {
		p := r.Protocol
		resp.Protocol = &p
	}
	return resp, nil
}
