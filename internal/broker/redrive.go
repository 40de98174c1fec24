package broker

import (
	"context"
	"fmt"

	"github.com/strandmq/strand/internal/ingest"
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

// Redrive redrives topic's DLQ; see RedriveOptions.
func (b *Broker) Redrive(ctx context.Context, topic string, opts RedriveOptions) (RedriveResult, error) {
	var res RedriveResult
	src, err := b.Topic(topic)
	if err != nil {
		return res, err
	}
	dlqName := src.Config.DLQTopic(topic)
	dlq, err := b.Topic(dlqName)
	if err != nil {
		return res, fmt.Errorf("broker: redrive %q: DLQ: %w", topic, err)
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = 1 << 20
	}
	g := b.Group(ingest.RedriveGroup(topic))
	type span struct{ from, to record.Offset }
	spans := make([]span, dlq.Partitions())
	var total int64
	for i := range spans {
		p, err := dlq.Partition(PartitionID(i))
		if err != nil {
			return res, fmt.Errorf("broker: redrive %q: %w", topic, err)
		}
		from, err := g.Committed(ctx, dlqName, PartitionID(i))
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
			next, err := b.redriveStep(context.WithoutCancel(ctx), src, dlqName, PartitionID(i), pos, s.to, opts.ChunkBytes, &res)
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
func (b *Broker) redriveStep(ctx context.Context, src *Topic, dlqName string, dp PartitionID, pos, end record.Offset, chunk int, res *RedriveResult) (record.Offset, error) {
	// read_committed: records a transaction quarantined and then aborted
	// are not the DLQ's.
	recs, read, err := b.FetchCommitted(dlqName, dp, pos, chunk)
	if err != nil {
		return pos, fmt.Errorf("broker: redrive %q: read %s-%d: %w", src.Name, dlqName, dp, err)
	}
	// The topic's current validator (AlterConfigs may have changed it).
	cur, err := b.Topic(src.Name)
	if err != nil {
		return pos, err
	}
	v := b.TopicValidator(cur)
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
		if !q.OK || target < 0 || int32(target) >= cur.Partitions() {
			target = PartitionID(partitioner.ForKey(r.Key, int(cur.Partitions())))
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
		if _, err := b.ProduceRecords(ctx, src.Name, p, rs); err != nil {
			return pos, fmt.Errorf("broker: redrive %q: produce: %w", src.Name, err)
		}
	}
	if err := b.Group(ingest.RedriveGroup(src.Name)).CommitThrough(ctx, dlqName, dp, next-1); err != nil {
		return pos, fmt.Errorf("broker: redrive %q: commit progress: %w", src.Name, err)
	}
	res.Redriven += redriven // the append counted them in the topic's redriven metric
	return next, nil
}
