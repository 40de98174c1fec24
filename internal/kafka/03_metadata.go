package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// Metadata: v0-v13.
//
// Behavior:
//   - A single node lists itself (at the advertised address) as the only
//     broker and the controller; every partition is led by it with
//     replicas = ISR = [it]. A cluster member lists every unfenced broker
//     of its metadata image, the raft leader as controller, and each
//     partition's registered leader, leader epoch, replicas, ISR and
//     offline replicas (those on fenced brokers); a partition without a
//     leader has LEADER_NOT_AVAILABLE.
//   - All topics for a null topic list (v1+) or an empty one (v0); none for
//     an empty list from v1.
//   - An unknown topic is created when auto.create.topics.enable is on and
//     the request allows it (always before v4; AllowAutoTopicCreation from
//     v4), never on an internal listener (its peers are not authorized).
//     Creation is synchronous, so the answer already has leaders, where
//     Kafka would first answer LEADER_NOT_AVAILABLE.
//   - v10+: topic ids; a topic requested by id only is looked up by id
//     (UNKNOWN_TOPIC_ID if none).
//   - __consumer_offsets is listed with IsInternal set.
//   - KIP-430 authorized operations (v8+ topics, v8–v10 the cluster) when
//     requested, else Kafka's omitted value; filled in after the handler
//     (authz_ops.go).
//
// Deviations:
//   - An invalid topic name gets INVALID_TOPIC_EXCEPTION, as Kafka.

func (s *Server) handleMetadata(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, bi := range s.brokers(false) {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = int32(bi.ID), bi.Host, bi.Port
		if bi.Rack != "" {
			b.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	clusterID := s.b.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = int32(s.b.ControllerID())

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.b.Topics() {
			resp.Topics = append(resp.Topics, s.metadataTopic(t))
		}
		return resp, nil
	}
	// Never from an internal listener: its peers are not authorized.
	autoCreate := (req.Version < 4 || req.AllowAutoTopicCreation) && !s.cfg.Internal
	for _, rt := range req.Topics {
		t, err := s.lookupMetadataTopic(rt, autoCreate)
		if err != nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			mt.ErrorCode = errorCode(err)
			s.logUnknown("metadata", err)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(t))
	}
	return resp, nil
}

func (s *Server) lookupMetadataTopic(rt kmsg.MetadataRequestTopic, autoCreate bool) (*broker.Topic, error) {
	if rt.Topic == nil {
		return s.b.TopicByID(broker.TopicID(rt.TopicID))
	}
	if autoCreate {
		t, err := s.b.TopicOrCreate(*rt.Topic)
		if err == nil || !errors.Is(err, broker.ErrUnknownTopicOrPartition) {
			return t, err
		}
	}
	return s.b.Topic(*rt.Topic)
}

func (s *Server) metadataTopic(t *broker.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID = &name, t.ID
	mt.IsInternal = broker.IsInternalTopic(name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, t.Partitions())
	for i := range t.Partitions() {
		info := s.b.PartitionInfo(t, broker.PartitionID(i))
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader, mp.LeaderEpoch = int32(info.Leader), info.LeaderEpoch
		if info.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mp.Replicas, mp.ISR, mp.OfflineReplicas = int32s(info.Replicas), int32s(info.ISR), int32s(info.Offline)
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func int32s(ids []broker.NodeID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// brokers lists the brokers clients may use: this node alone, at its
// advertised address, or a cluster's unfenced members (all of them, with
// fenced set, when withFenced).
func (s *Server) brokers(withFenced bool) []broker.BrokerInfo {
	all := s.b.Brokers()
	if all == nil {
		ep := s.advertisedEndpoint()
		return []broker.BrokerInfo{{ID: s.b.NodeID(), Host: ep.host, Port: ep.port}}
	}
	out := all[:0:0]
	for _, bi := range all {
		if withFenced || !bi.Fenced {
			out = append(out, bi)
		}
	}
	return out
}
