package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// CreateTopics: v0-v7.
//
// Behavior:
//   - NumPartitions -1 (v4+) means num.partitions; 0 or below -1 is
//     INVALID_PARTITIONS. ReplicationFactor -1 means
//     default.replication.factor; more than the live brokers is
//     INVALID_REPLICATION_FACTOR (a single node has one).
//   - A manual ReplicaAssignment must cover partitions 0..n-1 once each,
//     on live brokers, each partition with the same replica count
//     (INVALID_REPLICA_ASSIGNMENT), and then NumPartitions and
//     ReplicationFactor must be -1 (INVALID_REQUEST).
//   - Configs are validated (INVALID_CONFIG for an unknown name, a null
//     value, or a bad value); v5+ returns the created topic's effective
//     configs, partition count and replication factor; v7+ its id.
//   - ValidateOnly (v1+) checks everything and creates nothing.
//   - A topic named twice in one request: INVALID_REQUEST for each.
//   - Creation is synchronous; TimeoutMillis is not needed.

func (s *Server) handleCreateTopics(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	if fwd, ok, err := s.forward(ctx, kreq, req.TimeoutMillis); ok { // a cluster member: the controller decides
		return fwd, err
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := make(map[string]int, len(req.Topics))
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var t *broker.Topic
		var err error
		if seen[rt.Topic] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			err = fmt.Errorf("topic %q named more than once", rt.Topic)
		} else if t, err = s.createTopic(rt, req.ValidateOnly); err != nil {
			st.ErrorCode = errorCode(err)
			s.logUnknown("create topic", err)
		}
		if err != nil {
			if req.Version >= 1 {
				st.ErrorMessage = errMessage(err)
			}
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !req.ValidateOnly {
			st.TopicID = t.ID
		}
		st.NumPartitions, st.ReplicationFactor = t.Partitions(), s.replicationFactor(t, rt)
		for _, e := range t.Config.Entries() {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.Source = e.Name, &e.Value, int8(e.Source)
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// replicationFactor is the created topic's replica count: as placed, or
// for ValidateOnly (nothing placed) as asked.
func (s *Server) replicationFactor(t *broker.Topic, rt kmsg.CreateTopicsRequestTopic) int16 {
	if n := len(s.b.PartitionInfo(t, 0).Replicas); n > 0 {
		return int16(n)
	}
	if len(rt.ReplicaAssignment) > 0 {
		return int16(len(rt.ReplicaAssignment[0].Replicas))
	}
	return int16(s.b.ReplicationFactor(rt.ReplicationFactor))
}

func (s *Server) createTopic(rt kmsg.CreateTopicsRequestTopic, validateOnly bool) (*broker.Topic, error) {
	spec := broker.TopicSpec{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, ValidateOnly: validateOnly}
	if rt.NumPartitions == 0 || rt.NumPartitions < -1 {
		return nil, fmt.Errorf("%w: %d", broker.ErrInvalidPartitions, rt.NumPartitions)
	}
	if rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1 {
		return nil, fmt.Errorf("%w: %d", broker.ErrInvalidReplicationFactor, rt.ReplicationFactor)
	}
	if len(rt.ReplicaAssignment) > 0 {
		if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: a replica assignment requires NumPartitions and ReplicationFactor -1", kerr.InvalidRequest)
		}
		a, err := assignment(rt.ReplicaAssignment)
		if err != nil {
			return nil, err
		}
		spec.Assignment, spec.Partitions, spec.ReplicationFactor = a, -1, -1
	}
	if len(rt.Configs) > 0 {
		spec.Configs = make(map[string]string, len(rt.Configs))
		for _, c := range rt.Configs {
			if c.Value == nil {
				return nil, &broker.ConfigError{Name: c.Name, Reason: "null value not supported for topic configs"}
			}
			spec.Configs[c.Name] = *c.Value
		}
	}
	return s.b.CreateTopic(spec)
}

// assignment orders a manual replica assignment by partition, checking that
// it covers 0..n-1 exactly once.
func assignment(in []kmsg.CreateTopicsRequestTopicReplicaAssignment) ([][]broker.NodeID, error) {
	if len(in) > broker.MaxPartitionsPerTopic {
		return nil, fmt.Errorf("%w: %d partitions, Strand's limit is %d", broker.ErrInvalidPartitions, len(in), broker.MaxPartitionsPerTopic)
	}
	out := make([][]broker.NodeID, len(in))
	for _, a := range in {
		if a.Partition < 0 || int(a.Partition) >= len(in) || out[a.Partition] != nil {
			return nil, fmt.Errorf("%w: partitions must be 0..%d, each once", broker.ErrInvalidReplicaAssignment, len(in)-1)
		}
		out[a.Partition] = nodeIDs(a.Replicas)
	}
	return out, nil
}

func nodeIDs(in []int32) []broker.NodeID {
	out := make([]broker.NodeID, 0, len(in))
	for _, r := range in {
		out = append(out, broker.NodeID(r))
	}
	return slices.Clip(out)
}
