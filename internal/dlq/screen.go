package dlq

import (
	"fmt"
	"time"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
)

// quarantine is what screen found in one batch: the records to send to the
// DLQ, with their reasons, and where they go.
type quarantine struct {
	validated int32
	redriven  int32           // accepted records that carry a redrive's source header
	records   []record.Record // offsets relative to the batch (producer's base offset + delta)
	reasons   []string
	base      record.Offset // the producer's base offset, to make offsets relative
	codec     record.Codec
	s         *Screener
	dlq       *Partition // nil when nothing is invalid
	// inTxn: the DLQ partition was added to the source batch's
	// transaction, so the quarantined records are written inside it.
	inTxn bool
	pid   int64
	epoch int16
}

// joinTxn makes the quarantine part of transactional batch h's
// transaction when the records go to a DLQ partition this node leads (a
// DLQ led elsewhere, after a failover, is written outside it, as before).
// It runs before the partition lock: enlisting may ask another node.
func (q *quarantine) joinTxn(h record.Header, enlist partition.Enlister) error {
	if q == nil || q.dlq == nil || enlist == nil || !h.IsTransactional() || q.dlq.CheckLeader() != nil {
		return nil
	}
	if err := enlist(q.dlq.Topic(), int32(q.dlq.ID())); err != nil {
		return fmt.Errorf("broker: adding DLQ %s-%d to the transaction: %w", q.dlq.Topic(), q.dlq.ID(), err)
	}
	q.inTxn, q.pid, q.epoch = true, h.ProducerID, h.ProducerEpoch
	return nil
}

// Screener judges the batches of a topic that is not internal (its
// partitions' partition.Screener): a validated topic's records are
// screened, and redriven records are counted on any topic.
type Screener struct {
	node  Node
	stats *Stats
	// validator is the topic's (nil: not validated); dlqTopic the topic
	// its invalid records go to.
	validator *ingest.Validator
	dlqTopic  string
}

// NewScreener returns the screener of a topic whose validator is v (nil:
// the topic is not validated) and whose DLQ topic is dlqTopic.
func NewScreener(node Node, stats *Stats, v *ingest.Validator, dlqTopic string) *Screener {
	return &Screener{node: node, stats: stats, validator: v, dlqTopic: dlqTopic}
}

// Screen implements partition.Screener.
func (s *Screener) Screen(p *Partition, batch []byte, h record.Header, enlist partition.Enlister) ([]byte, record.Header, partition.Quarantine, error) {
	if v := s.validator; v != nil {
		nb, nh, q, err := s.screen(p, batch, h, v)
		if err != nil {
			return nil, h, nil, err
		}
		if err := q.joinTxn(nh, enlist); err != nil {
			return nil, h, nil, fmt.Errorf("%s-%d: %w", p.Topic(), p.ID(), err)
		}
		return nb, nh, q, nil
	}
	if n := s.redrivenUnvalidated(p, batch, h); n > 0 {
		return batch, h, &quarantine{s: s, redriven: n}, nil // counts them; nothing to quarantine
	}
	return batch, h, nil, nil
}

// screen decodes a batch of a validated topic and judges every record. When
// all are valid it returns the batch unchanged (the fast path: the
// producer's bytes are stored as sent). Otherwise it returns a new batch of
// the valid records with the producer's offset range, producer id, epoch,
// base sequence and codec (an empty batch, still spanning the range, when no
// record is valid), and the invalid records to quarantine.
func (s *Screener) screen(p *Partition, batch []byte, h record.Header, v *ingest.Validator) ([]byte, record.Header, *quarantine, error) {
	v = v.Bind(s.node.Schemas(), p.Topic())
	if ok, redriven := allValid(batch, h, v); ok {
		return batch, h, &quarantine{s: s, validated: h.NumRecords, redriven: redriven}, nil
	}
	decoded, err := record.Decode(batch)
	if err != nil {
		return nil, h, nil, fmt.Errorf("%w: %s-%d: %w", partition.ErrCorruptMessage, p.Topic(), p.ID(), err)
	}
	q := &quarantine{s: s, validated: h.NumRecords, base: h.BaseOffset, codec: h.Compression()}
	var kept []record.Record
	for i := range decoded.Records {
		r := &decoded.Records[i]
		reason := v.Validate(r.Key, r.Value)
		if reason == "" {
			if redrivenRecord(r.Headers) {
				q.redriven++
			}
			if q.records != nil {
				kept = append(kept, *r)
			}
			continue
		}
		if q.records == nil { // first invalid record: keep the valid ones before it
			kept = append(make([]record.Record, 0, len(decoded.Records)), decoded.Records[:i]...)
		}
		q.records = append(q.records, *r)
		q.reasons = append(q.reasons, reason)
	}
	if len(q.records) == 0 {
		return batch, h, q, nil
	}
	if v.Spec().Action == ingest.ActionReject {
		re := &RecordErrors{Topic: p.Topic(), Partition: p.ID()}
		for i, r := range q.records {
			re.Records = append(re.Records, RecordError{Index: int32(r.Offset - h.BaseOffset), Reason: q.reasons[i]})
		}
		s.stats.counters(p.Topic()).rejected.Add(int64(len(q.records)))
		return nil, h, nil, re
	}
	if q.dlq, err = s.node.DLQPartition(p, s.dlqTopic); err != nil {
		return nil, h, nil, err
	}
	opts := h.Options()
	if len(kept) == 0 {
		opts.Codec = record.CodecNone // nothing to compress
	}
	nb, err := record.Encode(h.BaseOffset, kept, opts)
	if err != nil {
		return nil, h, nil, fmt.Errorf("broker: %s-%d: re-encode the valid records: %w", p.Topic(), p.ID(), err)
	}
	nh, err := record.ParseHeader(nb)
	if err != nil {
		return nil, h, nil, fmt.Errorf("broker: %s-%d: re-encoded batch: %w", p.Topic(), p.ID(), err)
	}
	return nb, nh, q, nil
}

// WriteLocked appends the quarantined records to the DLQ partition, as if
// the source batch were appended at base. The source partition's lock is
// held (so base is the offset its append will assign).
func (q *quarantine) WriteLocked(src *Partition, base record.Offset) error {
	if q.dlq == nil {
		return nil
	}
	recs := make([]record.Record, len(q.records))
	for i, r := range q.records {
		at := base + (r.Offset - q.base)
		recs[i] = ingest.Quarantine(r, q.reasons[i], ingest.Source{Topic: src.Topic(), Partition: int32(src.ID()), Offset: at})
		recs[i].Offset = record.Offset(i)
	}
	opts := record.DefaultBatchOptions()
	opts.Codec = q.codec
	if q.inTxn {
		// The producer's transactional batch, without a sequence: the
		// broker writes it, the producer never numbers the DLQ partition
		// (as Kafka's coordinator-written batches skip sequence checks).
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = q.pid, q.epoch, -1, true
	}
	batch, err := record.Encode(0, recs, opts)
	if err != nil {
		return fmt.Errorf("broker: quarantine from %s-%d: %w", src.Topic(), src.ID(), err)
	}
	// In a cluster the DLQ partition has the source's replicas and, but
	// for failovers and reassignments, the same leader. A follower's copy
	// never takes an append of its own (it would diverge from its
	// leader's): the records go to the DLQ's leader instead.
	if err := q.dlq.CheckLeader(); err != nil {
		if role, leader := q.dlq.RoleAndLeader(); q.s.node.Clustered() && !q.s.node.Fenced() && role != partition.RoleLeader && leader >= 0 {
			return q.s.node.ProduceRemote(leader, q.dlq, batch)
		}
		return fmt.Errorf("broker: quarantine from %s-%d: %w", src.Topic(), src.ID(), err)
	}
	if err := q.dlq.AppendQuarantined(batch, q.inTxn); err != nil {
		return fmt.Errorf("broker: quarantine from %s-%d to %s-%d: %w", src.Topic(), src.ID(), q.dlq.Topic(), q.dlq.ID(), err)
	}
	return nil
}

// Count adds a written batch's outcome to the topic's counters.
func (q *quarantine) Count(topic string) {
	c := q.s.stats.counters(topic)
	c.validated.Add(int64(q.validated))
	c.accepted.Add(int64(q.validated) - int64(len(q.records)))
	c.quarantined.Add(int64(len(q.records)))
	c.redriven.Add(int64(q.redriven))
	if len(q.records) == 0 {
		return
	}
	pending := c.sinceLog.Add(int64(len(q.records)))
	now, last := time.Now().UnixNano(), c.lastLog.Load()
	if now-last < int64(quarantineLogEvery) || !c.lastLog.CompareAndSwap(last, now) {
		return
	}
	c.sinceLog.Add(-pending)
	dlq := ""
	if q.dlq != nil {
		dlq = q.dlq.Topic()
	}
	q.s.node.Logger().Warn("broker: records quarantined", "topic", topic, "dlq", dlq, "records", pending,
		"reason", q.reasons[0], "log_every", quarantineLogEvery)
}

// redrivenUnvalidated counts the redriven records of a batch bound for a
// topic that is not validated (screen counts them on a validated one). A
// redrive is the usual way out of a DLQ once validation is relaxed, so
// its records must still count; but scanning every batch of every topic
// for the header would tax the produce path, so only batches that may be
// a redrive's are read: any batch of a topic this broker has validated
// records of, and a transactional batch (strand dlq redrive writes in
// transactions) of a topic whose DLQ topic exists.
func (s *Screener) redrivenUnvalidated(p *Partition, batch []byte, h record.Header) int32 {
	if _, seen := s.stats.topics.Load(p.Topic()); !seen {
		if !h.IsTransactional() || !s.node.TopicExists(s.dlqTopic) {
			return 0
		}
	}
	_, n := allValid(batch, h, nil) // a nil validator accepts every record
	return n
}
