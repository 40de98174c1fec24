package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group/consumer"
)

// ConsumerGroupHeartbeat: v0-v1 (KIP-848).
//
// Behavior:
//   - The next-generation group protocol: the broker computes each member's
//     target with a server-side assignor (uniform, the default, or range,
//     chosen by ServerAssignor) and hands it out incrementally, revoking
//     before assigning, so no partition is ever owned by two members. The
//     engine is internal/group/consumer; the group actor persists its
//     records in __consumer_offsets and runs session (45 s) and rebalance
//     timeouts.
//   - Epoch 0 joins, -1 leaves, -2 is a static member's temporary leave,
//     > 0 a heartbeat; Kafka's validation and codes (INVALID_REQUEST,
//     UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR,
//     UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, INVALID_REGULAR_EXPRESSION,
//     GROUP_MAX_SIZE_REACHED) with Kafka's messages.
//   - Owned partitions and the assignment travel by topic id; an owned
//     topic id this broker does not know is dropped from the owned list
//     (the topic was deleted: the member holds nothing of it).
//   - v1: the member id is the client's; v0: the broker makes one on join.
//   - A group id used by a classic group with members: GROUP_ID_NOT_FOUND
//     (an empty classic group converts).
//
// Deviations:
//   - No online migration of a live classic group
//     (group.consumer.migration.policy); see docs/GROUPS.md.

const apiKeyConsumerGroupHeartbeat = 68

func (s *Server) handleConsumerGroupHeartbeat(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	ci := clientFrom(ctx)
	creq := consumer.Request{
		Version:            req.Version,
		GroupID:            req.Group,
		MemberID:           req.MemberID,
		MemberEpoch:        req.MemberEpoch,
		InstanceID:         req.InstanceID,
		RackID:             req.RackID,
		RebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		Topics:             req.SubscribedTopicNames,
		Regex:              req.SubscribedTopicRegex,
		ServerAssignor:     req.ServerAssignor,
		ClientID:           ci.id,
		ClientHost:         ci.host,
	}
	if req.Version == 0 && req.MemberEpoch == consumer.JoinEpoch && req.MemberID == "" {
		creq.MemberID = newConsumerMemberID()
	}
	if req.Topics != nil {
		creq.Owned = []assign.Partition{}
		for _, t := range req.Topics {
			topic, err := s.b.TopicByID(broker.TopicID(t.TopicID))
			if err != nil {
				continue
			}
			for _, p := range t.Partitions {
				creq.Owned = append(creq.Owned, assign.Partition{Topic: topic.Name, Partition: p})
			}
		}
	}
	cresp := s.groupsFor(req.Group).ConsumerHeartbeat(ctx, creq)
	resp.ErrorCode = int16(cresp.Code)
	if cresp.Message != "" {
		msg := cresp.Message
		resp.ErrorMessage = &msg
	}
	if cresp.Code != consumer.None {
		return resp, nil
	}
	id := cresp.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = cresp.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(cresp.HeartbeatInterval / time.Millisecond)
	if cresp.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = s.assignmentTopics(cresp.Assignment)
		resp.Assignment = &a
	}
	return resp, nil
}

// assignmentTopics groups partitions (sorted by topic) by topic id; a topic
// gone meanwhile is left out.
func (s *Server) assignmentTopics(ps []assign.Partition) []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
	out := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, tp := range groupByTopic(ps) {
		t, err := s.b.Topic(tp.topic)
		if err != nil {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID, at.Partitions = [16]byte(t.ID), tp.partitions
		out = append(out, at)
	}
	slices.SortFunc(out, func(a, b kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) int {
		return bytes.Compare(a.TopicID[:], b.TopicID[:])
	})
	return out
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic groups partitions by topic, in order of first appearance.
func groupByTopic(ps []assign.Partition) []topicPartitions {
	var out []topicPartitions
	at := map[string]int{}
	for _, p := range ps {
		i, ok := at[p.Topic]
		if !ok {
			i = len(out)
			at[p.Topic] = i
			out = append(out, topicPartitions{topic: p.Topic})
		}
		out[i].partitions = append(out[i].partitions, p.Partition)
	}
	return out
}

// newConsumerMemberID makes a v0 member id: 16 random bytes in URL-safe
// base64 without padding, as Kafka's Uuid.toString (v1 clients make their
// own).
func newConsumerMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
