package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupDescribe: v1 (KIP-932).
//
// Behavior:
//   - Per group: state (Empty, Stable; Dead with GROUP_ID_NOT_FOUND for a
//     group this coordinator does not know), group and assignment epoch,
//     the assignor ("simple"), and per member (sorted by id) its ids, rack,
//     epoch, client id and host, subscription and assignment.
//   - KIP-430 authorized operations are not filled in (omitted).

func (s *Server) handleShareGroupDescribe(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	node, code := s.shareNode()
	for _, id := range req.GroupIDs {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID = id
		g.AuthorizedOperations = omittedOps
		if node == nil || s.shareCoordinatorCode(id) != 0 {
			g.ErrorCode = code
			if node != nil {
				g.ErrorCode = s.shareCoordinatorCode(id) // a cluster: another node coordinates it
			}
			resp.Groups = append(resp.Groups, g)
			continue
		}
		d := node.Coordinator.Describe([]string{id})[0]
		g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor = d.State, d.Epoch, d.Epoch, "simple"
		if d.State == "Dead" {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			g.ErrorMessage = &msg
		}
		for _, m := range d.Members {
			gm := kmsg.NewShareGroupDescribeResponseGroupMember()
			gm.MemberID, gm.MemberEpoch, gm.ClientID, gm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
			if m.RackID != "" {
				rack := m.RackID
				gm.RackID = &rack
			}
			gm.SubscribedTopicNames = slices.Clone(m.Topics)
			for _, name := range slices.Sorted(maps.Keys(m.Assigned)) {
				t, err := s.b.Topic(name)
				if err != nil {
					continue
				}
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID, tp.Topic, tp.Partitions = [16]byte(t.ID), name, slices.Clone(m.Assigned[name])
				gm.Assignment.TopicPartitions = append(gm.Assignment.TopicPartitions, tp)
			}
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
