package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
)

// AlterPartitionReassignments: v0-v1.
//
// Behavior:
//   - Each partition's Replicas become its target: the new replicas join
//     as adding replicas and follow the leader; once all are in the ISR
//     the controller drops the replicas not in the target (moving
//     leadership off them first). Null Replicas cancels the reassignment in
//     progress (NO_REASSIGNMENT_IN_PROGRESS if there is none); a new target
//     replaces one in progress.
//   - An empty target, a broker named twice or one not registered:
//     INVALID_REPLICA_ASSIGNMENT; an unknown topic or partition:
//     UNKNOWN_TOPIC_OR_PARTITION. v1 AllowReplicationFactorChange false
//     refuses a target of another size with INVALID_REPLICATION_FACTOR
//     (KIP-860).
//   - The controller decides (a controller RPC from any node); the answer
//     comes once this node's metadata has the reassignment started. A
//     single node has nowhere to move a partition: INVALID_REPLICA_ASSIGNMENT.
//   - No authorization (Kafka requires ALTER on the cluster).

func (s *Server) handleAlterPartitionReassignments(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	parts := map[string]map[int32][]broker.NodeID{}
	var refused []broker.PartitionOutcome
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			if req.Version >= 1 && !req.AllowReplicationFactorChange && p.Replicas != nil {
				if n := s.replicaCount(t.Topic, p.Partition); n > 0 && n != len(p.Replicas) {
					refused = append(refused, broker.PartitionOutcome{Topic: t.Topic, Partition: p.Partition,
						Err: kerr.InvalidReplicationFactor})
					continue
				}
			}
			if parts[t.Topic] == nil {
				parts[t.Topic] = map[int32][]broker.NodeID{}
			}
			var target []broker.NodeID
			if p.Replicas != nil {
				target = make([]broker.NodeID, len(p.Replicas))
				for i, r := range p.Replicas {
					target[i] = broker.NodeID(r)
				}
			}
			parts[t.Topic][p.Partition] = target
		}
	}
	outcomes, err := s.b.Reassign(parts)
	if err != nil {
		s.logUnknown("alter partition reassignments", err)
		resp.ErrorCode = reassignCode(err)
		resp.ErrorMessage = errMessage(err)
		return resp, nil
	}
	index := map[string]int{}
	for _, o := range append(refused, outcomes...) {
		i, ok := index[o.Topic]
		if !ok {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = o.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			index[o.Topic] = i
		}
		rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = o.Partition, reassignCode(o.Err)
		if o.Err != nil {
			rp.ErrorMessage = errMessage(o.Err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp, nil
}

// replicaCount is a partition's replica count as the metadata has it (0:
// unknown).
func (s *Server) replicaCount(topic string, p int32) int {
	t, err := s.b.Topic(topic)
	if err != nil {
		return 0
	}
	info := s.b.PartitionInfo(t, broker.PartitionID(p))
	return len(info.Replicas)
}

// reassignCode maps a reassignment's error, the controller's own first.
func reassignCode(err error) int16 {
	switch {
	case errors.Is(err, cluster.ErrNoReassignmentInProgress):
		return kerr.NoReassignmentInProgress.Code
	case errors.Is(err, cluster.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	}
	return electionCode(err)
}
