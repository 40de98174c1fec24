package kafka

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// ShareGroupHeartbeat: v1 (KIP-932; v0 was Kafka 4.0's early access, with
// a different member-id contract, and is not served).
//
// Behavior:
//   - Joins (epoch 0, SubscribedTopicNames required), heartbeats (the
//     member's epoch) and leaves (-1) a share group. The member id is the
//     client's (v1) and must be set: INVALID_REQUEST otherwise.
//   - The assignment is computed by the server (share.Assign): each
//     subscribed topic's partitions round-robin over its members, and with
//     more members than partitions several members per partition. It is
//     sent whole when it changed since the member's epoch, on a join, and
//     on a full heartbeat (SubscribedTopicNames set); else null.
//   - An epoch other than the member's: FENCED_MEMBER_EPOCH; an unknown
//     member: UNKNOWN_MEMBER_ID (the client rejoins with epoch 0).
//   - A member silent for share.session.timeout.ms (45 s) is removed and
//     its acquired records are released, as a leave does.
//   - On a cluster, served by the group's coordinator (the leader of its
//     __consumer_offsets partition, as KIP-848 groups): NOT_COORDINATOR
//     elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads.
//
// Deviations:
//   - Membership is held in memory: after a restart members rejoin (they
//     are told UNKNOWN_MEMBER_ID), which costs no delivery.
//   - Share groups and consumer groups have separate id namespaces.

const apiKeyShareGroupHeartbeat = 76

func (s *Server) handleShareGroupHeartbeat(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	node, code := s.shareNode()
	if node == nil {
		resp.ErrorCode = code
		return resp, nil
	}
	if code := s.shareCoordinatorCode(req.GroupID); code != 0 { // a cluster: another node coordinates it
		resp.ErrorCode = code
		return resp, nil
	}
	ci := clientFrom(ctx)
	hr, err := node.Coordinator.Heartbeat(ctx, share.HeartbeatRequest{
		Group: req.GroupID, MemberID: req.MemberID, Epoch: req.MemberEpoch,
		RackID: req.RackID, Topics: req.SubscribedTopicNames,
		ClientID: ci.id, ClientHost: ci.host,
	})
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = shareCode(err), shareMessage(err)
		return resp, nil
	}
	if req.MemberEpoch == share.LeaveEpoch {
		node.Sessions.Drop(req.GroupID, req.MemberID)
	}
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = hr.Epoch
	resp.HeartbeatIntervalMillis = int32(hr.Interval / time.Millisecond)
	if hr.Assignment != nil {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = s.shareAssignment(hr.Assignment)
		resp.Assignment = &a
	}
	return resp, nil
}

// shareAssignment lists an assignment by topic id, sorted; a topic gone
// meanwhile is left out.
func (s *Server) shareAssignment(a map[string][]int32) []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition {
	out := []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, name := range slices.Sorted(maps.Keys(a)) {
		t, err := s.b.Topic(name)
		if err != nil || len(a[name]) == 0 {
			continue
		}
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = [16]byte(t.ID), slices.Clone(a[name])
		out = append(out, tp)
	}
	slices.SortFunc(out, func(x, y kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition) int {
		return bytes.Compare(x.TopicID[:], y.TopicID[:])
	})
	return out
}
