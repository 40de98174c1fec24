package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// DeleteRecords: v0-v2.
//
// Behavior:
//   - Advances each partition's log start offset to Offset (-1: the high
//     watermark) and returns it as LowWatermark. Offsets are never
//     renumbered: the records before it simply become out of range.
//   - An offset above the high watermark (or below -1) is
//     OFFSET_OUT_OF_RANGE; an offset at or below the current start is a
//     no-op reporting the current start.
//   - An internal topic (__consumer_offsets): INVALID_TOPIC_EXCEPTION, as
//     Kafka; committed offsets are never deleted from under a group.
//   - Synchronous; TimeoutMillis is not needed.

func (s *Server) handleDeleteRecords(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t, terr := s.b.Topic(rt.Topic)
		if terr == nil && broker.IsInternalTopic(t.Name) {
			terr = fmt.Errorf("%w: cannot delete records of internal topic %s", broker.ErrInvalidTopic, t.Name)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			err := terr
			if err == nil {
				var p *broker.Partition
				if p, err = t.Partition(broker.PartitionID(rp.Partition)); err == nil {
					var low record.Offset
					if low, err = p.DeleteRecordsBefore(record.Offset(rp.Offset)); err == nil {
						sp.LowWatermark = int64(low)
					}
				}
			}
			sp.ErrorCode = errorCode(err)
			s.logUnknown("delete records", err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
