package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// OffsetForLeaderEpoch: v0-v4.
//
// Behavior (KIP-101, KIP-320):
//   - For each partition, the largest leader epoch ≤ LeaderEpoch that the
//     log knows, and the offset where the next epoch starts (the log end
//     offset for the current epoch). An epoch newer than the current one, or
//     older than any the log holds, answers epoch -1 and offset -1.
//   - v2+: CurrentLeaderEpoch is checked: FENCED_LEADER_EPOCH if stale,
//     UNKNOWN_LEADER_EPOCH if newer than this leader's.
//   - v0 has no epoch in the response.
//   - Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere): followers
//     ask it where their epochs end before they truncate (KIP-101/279).

func (s *Server) handleOffsetForLeaderEpoch(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.b.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			err := terr
			var p *broker.Partition
			if err == nil {
				p, err = t.Partition(broker.PartitionID(rp.Partition))
			}
			if err == nil {
				err = p.CheckLeader() // followers ask the leader; so do consumers (KIP-320)
			}
			switch {
			case err != nil:
				sp.ErrorCode = errorCode(err)
			case req.Version >= 2 && checkLeaderEpoch(p, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = checkLeaderEpoch(p, rp.CurrentLeaderEpoch)
			default:
				e, off := p.EndOffsetForEpoch(record.Epoch(rp.LeaderEpoch))
				sp.LeaderEpoch, sp.EndOffset = int32(e), int64(off)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
