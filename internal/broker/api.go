package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/producer"
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
	batch, err := encodeProduced(recs, b.cfg.Now().UnixMilli())
	if err != nil {
		return record.NoOffset, fmt.Errorf("broker: encode batch for %s-%d: %w", topic, partition, err)
	}
	res, err := p.Append(ctx, batch, AcksAll)
	if err != nil {
		return record.NoOffset, err
	}
	return res.BaseOffset, nil
}

// encodeProduced encodes recs as one non-idempotent v2 batch, numbering
// them from 0 and stamping those without a timestamp with now.
func encodeProduced(recs []record.Record, now int64) ([]byte, error) {
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		r.Offset = record.Offset(i)
		if r.Timestamp == 0 {
			r.Timestamp = now
		}
		rs[i] = r
	}
	return record.Encode(0, rs, record.DefaultBatchOptions())
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

// FetchCommitted is Fetch for a read_committed reader: records below the
// last stable offset, without control records and without the records of
// aborted transactions (dropped by the rule Kafka's clients apply to a
// fetch's aborted list). next is the offset after the batches read, which
// may hold no record for the caller (all aborted): read on from there.
func (b *Broker) FetchCommitted(topic string, partition PartitionID, from record.Offset, maxBytes int) (recs []record.Record, next record.Offset, err error) {
	p, err := b.Partition(topic, partition)
	if err != nil {
		return nil, from, err
	}
	res, aborted, err := p.ReadCommittedInto(nil, from, maxBytes)
	if err != nil {
		return nil, from, err
	}
	slices.SortFunc(aborted, func(a, b producer.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	dropping := map[int64]bool{}
	next = from
	s := record.Batches(res.Batches)
	for s.Next() {
		h := s.Header()
		next = max(next, h.LastOffset()+1)
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			dropping[int64(aborted[0].ProducerID)] = true
			aborted = aborted[1:]
		}
		if h.IsControl() {
			if m, err := record.DecodeMarker(s.Batch()); err == nil && !m.Commit {
				delete(dropping, h.ProducerID)
			}
			continue
		}
		if h.IsTransactional() && dropping[h.ProducerID] {
			continue
		}
		batch, err := record.Decode(s.Batch())
		if err != nil {
			return recs, next, fmt.Errorf("broker: decode %s-%d at %d: %w", topic, partition, h.BaseOffset, err)
		}
		for _, r := range batch.Records {
			if r.Offset >= from {
				recs = append(recs, r)
			}
		}
	}
	if err := s.Err(); err != nil {
		return recs, next, fmt.Errorf("broker: %s-%d: %w", topic, partition, err)
	}
	return recs, next, nil
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
