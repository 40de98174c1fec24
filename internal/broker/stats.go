package broker

import (
	"slices"
	"strings"
	"sync"

	"github.com/strandmq/strand/internal/partition"
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

// stats maps topic names to their counters. The alternative, counters on
// Partition, would be lost when a topic is deleted, and a scrape would then
// see a counter go backwards.
type stats struct {
	topics sync.Map // string → *partition.Counters
}

func (s *stats) counters(topic string) *partition.Counters {
	if c, ok := s.topics.Load(topic); ok {
		return c.(*partition.Counters)
	}
	c, _ := s.topics.LoadOrStore(topic, &partition.Counters{})
	return c.(*partition.Counters)
}

// Stats returns every topic's traffic counters, sorted by topic.
func (b *Broker) Stats() []TopicStats {
	var out []TopicStats
	b.stats.topics.Range(func(k, v any) bool {
		c := v.(*partition.Counters)
		out = append(out, TopicStats{
			Topic:     k.(string),
			RecordsIn: c.RecordsIn.Load(), BytesIn: c.BytesIn.Load(),
			RecordsOut: c.RecordsOut.Load(), BytesOut: c.BytesOut.Load(),
		})
		return true
	})
	slices.SortFunc(out, func(x, y TopicStats) int { return strings.Compare(x.Topic, y.Topic) })
	return out
}
