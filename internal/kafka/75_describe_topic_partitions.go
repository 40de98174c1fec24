package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// DescribeTopicPartitions: v0 (KIP-966).
//
// Behavior:
//   - Metadata's view of each partition — leader, leader epoch, replicas,
//     ISR, offline replicas (those on fenced brokers) — plus the eligible
//     leader replicas and the last known ELR of the partition's
//     registration. A single node has neither: both are empty. A leaderless
//     partition has leader -1 and no error code (Metadata's
//     LEADER_NOT_AVAILABLE is not part of this API).
//   - Topics by name only, deduplicated and answered in name order. An
//     unknown topic gets UNKNOWN_TOPIC_OR_PARTITION, or
//     INVALID_TOPIC_EXCEPTION when its name is not a legal topic name,
//     with a zero topic id.
//   - An empty topic list describes every topic, in name order; a topic
//     deleted meanwhile is left out rather than reported.
//   - ResponsePartitionLimit caps the partitions of one response, at most
//     2000 (Kafka's max.request.partition.size.limit default). When the
//     limit cuts a topic short, NextCursor names it and its first partition
//     left out; when it is used up exactly at a topic boundary, NextCursor
//     names the next topic at partition 0. A limit of 0 answers no topics
//     and a cursor at the first one; a negative limit answers nothing.
//   - Cursor: topics named before the cursor's topic are skipped; the
//     cursor's topic starts at its partition, every later topic at 0. A
//     cursor whose topic is not in a non-empty topic list is
//     INVALID_REQUEST on every topic listed (Kafka's error response for
//     the request), not a closed connection.
//   - __consumer_offsets is listed with IsInternal set.
//   - Every topic answered without TOPIC_AUTHORIZATION_FAILED carries its
//     KIP-430 authorized operations, as Kafka's handler (authz_ops.go).
//
// Deviations:
//   - Topics sort by Go string order (bytes), Kafka's by UTF-16 code
//     units; the two agree on every legal topic name.
//   - A negative cursor partition starts its topic at 0. Kafka counts the
//     partitions below 0 against the limit and may answer a negative next
//     cursor.

// maxDescribePartitions caps ResponsePartitionLimit (Kafka's
// max.request.partition.size.limit, default 2000).
const maxDescribePartitions = 2000

func (s *Server) handleDescribeTopicPartitions(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	all := len(req.Topics) == 0
	names, ok := s.describeTopicNames(req, all)
	if !ok {
		for _, rt := range req.Topics {
			resp.Topics = append(resp.Topics, describeTopicError(rt.Topic, kerr.InvalidRequest.Code))
		}
		return resp, nil
	}
	remaining := int64(min(req.ResponsePartitionLimit, maxDescribePartitions))
	for _, name := range names {
		if remaining <= 0 {
			if remaining == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			}
			break
		}
		t, err := s.b.Topic(name)
		if err != nil {
			if !all {
				code := kerr.UnknownTopicOrPartition.Code
				if broker.ValidateTopicName(name) != nil {
					code = kerr.InvalidTopicException.Code
				}
				rt := describeTopicError(name, code)
				rt.IsInternal = broker.IsInternalTopic(name)
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		var first int64
		if req.Cursor != nil && req.Cursor.Topic == name {
			first = max(int64(req.Cursor.Partition), 0)
		}
		rt, next := s.describeTopic(t, first, remaining)
		resp.Topics = append(resp.Topics, rt)
		if next >= 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: next}
			break
		}
		remaining -= int64(len(rt.Partitions))
	}
	return resp, nil
}

// describeTopicNames returns the topics a request asks for, sorted and
// without those before the cursor's topic; ok is false when a cursor
// names a topic the request's list lacks.
func (s *Server) describeTopicNames(req *kmsg.DescribeTopicPartitionsRequest, all bool) (names []string, ok bool) {
	if all {
		if req.Cursor != nil {
			// Kafka keeps the cursor's topic in the list even if it has
			// gone since, so the page starts where the last one ended.
			names = append(names, req.Cursor.Topic)
		}
		for _, t := range s.b.Topics() {
			names = append(names, t.Name)
		}
	} else {
		for _, rt := range req.Topics {
			names = append(names, rt.Topic)
		}
	}
	if req.Cursor != nil {
		names = slices.DeleteFunc(names, func(n string) bool { return n < req.Cursor.Topic })
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if req.Cursor != nil && !all && !slices.Contains(names, req.Cursor.Topic) {
		return nil, false
	}
	return names, true
}

// describeTopic describes partitions [first, first+limit) of t that
// exist, and returns the first one left out, or -1 when none is.
func (s *Server) describeTopic(t *broker.Topic, first, limit int64) (kmsg.DescribeTopicPartitionsResponseTopic, int32) {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	name := t.Name
	rt.Topic, rt.TopicID = &name, t.ID
	rt.IsInternal = broker.IsInternalTopic(name)
	n := int64(t.Partitions())
	end := min(n, first+limit) // int64: a cursor near MaxInt32 does not wrap
	for i := first; i < end; i++ {
		info := s.b.PartitionInfo(t, broker.PartitionID(i))
		p := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		p.Partition = int32(i)
		p.LeaderID, p.LeaderEpoch = int32(info.Leader), info.LeaderEpoch
		p.Replicas, p.ISR, p.OfflineReplicas = int32s(info.Replicas), int32s(info.ISR), int32s(info.Offline)
		p.EligibleLeaderReplicas, p.LastKnownELR = int32s(info.ELR), int32s(info.LastKnownELR)
		rt.Partitions = append(rt.Partitions, p)
	}
	if end < n {
		return rt, int32(end)
	}
	return rt, -1
}

// describeTopicError is a topic answered with only an error code.
func describeTopicError(name string, code int16) kmsg.DescribeTopicPartitionsResponseTopic {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic, rt.ErrorCode = &name, code
	return rt
}
