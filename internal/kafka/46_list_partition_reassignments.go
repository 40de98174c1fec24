package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments: v0.
//
// Behavior:
//   - Lists the reassignments in progress, of the named partitions (null
//     Topics: of every partition), as this node's metadata has them:
//     replicas, adding and removing replicas. Named partitions that exist
//     but are not being reassigned, or do not exist, are left out (Kafka
//     answers the same way).
//   - A single node never reassigns: an empty list.

func (s *Server) handleListPartitionReassignments(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var parts map[string][]int32
	if req.Topics != nil {
		parts = make(map[string][]int32, len(req.Topics))
		for _, t := range req.Topics {
			parts[t.Topic] = append(parts[t.Topic], t.Partitions...)
		}
	}
	index := map[string]int{}
	for _, r := range s.b.Reassignments(parts) {
		i, ok := index[r.Topic]
		if !ok {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = r.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			index[r.Topic] = i
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = r.Partition, int32s(r.Replicas), int32s(r.Adding), int32s(r.Removing)
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}
