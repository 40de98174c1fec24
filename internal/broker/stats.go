package broker

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strandmq/strand/internal/record"
)

// TopicStats are a topic's traffic counters since the broker opened:
// what producers appended and what consumers were sent. They only grow (a
// topic deleted and created again keeps counting), as Prometheus counters
// must.
type TopicStats struct {
	Topic      string
	RecordsIn  int64
	BytesIn    int64
	RecordsOut int64
	BytesOut   int64
}

// topicCounters is one topic's live counters; atomics, so the produce and
// fetch paths never take a lock to count.
type topicCounters struct {
	recordsIn, bytesIn, recordsOut, bytesOut atomic.Int64
}

// stats maps topic names to their counters. The alternative, counters on
// Partition, would be lost when a topic is deleted, and a scrape would then
// see a counter go backwards.
type stats struct {
	topics sync.Map // string → *topicCounters
}

func (s *stats) counters(topic string) *topicCounters {
	if c, ok := s.topics.Load(topic); ok {
		return c.(*topicCounters)
	}
	c, _ := s.topics.LoadOrStore(topic, &topicCounters{})
	return c.(*topicCounters)
}

// countIn counts one appended batch.
func (c *topicCounters) countIn(bytes int, records int32) {
	c.bytesIn.Add(int64(bytes))
	c.recordsIn.Add(int64(records))
}

// CountOut counts record batches sent to a consumer (the wire layer calls it
// with what a fetch response carries). It walks the batch headers only.
func (p *Partition) CountOut(batches []byte) {
	var n int64
	for rest := batches; len(rest) > 0; {
		h, err := record.ParseHeader(rest)
		if err != nil || h.Size() > len(rest) {
			break // a partial batch at the end of a fetch: not a record sent
		}
		n += int64(h.NumRecords)
		rest = rest[h.Size():]
	}
	p.traffic.bytesOut.Add(int64(len(batches)))
	p.traffic.recordsOut.Add(n)
}

// CountOutSpan is CountOut for batches sent from a segment file unread
// (ReadSpan): records are counted as the offsets the batches cover, which
// is exact but for offsets compaction removed and transaction markers.
func (p *Partition) CountOutSpan(sp SpanResult) {
	p.traffic.bytesOut.Add(int64(sp.Len))
	p.traffic.recordsOut.Add(int64(sp.Last - sp.First + 1))
}

// Stats returns every topic's traffic counters, sorted by topic.
func (b *Broker) Stats() []TopicStats {
	var out []TopicStats
	b.stats.topics.Range(func(k, v any) bool {
		c := v.(*topicCounters)
		out = append(out, TopicStats{
			Topic:     k.(string),
			RecordsIn: c.recordsIn.Load(), BytesIn: c.bytesIn.Load(),
			RecordsOut: c.recordsOut.Load(), BytesOut: c.bytesOut.Load(),
		})
		return true
	})
	slices.SortFunc(out, func(x, y TopicStats) int { return strings.Compare(x.Topic, y.Topic) })
	return out
}
