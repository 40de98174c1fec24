package dlq

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TopicStats are a topic's validation counters since the broker opened.
// They only grow (a topic deleted and created again keeps counting), as
// Prometheus counters must.
type TopicStats struct {
	Topic string
	// Validated counts records judged on the produce path, Accepted those
	// appended to the topic, Quarantined those sent to its DLQ (Validated =
	// Accepted + Quarantined).
	Validated, Accepted, Quarantined int64
	// Rejected counts invalid records whose batches were refused
	// (strand.validation.action=reject); they are not in Validated.
	Rejected int64
	// Redriven counts DLQ records produced back into the topic, whoever
	// redrives them (Redrive in-process, strand dlq redrive or another
	// client through the wire): records carrying a redrive's source
	// header, also once the topic is no longer validated.
	Redriven int64
}

type counters struct {
	validated, accepted, quarantined, redriven atomic.Int64
	rejected                                   atomic.Int64 // records of batches refused (action=reject)

	// A quarantine burst is logged as one line: the first quarantine after a
	// quiet quarantineLogEvery, then the count since, at most that often.
	lastLog, sinceLog atomic.Int64
}

// quarantineLogEvery bounds quarantine log lines to one per topic per period.
const quarantineLogEvery = 10 * time.Second

// Stats are a node's validation counters, by topic (*counters). The
// zero value is ready to use.
type Stats struct{ topics sync.Map }

func (s *Stats) counters(topic string) *counters {
	if c, ok := s.topics.Load(topic); ok {
		return c.(*counters)
	}
	c, _ := s.topics.LoadOrStore(topic, &counters{})
	return c.(*counters)
}

// All returns the validation counters of every topic that has had a
// record validated or redriven, sorted by topic.
func (s *Stats) All() []TopicStats {
	var out []TopicStats
	s.topics.Range(func(k, v any) bool {
		c := v.(*counters)
		out = append(out, TopicStats{
			Topic:     k.(string),
			Validated: c.validated.Load(), Accepted: c.accepted.Load(),
			Quarantined: c.quarantined.Load(), Redriven: c.redriven.Load(), Rejected: c.rejected.Load(),
		})
		return true
	})
	slices.SortFunc(out, func(x, y TopicStats) int { return strings.Compare(x.Topic, y.Topic) })
	return out
}

// Topic returns one topic's validation counters (zero if none).
func (s *Stats) Topic(topic string) TopicStats {
	c := s.counters(topic)
	return TopicStats{Topic: topic, Validated: c.validated.Load(), Accepted: c.accepted.Load(),
		Quarantined: c.quarantined.Load(), Redriven: c.redriven.Load(), Rejected: c.rejected.Load()}
}
