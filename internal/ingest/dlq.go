package ingest

import (
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/record"
)

// Headers the broker adds to a quarantined record, and the one redrive adds
// to a redriven record.
const (
	HeaderReason          = "strand.dlq.reason"
	HeaderSourceTopic     = "strand.dlq.source.topic"
	HeaderSourcePartition = "strand.dlq.source.partition"
	HeaderSourceOffset    = "strand.dlq.source.offset"
	// HeaderRedriveSource is "<dlq topic>/<partition>/<offset>" of the DLQ
	// record a redriven record was produced from.
	HeaderRedriveSource = "strand.redrive.source"

	headerPrefix = "strand.dlq."
)

// DefaultDLQTopic is the DLQ topic of a topic without strand.dlq.topic.
func DefaultDLQTopic(topic string) string { return topic + ".dlq" }

// RedriveGroup is the consumer group whose committed offsets on the DLQ
// topic track a redrive's progress.
func RedriveGroup(topic string) string { return "strand-redrive-" + topic }

// Source is where a quarantined record was produced.
type Source struct {
	Topic     string
	Partition int32
	Offset    record.Offset
}

// Quarantine returns the DLQ copy of r: its key, value, timestamp and
// headers, followed by the reason and the source coordinates. The result
// shares r's key, value and header values.
func Quarantine(r record.Record, reason string, src Source) record.Record {
	hs := make([]record.RecordHeader, 0, len(r.Headers)+4)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		record.RecordHeader{Key: HeaderReason, Value: []byte(reason)},
		record.RecordHeader{Key: HeaderSourceTopic, Value: []byte(src.Topic)},
		record.RecordHeader{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(src.Partition), 10)},
		record.RecordHeader{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, int64(src.Offset), 10)},
	)
	return record.Record{Timestamp: r.Timestamp, Key: r.Key, Value: r.Value, Headers: hs}
}

// Quarantined is a DLQ record taken apart: the original headers, the reason
// and the source coordinates (zero when a header is missing or malformed,
// with OK false).
type Quarantined struct {
	Headers []record.RecordHeader
	Reason  string
	Source  Source
	OK      bool
}

// Inspect splits a DLQ record's headers into the original ones and the
// strand.dlq.* ones.
func Inspect(headers []record.RecordHeader) Quarantined {
	var q Quarantined
	var seen int
	for _, h := range headers {
		if !strings.HasPrefix(h.Key, headerPrefix) {
			q.Headers = append(q.Headers, h)
			continue
		}
		switch h.Key {
		case HeaderReason:
			q.Reason = string(h.Value)
			seen++
		case HeaderSourceTopic:
			q.Source.Topic = string(h.Value)
			seen++
		case HeaderSourcePartition:
			if n, err := strconv.ParseInt(string(h.Value), 10, 32); err == nil {
				q.Source.Partition = int32(n)
				seen++
			}
		case HeaderSourceOffset:
			if n, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
				q.Source.Offset = record.Offset(n)
				seen++
			}
		}
	}
	q.OK = seen == 4
	return q
}

// RedriveSource is the HeaderRedriveSource value for a DLQ record.
func RedriveSource(dlqTopic string, partition int32, offset record.Offset) string {
	return dlqTopic + "/" + strconv.Itoa(int(partition)) + "/" + strconv.FormatInt(int64(offset), 10)
}
