package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// DescribeProducers: v0.
//
// Behavior:
//   - Per requested partition, the idempotent producers it still tracks
//     (those with a cached batch: producer ids expire with
//     producer.id.expiration): id, epoch, last sequence and the newest
//     batch's max timestamp; CurrentTxnStartOffset is the first offset of
//     its open transaction here, or -1. CoordinatorEpoch is -1.
//   - Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION for it.

func (s *Server) handleDescribeProducers(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.b.Topic(rt.Topic)
		for _, id := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = id
			var p *broker.Partition
			err := terr
			if err == nil {
				p, err = t.Partition(broker.PartitionID(id))
			}
			if err != nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, a := range p.Producers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = int64(a.ID), int32(a.Epoch)
				ap.LastSequence, ap.LastTimestamp = a.Last.LastSeq, a.Last.Timestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, int64(a.TxnFirst)
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
