package share

import (
	"strconv"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

// Dead-letter headers. A share group's dead letter carries Strand's DLQ
// headers (ingest.Quarantine: reason, source topic, partition, offset), so
// `strand dlq list` and `strand dlq redrive` treat it as any quarantined
// record, plus these. The strand.dlq.* ones are removed by redrive with
// the others; the KIP-1191 context headers (the __dlq.errors.* names of
// the KIP's draft, which no released Kafka writes yet) are kept by
// redrive only if a client copies them.
const (
	HeaderShareGroup    = "strand.dlq.share.group"
	HeaderDeliveryCount = "strand.dlq.delivery.count"
	HeaderMember        = "strand.dlq.share.member"

	HeaderKIPGroup         = "__dlq.errors.group.id"
	HeaderKIPTopic         = "__dlq.errors.topic"
	HeaderKIPPartition     = "__dlq.errors.partition"
	HeaderKIPOffset        = "__dlq.errors.offset"
	HeaderKIPDeliveryCount = "__dlq.errors.delivery.count"
)

// ReasonText is a dead letter's strand.dlq.reason: what happened, in words
// an operator reads in `strand dlq list`.
func ReasonText(d Dead, group string) string {
	switch {
	case d.Reason == ReasonRejected:
		return "share group " + group + ": rejected by member " + d.Member + " on delivery " + strconv.Itoa(int(d.Count))
	case d.Expired:
		return "share group " + group + ": delivery-count limit " + strconv.Itoa(int(d.Count)) + " reached (the last lock, member " + d.Member + "'s, expired)"
	default:
		return "share group " + group + ": delivery-count limit " + strconv.Itoa(int(d.Count)) + " reached (released by member " + d.Member + ")"
	}
}

// DeadLetter returns the dead-letter copy of r, which share group group
// gave up on as d.
func DeadLetter(r record.Record, d Dead, group string, tp TopicPartition) record.Record {
	out := ingest.Quarantine(r, ReasonText(d, group), ingest.Source{Topic: tp.Topic, Partition: tp.Partition, Offset: record.Offset(d.Offset)})
	count := strconv.AppendInt(nil, int64(d.Count), 10)
	out.Headers = append(out.Headers,
		record.RecordHeader{Key: HeaderShareGroup, Value: []byte(group)},
		record.RecordHeader{Key: HeaderDeliveryCount, Value: count},
		record.RecordHeader{Key: HeaderMember, Value: []byte(d.Member)},
		record.RecordHeader{Key: HeaderKIPGroup, Value: []byte(group)},
		record.RecordHeader{Key: HeaderKIPTopic, Value: []byte(tp.Topic)},
		record.RecordHeader{Key: HeaderKIPPartition, Value: strconv.AppendInt(nil, int64(tp.Partition), 10)},
		record.RecordHeader{Key: HeaderKIPOffset, Value: strconv.AppendInt(nil, int64(d.Offset), 10)},
		record.RecordHeader{Key: HeaderKIPDeliveryCount, Value: count},
	)
	return out
}
