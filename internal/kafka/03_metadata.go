package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// Metadata: v0-v13.
//
// Behavior:
//   - One broker (this node, at the advertised address), which is also the
//     controller; every partition is led by it with replicas = ISR = [it]
//     and leader epoch 0: a cluster of one.
//   - All topics for a null topic list (v1+) or an empty one (v0); none for
//     an empty list from v1.
//   - An unknown topic is created when auto.create.topics.enable is on and
//     the request allows it (always before v4; AllowAutoTopicCreation from
//     v4). Creation is synchronous, so the answer already has leaders, where
//     Kafka would first answer LEADER_NOT_AVAILABLE.
//   - v10+: topic ids; a topic requested by id only is looked up by id
//     (UNKNOWN_TOPIC_ID if none).
//   - __consumer_offsets is listed with IsInternal set.
//   - Authorized operations are not computed: reported as Kafka's "not
//     requested" sentinel (-2147483648) even when requested.
//
// Deviations:
//   - An invalid topic name gets INVALID_TOPIC_EXCEPTION, as Kafka.

func (s *Server) handleMetadata(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	ep := s.advertisedEndpoint()
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = int32(s.b.NodeID()), ep.host, ep.port
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	clusterID := s.b.ClusterID()
	resp.ClusterID = &clusterID
	resp.ControllerID = int32(s.b.NodeID())

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.b.Topics() {
			resp.Topics = append(resp.Topics, s.metadataTopic(t))
		}
		return resp, nil
	}
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
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
	for i := range t.Partitions() {
		p, _ := t.Partition(broker.PartitionID(i))
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.Leader = int32(p.Leader())
		mp.LeaderEpoch = int32(p.LeaderEpoch())
		for _, r := range p.Replicas() {
			mp.Replicas = append(mp.Replicas, int32(r))
			mp.ISR = append(mp.ISR, int32(r))
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
