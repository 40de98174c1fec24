package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// DescribeGroups: v0-v5.
//
// Behavior:
//   - Each group's state (Kafka's names: Empty, PreparingRebalance,
//     CompletingRebalance, Stable, Dead), protocol type, protocol (while
//     Stable) and members with client id and host; each member's metadata
//     and assignment only while Stable, as Kafka.
//   - An unknown group is described as Dead with no error, as Kafka does;
//     an empty group id is INVALID_GROUP_ID.
//   - v4+: members' group.instance.id.
//   - v3+: authorized operations are not computed: reported as Kafka's
//     "not requested" sentinel (-2147483648) even when requested.

func (s *Server) handleDescribeGroups(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	var descs []group.GroupDescription
	for _, id := range req.Groups {
		descs = append(descs, s.groupsFor(id).Describe(ctx, []string{id})...)
	}
	for _, d := range descs {
		g := kmsg.NewDescribeGroupsResponseGroup()
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
