package kafka

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/group"
)

// ConsumerGroupDescribe: v0-v1 (KIP-848).
//
// Behavior:
//   - Describes consumer-protocol groups: state (Empty, Assigning,
//     Reconciling, Stable), group epoch, assignment epoch, the server
//     assignor in use, and per member (sorted by member id) its ids, rack,
//     epoch, client id and host, subscription (names and regex), current
//     assignment and target assignment, by topic id and name.
//   - v1: MemberType is 1 for a member on the consumer protocol, 0 for a
//     classic member of the group (online migration).
//   - A group that does not exist, or is a classic group:
//     GROUP_ID_NOT_FOUND with Kafka's message.
//   - KIP-430 authorized operations of each group answered without an
//     error, when requested (authz_ops.go); else Kafka's omitted value.

func (s *Server) handleConsumerGroupDescribe(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		for _, d := range s.groupsFor(id).ConsumerDescribe(ctx, []string{id}) {
			resp.Groups = append(resp.Groups, s.describedConsumerGroup(req.Version, d))
		}
	}
	return resp, nil
}

func (s *Server) describedConsumerGroup(version int16, d group.ConsumerGroupDescription) kmsg.ConsumerGroupDescribeResponseGroup {
	sg := kmsg.NewConsumerGroupDescribeResponseGroup()
	sg.Group, sg.ErrorCode = d.GroupID, int16(d.Code)
	if d.Message != "" {
		msg := d.Message
		sg.ErrorMessage = &msg
	}
	if d.Group == nil {
		return sg
	}
	g := d.Group
	sg.State, sg.Epoch, sg.AssignmentEpoch, sg.AssignorName = g.State().String(), g.Epoch, g.AssignmentEpoch, d.Assignor
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		sm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		sm.MemberID, sm.MemberEpoch, sm.ClientID, sm.ClientHost = m.ID, m.Epoch, m.ClientID, m.ClientHost
		if m.InstanceID != "" {
			inst := m.InstanceID
			sm.InstanceID = &inst
		}
		if m.Rack != "" {
			rack := m.Rack
			sm.RackID = &rack
		}
		sm.SubscribedTopics = append([]string{}, m.Topics...)
		if m.Regex != "" {
			re := m.Regex
			sm.SubscribedTopicRegex = &re
		}
		sm.Assignment = s.describedAssignment(m.Assigned)
		sm.TargetAssignment = s.describedAssignment(g.Target[m.ID])
		if version >= 1 {
			sm.MemberType = 1 // consumer protocol
			if m.Classic != nil {
				sm.MemberType = 0 // classic
			}
		}
		sg.Members = append(sg.Members, sm)
	}
	return sg
}

func (s *Server) describedAssignment(ps []assign.Partition) kmsg.Assignment {
	a := kmsg.Assignment{TopicPartitions: []kmsg.AssignmentTopicPartition{}}
	for _, tp := range groupByTopic(ps) {
		at := kmsg.AssignmentTopicPartition{Topic: tp.topic, Partitions: tp.partitions}
		if t, err := s.b.Topic(tp.topic); err == nil {
			at.TopicID = [16]byte(t.ID)
		}
		a.TopicPartitions = append(a.TopicPartitions, at)
	}
	return a
}
