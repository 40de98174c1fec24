package strand

import "github.com/strandmq/strand/internal/broker"

// Hooks into the broker for tests that must not wait on its timers.

// CleanLogs runs the compaction cleaner once on every compacted partition.
func (b *Broker) CleanLogs() { b.b.CleanLogs() }

// ApplyRetention runs time and size retention once on every partition.
func (b *Broker) ApplyRetention() { b.b.ApplyRetention() }

// Roll seals a partition's active segment.
func (b *Broker) Roll(topic string, partition int32) error {
	p, err := b.b.Partition(topic, broker.PartitionID(partition))
	if err != nil {
		return err
	}
	return p.Roll()
}
