package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// DescribeGroups: v0-v6.
//
// Behavior:
//   - Each group's state (Kafka's names: Empty, PreparingRebalance,
//     CompletingRebalance, Stable, Dead), protocol type, protocol (while
//     Stable) and members with client id and host; each member's metadata
//     and assignment only while Stable, as Kafka.
//   - An unknown group is described as Dead with no error, as Kafka does;
//     an empty group id is INVALID_GROUP_ID.
//   - v4+: members' group.instance.id.
//   - v3+: KIP-430 authorized operations of each group answered without
//     an error, when requested (authz_ops.go); else Kafka's omitted value.
//   - A consumer-protocol (KIP-848) group is not described here, as in
//     Kafka 4: v6 answers GROUP_ID_NOT_FOUND "Group X is not a classic
//     group." (ConsumerGroupDescribe describes it); before v6, Dead with no
//     error, as for an unknown group.
//   - A share group is not described here either, as in Kafka 4: v6
//     answers GROUP_ID_NOT_FOUND "Group X is not a classic group."
//     (ShareGroupDescribe describes it); before v6, Dead with no error.
//   - v6 (KIP-1043): an unknown group is GROUP_ID_NOT_FOUND with a
//     message, and every error carries its message. (kadm v1.20's Lag stops
//     at that answer; `strand group lag` then computes a consumer group's
//     lag itself.)

func (s *Server) handleDescribeGroups(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	var descs []group.GroupDescription
	for _, id := range req.Groups {
		descs = append(descs, s.groupsFor(id).Describe(ctx, []string{id})...)
	}
	for _, d := range descs {
		switch {
		case req.Version < 6 && d.Code == group.CodeGroupIDNotFound:
			d = group.GroupDescription{GroupID: d.GroupID, State: group.StateDead}
		case req.Version >= 6 && d.Code == group.CodeNone && d.State == group.StateDead && d.ProtocolType == "" && len(d.Members) == 0:
			d.Code, d.Message = group.CodeGroupIDNotFound, "Group "+d.GroupID+" not found."
			if s.isShareGroup(d.GroupID) {
				d.Message = "Group " + d.GroupID + " is not a classic group."
			}
		}
		g := kmsg.NewDescribeGroupsResponseGroup()
		if req.Version >= 6 && d.Message != "" {
			msg := d.Message
			g.ErrorMessage = &msg
		}
		g.Group, g.ErrorCode, g.State = d.GroupID, int16(d.Code), d.State.String()
		g.ProtocolType, g.Protocol = d.ProtocolType, d.Protocol
		g.AuthorizedOperations = -2147483648
		for _, m := range d.Members {
			gm := kmsg.NewDescribeGroupsResponseGroupMember()
			gm.MemberID, gm.ClientID, gm.ClientHost = m.MemberID, m.ClientID, m.ClientHost
			gm.ProtocolMetadata, gm.MemberAssignment = orEmpty(m.Metadata), orEmpty(m.Assignment)
			if m.InstanceID != "" {
				id := m.InstanceID
				gm.InstanceID = &id
			}
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
