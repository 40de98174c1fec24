package broker

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/record"
)

// This file is the in-process API that mirrors the seed's mini broker
// (produce, fetch, list offsets), for the embed API and tests: Go values in,
// Go values out, no wire protocol.

// nullKeyCounter spreads records without a key over partitions round-robin
// (Kafka's clients use a sticky partition per batch instead; for one record
// at a time round-robin is the same idea).
var nullKeyCounter atomic.Uint64

// Partition returns one partition of a topic.
func (b *Broker) Partition(topic string, p PartitionID) (*Partition, error) {
	t, err := b.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.Partition(p)
}

// Produce appends one record to the partition its key maps to
// (partitioner.ForKey, as Kafka's Java client) and returns that partition and
// the record's offset. An unknown topic is auto-created when enabled.
func (b *Broker) Produce(topic string, key, value []byte) (PartitionID, record.Offset, error) {
	t, err := b.TopicOrCreate(topic)
	if err != nil {
		return 0, record.NoOffset, err
	}
	var p PartitionID
	if key != nil {
		p = PartitionID(partitioner.ForKey(key, int(t.Partitions())))
	} else {
		p = PartitionID(nullKeyCounter.Add(1) % uint64(t.Partitions()))
	}
	off, err := b.ProduceRecords(context.Background(), topic, p, []record.Record{{Key: key, Value: value}})
	return p, off, err
}

// ProduceRecords appends records to one partition as one uncompressed batch
// with acks=all and returns the first record's offset. Records' offsets are
// ignored; a zero Timestamp means now.
func (b *Broker) ProduceRecords(ctx context.Context, topic string, partition PartitionID, recs []record.Record) (record.Offset, error) {
	if IsInternalTopic(topic) {
		return record.NoOffset, fmt.Errorf("%w: cannot append to internal topic %s", ErrInvalidTopic, topic)
	}
	p, err := b.Partition(topic, partition)
	if err != nil {
		return record.NoOffset, err
	}
	now := b.cfg.Now().UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		r.Offset = record.Offset(i)
		if r.Timestamp == 0 {
			r.Timestamp = now
		}
		rs[i] = r
	}
	batch, err := record.Encode(0, rs, record.DefaultBatchOptions())
	if err != nil {
		return record.NoOffset, fmt.Errorf("broker: encode batch for %s-%d: %w", topic, partition, err)
	}
	res, err := p.Append(ctx, batch, AcksAll)
	if err != nil {
		return record.NoOffset, err
	}
	return res.BaseOffset, nil
}

// Fetch returns the records of one partition from offset from on, decoding
// whole batches of at most about maxBytes (at least one batch). Records
// before from that share its first batch are dropped.
func (b *Broker) Fetch(topic string, partition PartitionID, from record.Offset, maxBytes int) ([]record.Record, error) {
	p, err := b.Partition(topic, partition)
	if err != nil {
		return nil, err
	}
	res, err := p.Read(from, maxBytes)
	if err != nil {
		return nil, err
	}
	var out []record.Record
	s := record.Batches(res.Batches)
	for s.Next() {
		batch, err := record.Decode(s.Batch())
		if err != nil {
			return out, fmt.Errorf("broker: decode %s-%d at %d: %w", topic, partition, s.Header().BaseOffset, err)
		}
		if batch.IsControl() {
			continue
		}
		for _, r := range batch.Records {
			if r.Offset >= from {
				out = append(out, r)
			}
		}
	}
	if err := s.Err(); err != nil {
		return out, fmt.Errorf("broker: read %s-%d: %w", topic, partition, err)
	}
	return out, nil
}

// ListOffsets returns the offset for a timestamp or a sentinel
// (TimestampEarliest, TimestampLatest, TimestampMax) in one partition.
func (b *Broker) ListOffsets(topic string, partition PartitionID, ts int64) (record.Offset, error) {
	p, err := b.Partition(topic, partition)
	if err != nil {
		return record.NoOffset, err
	}
	off, _, err := p.ListOffset(ts)
	return off, err
}
