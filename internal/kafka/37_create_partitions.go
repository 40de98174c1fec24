package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// CreatePartitions: v0-v3.
//
// Behavior:
//   - Grows each topic to Count partitions; a count not above the current
//     one is INVALID_PARTITIONS (partitions are never removed: keys would
//     move). Existing keys may map to new partitions afterwards, as in
//     Kafka.
//   - A manual Assignment must have one entry per new partition, each on
//     this node alone (INVALID_REPLICA_ASSIGNMENT).
//   - ValidateOnly checks and creates nothing; a topic named twice is
//     INVALID_REQUEST; unknown topic: UNKNOWN_TOPIC_OR_PARTITION.

func (s *Server) handleCreatePartitions(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	if fwd, ok, err := s.forward(ctx, kreq, req.TimeoutMillis); ok { // a cluster member: the controller decides
		return fwd, err
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if seen[rt.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q named more than once", kerr.InvalidRequest, rt.Topic)
		} else {
			var a [][]broker.NodeID
			if rt.Assignment != nil {
				for _, r := range rt.Assignment {
					a = append(a, nodeIDs(r.Replicas))
				}
			}
			_, err = s.b.CreatePartitions(rt.Topic, rt.Count, a, req.ValidateOnly)
		}
		st.ErrorCode, st.ErrorMessage = errorCode(err), errMessage(err)
		s.logUnknown("create partitions", err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
