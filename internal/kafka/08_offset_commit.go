package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// OffsetCommit: v0-v9.
//
// Behavior:
//   - Commits through the group coordinator, which stores each offset as a
//     record of __consumer_offsets; the response has one code per partition,
//     in request order.
//   - v0 (no generation or member id) is a "simple" commit, allowed only to
//     a group without members, as every later version with generation -1
//     and no member id.
//   - Generation and member checks: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//     REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID (v7+ static members).
//   - A partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION; metadata
//     above offset.metadata.max.bytes (4096): OFFSET_METADATA_TOO_LARGE.
//   - v6+ LeaderEpoch is stored and returned by OffsetFetch; before v6 it
//     is -1.
//   - Consumer-protocol (KIP-848) groups: GenerationID is the member
//     epoch. A commit with a negative epoch is an admin commit, accepted
//     only while the group has no members; otherwise v9+ is required
//     (UNSUPPORTED_VERSION), the member must exist (UNKNOWN_MEMBER_ID),
//     and an epoch above the member's is STALE_MEMBER_EPOCH. An older
//     epoch is accepted for a partition the member holds since that epoch
//     or before (KIP-1251), else STALE_MEMBER_EPOCH. A v9+ commit with an
//     epoch to a group that does not exist: GROUP_ID_NOT_FOUND.
//
// Deviations:
//   - RetentionTimeMillis (v2-v4) and the v1 commit Timestamp are ignored:
//     offsets expire by the broker's offsets.retention.minutes alone
//     (internal/group/expire.go), as in Kafka since 2.1 (KIP-211).
//   - v10 (topic ids) is not served.

func (s *Server) handleOffsetCommit(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	greq := group.OffsetCommitRequest{
		Version:    req.Version,
		GroupID:    req.Group,
		Generation: group.Generation(req.Generation),
		MemberID:   req.MemberID,
		Offsets:    map[group.TopicPartition]group.OffsetAndMetadata{},
	}
	if req.Version == 0 {
		greq.Generation, greq.MemberID = group.NoGeneration, ""
	}
	if req.InstanceID != nil {
		greq.InstanceID = *req.InstanceID
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			o := group.OffsetAndMetadata{Offset: rp.Offset, LeaderEpoch: -1}
			if req.Version >= 6 {
				o.LeaderEpoch = rp.LeaderEpoch
			}
			if rp.Metadata != nil {
				o.Metadata = *rp.Metadata
			}
			greq.Offsets[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = o
		}
	}
	codes := s.groupsFor(req.Group).CommitOffsets(ctx, greq)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = int16(codes[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}])
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
