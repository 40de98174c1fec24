package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// ListOffsets: v0-v11.
//
// Behavior:
//   - Timestamp -2 (earliest) is the log start offset, -1 (latest) the high
//     watermark, -3 (max timestamp, KIP-734) the record with the largest
//     timestamp and that timestamp, -4 (earliest local, KIP-405) the first
//     offset on this node's disk; -5 (latest tiered) the highest offset in
//     the object store and -6 (earliest pending upload, KIP-1023) the
//     first it does not hold yet; both -1 for a topic without tiered
//     storage (docs/TIERED.md).
//   - A timestamp ≥ 0 finds the first record whose timestamp is at least
//     it, and reports that record's timestamp; none: offset -1,
//     timestamp -1.
//   - v0 answers in OldStyleOffsets (one offset at most, whatever
//     MaxNumOffsets asks: Strand has no notion of segment boundaries to list).
//   - v4+: LeaderEpoch; CurrentLeaderEpoch is checked (KIP-320).
//   - READ_COMMITTED (v2+): "latest" is the last stable offset.
//   - Unknown topics are not auto-created: UNKNOWN_TOPIC_OR_PARTITION.

func (s *Server) handleListOffsets(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.b.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if terr != nil {
				sp.ErrorCode = errorCode(terr)
			} else {
				s.listOffset(req.Version, req.IsolationLevel == 1, t, rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) listOffset(version int16, committed bool, t *broker.Topic, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	p, err := t.Partition(broker.PartitionID(rp.Partition))
	if err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	if code := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); version >= 4 && code != 0 {
		sp.ErrorCode = code
		return
	}
	off, ts, err := p.ListOffset(rp.Timestamp)
	if err == nil && committed && rp.Timestamp == broker.TimestampLatest {
		off = min(off, p.LastStableOffset())
	}
	if err != nil {
		sp.ErrorCode = errorCode(err)
		s.logUnknown("list offsets", err)
		return
	}
	if version == 0 {
		if off >= 0 && rp.MaxNumOffsets > 0 {
			sp.OldStyleOffsets = []int64{int64(off)}
		}
		return
	}
	sp.Offset, sp.Timestamp = int64(off), ts
	sp.LeaderEpoch = int32(p.LeaderEpoch())
	if off < 0 {
		sp.LeaderEpoch = -1
	}
}
