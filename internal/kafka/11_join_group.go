package kafka

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// JoinGroup: v0-v9.
//
// Behavior:
//   - The classic group protocol's join, through the group coordinator: the
//     response comes when the group's join phase ends (every known member
//     rejoined, or the rebalance timeout passed), so one JoinGroup may wait
//     that long; the client's request timeout allows for it.
//   - v0 has no rebalance timeout: the session timeout is used.
//   - v4+ (KIP-394): a new member without a member id first gets
//     MEMBER_ID_REQUIRED and its id, and must join again with it.
//   - v5+: group.instance.id (static membership, KIP-345); a second member
//     with an instance id in use: FENCED_INSTANCE_ID.
//   - v7+: the protocol type and name in the response (null on errors).
//   - Session timeout outside [group.min.session.timeout.ms,
//     group.max.session.timeout.ms] (6s, 30m): INVALID_SESSION_TIMEOUT;
//     an empty group id: INVALID_GROUP_ID; no protocol in common with the
//     group: INCONSISTENT_GROUP_PROTOCOL.
//   - The member's client id and host (as Kafka writes it: "/127.0.0.1")
//     are recorded for DescribeGroups.
//   - If the connection closes (or the broker shuts down) while the join
//     waits, the member stays in the join phase, as in Kafka.
//
// Deviations:
//   - v9 SkipAssignment is always false (KIP-814 not implemented).
//   - The v8+ Reason is only logged by the coordinator.

func (s *Server) handleJoinGroup(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	ci := clientFrom(ctx)
	greq := group.JoinRequest{
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		ClientID:             ci.id,
		ClientHost:           ci.host,
		ProtocolType:         req.ProtocolType,
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RequireKnownMemberID: req.Version >= 4,
	}
	if req.Version >= 1 {
		greq.RebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.InstanceID != nil {
		greq.InstanceID = *req.InstanceID
	}
	if req.Reason != nil {
		greq.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		// The coordinator keeps the metadata; the request's bytes alias the
		// connection's frame buffer, which the next request reuses.
		greq.Protocols = append(greq.Protocols, group.Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	r := s.groupsFor(greq.GroupID).Join(ctx, greq)
	resp.ErrorCode = int16(r.Code)
	resp.Generation = int32(r.Generation)
	resp.LeaderID = r.Leader
	resp.MemberID = r.MemberID
	if r.ProtocolType != "" {
		pt := r.ProtocolType
		resp.ProtocolType = &pt
	}
	if r.Protocol != "" {
		p := r.Protocol
		resp.Protocol = &p
	}
	for _, m := range r.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		if m.InstanceID != "" {
			id := m.InstanceID
			rm.InstanceID = &id
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
