package txn

import (
	"fmt"
)

// Record is one __transaction_state record: Value nil is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// Record returns t's log record.
func (t *Transit) Record() Record { return Record{Key: t.Key, Value: t.Value} }

// Replay rebuilds every id's state from a partition's records in log order,
// as a coordinator does when it becomes the partition's leader (Kafka's
// loadTransactionsForTxnTopicPartition): the last value per key wins and a
// tombstone removes the key. A Dead or PrepareEpochFence value, which no
// coordinator writes, is corruption.
func Replay(records []Record) (map[string]Metadata, error) {
	out := make(map[string]Metadata)
	for i, r := range records {
		id, err := DecodeKey(r.Key)
		if err != nil {
			return nil, fmt.Errorf("txn: replay record %d: %w", i, err)
		}
		if r.Value == nil {
			delete(out, id)
			continue
		}
		md, err := DecodeValue(id, r.Value)
		if err != nil {
			return nil, fmt.Errorf("txn: replay record %d: %w", i, err)
		}
		if md.State == Dead || md.State == PrepareEpochFence {
			return nil, fmt.Errorf("%w: replay record %d: %q in state %s", ErrCorrupt, i, id, md.State)
		}
		out[id] = md
	}
	return out, nil
}

// Load replaces the coordinator's state with the replay of records (a new
// coordinator epoch: any Transit still outstanding from before is answered
// NOT_COORDINATOR by Appended) and returns the markers to write for every id
// left in PrepareCommit or PrepareAbort, ordered by transactional id; their
// Complete transits are pending. An Ongoing id keeps its logged start time,
// so its timeout still counts from the first add.
func (c *Coordinator) Load(records []Record, coordinatorEpoch int32, nowMs int64) ([]*Markers, error) {
	states, err := Replay(records)
	if err != nil {
		return nil, err
	}
	c.cfg.CoordinatorEpoch = coordinatorEpoch
	c.txns = make(map[string]*entry, len(states))
	for id, md := range states {
		c.txns[id] = &entry{md: md}
	}
	var out []*Markers
	for _, id := range c.sortedIDs() {
		if m := c.Resume(id, nowMs); m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}
