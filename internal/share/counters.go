package share

import (
	"maps"
	"slices"
	"sync"
)

// Counters are a share group's totals on this node since it started, for
// metrics.
type Counters struct {
	Group        string
	Acquired     int64             // records handed to members (deliveries)
	Redelivered  int64             // of those, deliveries after the first
	Acknowledged map[AckType]int64 // offsets acknowledged, by type
	LockExpired  int64             // acquisitions that ended with their lock expiring
	DeadLettered int64             // records given up on (rejected or past the limit), whether copied to a dead-letter topic or not
}

// counters accumulates Counters per group.
type counters struct {
	mu sync.Mutex
	m  map[string]*Counters
}

func (c *counters) add(group string, fn func(*Counters)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*Counters{}
	}
	g := c.m[group]
	if g == nil {
		g = &Counters{Group: group, Acknowledged: map[AckType]int64{}}
		c.m[group] = g
	}
	fn(g)
}

// Counters returns every group's totals, sorted by group.
func (m *Manager) Counters() []Counters {
	m.counts.mu.Lock()
	defer m.counts.mu.Unlock()
	out := make([]Counters, 0, len(m.counts.m))
	for _, g := range slices.Sorted(maps.Keys(m.counts.m)) {
		c := *m.counts.m[g]
		c.Acknowledged = maps.Clone(c.Acknowledged)
		out = append(out, c)
	}
	return out
}
