package txn

import (
	"slices"

	"github.com/strandmq/strand/internal/producer"
)

// StateByName returns the state Kafka names name ("Ongoing", …).
func StateByName(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// ListFilter is ListTransactions' filter; empty slices match everything and
// DurationMs < 0 disables the duration filter (v1+).
type ListFilter struct {
	ProducerIDs []producer.ID
	States      []string
	DurationMs  int64
}

// List is ListTransactions over this coordinator (Kafka's
// listTransactionStates): ids that are not Dead, whose producer id and state
// pass the filters and, with DurationMs ≥ 0, whose transaction started more
// than DurationMs before now. State names Kafka does not know come back in
// unknown (the response's UnknownStateFilters). Ordered by transactional id.
func (c *Coordinator) List(f ListFilter, nowMs int64) (matched []Metadata, unknown []string) {
	var states []State
	for _, name := range f.States {
		if s, ok := StateByName(name); ok {
			states = append(states, s)
		} else {
			unknown = append(unknown, name)
		}
	}
	for _, md := range c.All() {
		switch {
		case md.State == Dead:
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, md.ProducerID):
		case len(f.States) > 0 && !slices.Contains(states, md.State):
		case f.DurationMs >= 0 && nowMs-md.StartMs <= f.DurationMs:
		default:
			matched = append(matched, md)
		}
	}
	return matched, unknown
}
