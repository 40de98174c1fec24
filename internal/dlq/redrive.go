package dlq

import (
	"context"
	"fmt"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partitioner"
	"github.com/strandmq/strand/internal/record"
)

// Redrive moves quarantined records that the topic's current validator now
// accepts from its DLQ back into the topic (the seed's DLQ extension; `strand
// dlq redrive` does the same over the wire).
//
// Progress is the committed offset of the consumer group
// ingest.RedriveGroup(topic) on each DLQ partition: records below it were
// handled by an earlier run (AlreadyDone) and are not looked at again. Each
// chunk of DLQ records is handled as one step: the now-valid ones are
// produced (acks=all) to the partition they were quarantined from, with
// their original key, headers and timestamp (the strand.dlq.* headers
// removed, ingest.HeaderRedriveSource added), then the group commits past
// the chunk. Cancelling ctx stops between steps, never inside one, so an
// interrupted redrive resumes where it stopped and a rerun writes nothing
// twice. Only a crash between a step's produce and its commit can redrive a
// chunk twice (at-least-once); the copies carry the same
// HeaderRedriveSource, so they are recognisable.
//
// Records still invalid stay in the DLQ (StillInvalid) and are skipped by
// later runs; records quarantined while the redrive runs are left for the
// next one (each partition is read up to its high watermark at the start).
type RedriveOptions struct {
	// ChunkBytes bounds one step's read of a DLQ partition; default 1 MiB.
	ChunkBytes int
	// Progress, if set, is called after each step with the totals so far
	// and the number of DLQ records the run has to look at.
	Progress func(done RedriveResult, total int64)
}

// RedriveResult counts what a redrive did.
type RedriveResult struct {
	Redriven     int64 // produced back into the topic
	StillInvalid int64 // left in the DLQ: the validator still rejects them
	AlreadyDone  int64 // below the group's committed offsets: an earlier run handled them
}

// Redrive redrives topic's DLQ through the node's in-process API; see
// RedriveOptions.
func Redrive(ctx context.Context, b Redriver, topic string, opts RedriveOptions) (RedriveResult, error) {
	var res RedriveResult
	dlqName, err := b.DLQTopic(topic)
	if err != nil {
		return res, err
	}
	dlq, err := b.Partitions(dlqName)
	if err != nil {
		return res, fmt.Errorf("broker: redrive %q: DLQ: %w", topic, err)
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = 1 << 20
	}
	group := ingest.RedriveGroup(topic)
	type span struct{ from, to record.Offset }
	spans := make([]span, len(dlq))
	var total int64
	for i := range spans {
		p := dlq[i]
		if p == nil {
			return res, fmt.Errorf("broker: redrive %q: %w: %s-%d is not on this node", topic, partition.ErrNotLeader, dlqName, i)
		}
		from, err := b.Committed(ctx, group, dlqName, PartitionID(i))
		if err != nil {
			return res, fmt.Errorf("broker: redrive %q: %w", topic, err)
		}
		start := p.LogStartOffset()
		if from < start {
			from = start
		}
		spans[i] = span{from, p.LastStableOffset()}
		res.AlreadyDone += int64(from - start)
		total += int64(max(spans[i].to-from, 0))
	}
	for i, s := range spans {
		for pos := s.from; pos < s.to; {
			if err := ctx.Err(); err != nil {
				return res, fmt.Errorf("broker: redrive %q interrupted: %w", topic, err)
			}
			next, err := redriveStep(context.WithoutCancel(ctx), b, topic, dlqName, PartitionID(i), pos, s.to, opts.ChunkBytes, &res)
			if err != nil {
				return res, err
			}
			pos = next
			if opts.Progress != nil {
				opts.Progress(res, total)
			}
		}
	}
	return res, nil
}

// redriveStep handles the DLQ records of one read from pos (below end) and
// commits past them; it returns the next position.
func redriveStep(ctx context.Context, b Redriver, topic, dlqName string, dp PartitionID, pos, end record.Offset, chunk int, res *RedriveResult) (record.Offset, error) {
	// read_committed: records a transaction quarantined and then aborted
	// are not the DLQ's.
	recs, read, err := b.FetchCommitted(dlqName, dp, pos, chunk)
	if err != nil {
		return pos, fmt.Errorf("broker: redrive %q: read %s-%d: %w", topic, dlqName, dp, err)
	}
	// The topic's current validator (AlterConfigs may have changed it).
	v, partitions, err := b.Validator(topic)
	if err != nil {
		return pos, err
	}
	out := map[PartitionID][]record.Record{}
	next := pos
	var redriven int64
	for _, r := range recs {
		if r.Offset >= end {
			break
		}
		next = r.Offset + 1
		q := ingest.Inspect(r.Headers)
		if v.Validate(r.Key, r.Value) != "" {
			res.StillInvalid++
			continue
		}
		target := PartitionID(q.Source.Partition)
		if !q.OK || target < 0 || int32(target) >= partitions {
			target = PartitionID(partitioner.ForKey(r.Key, int(partitions)))
		}
		hs := append(q.Headers, record.RecordHeader{Key: ingest.HeaderRedriveSource,
			Value: []byte(ingest.RedriveSource(dlqName, int32(dp), r.Offset))})
		out[target] = append(out[target], record.Record{Timestamp: r.Timestamp, Key: r.Key, Value: r.Value, Headers: hs})
		redriven++
	}
	switch {
	case len(recs) == 0 && read > pos && read < end:
		next = read // only aborted records or markers: read on
	case len(recs) == 0 || next == pos:
		// Nothing readable below end (e.g. a gap up to it): done.
		next = end
	}
	for p, rs := range out {
		if _, err := b.ProduceRecords(ctx, topic, p, rs); err != nil {
			return pos, fmt.Errorf("broker: redrive %q: produce: %w", topic, err)
		}
	}
	if err := b.CommitThrough(ctx, ingest.RedriveGroup(topic), dlqName, dp, next-1); err != nil {
		return pos, fmt.Errorf("broker: redrive %q: commit progress: %w", topic, err)
	}
	res.Redriven += redriven // the append counted them in the topic's redriven metric
	return next, nil
}

// PartitionID is package partition's.
type PartitionID = partition.PartitionID

// Redriver is the node's in-process API, as a redrive uses it.
type Redriver interface {
	// DLQTopic returns the name of topic's DLQ topic.
	DLQTopic(topic string) (string, error)
	// Partitions returns a topic's partitions (nil: not on this node).
	Partitions(topic string) ([]*Partition, error)
	// Validator returns topic's current validator, bound to the schema
	// registry, and its partition count.
	Validator(topic string) (*ingest.Validator, int32, error)
	FetchCommitted(topic string, p PartitionID, from record.Offset, maxBytes int) ([]record.Record, record.Offset, error)
	ProduceRecords(ctx context.Context, topic string, p PartitionID, recs []record.Record) (record.Offset, error)
	Committed(ctx context.Context, group, topic string, p PartitionID) (record.Offset, error)
	CommitThrough(ctx context.Context, group, topic string, p PartitionID, last record.Offset) error
}
