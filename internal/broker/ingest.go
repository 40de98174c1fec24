package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
)

// This file is validation at ingress (DESIGN.md invariant 7) on the produce
// path: for a topic with strand.validation or
// strand.validation.key.required, Partition.Append decodes the batch and
// judges every record (screen); invalid records go to the topic's DLQ with
// the reason attached, and the valid ones are appended in a batch that keeps
// the producer's offset range, so each quarantined offset is a gap, exactly
// like a compacted-away record, and every valid record has the offset its
// producer was told.
//
// Order under the source partition's lock (appendLocked): the idempotence
// check first (a retried batch is answered from producer state and
// quarantines nothing), then the DLQ append, then the source append. The DLQ
// goes first so that a failure leaves nothing acknowledged without its
// quarantined records: if the DLQ append fails, the produce fails and nothing
// was written; if the source append fails after it, the retry quarantines
// those records a second time (duplicates in the DLQ, never losses). The
// alternative order would lose poison records silently when the DLQ append
// failed after the producer's batch was already in the log.
//
// Lock order: source Partition.mu → DLQ Partition.mu. A DLQ topic must not
// itself be validated (resolveDLQ refuses it), so the DLQ append never nests
// further and two topics cannot be each other's DLQ.

// IngestStats are a topic's validation counters since the broker opened.
// They only grow (a topic deleted and created again keeps counting), as
// Prometheus counters must.
type IngestStats struct {
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

type ingestCounters struct {
	validated, accepted, quarantined, redriven atomic.Int64
	rejected                                   atomic.Int64 // records of batches refused (action=reject)

	// A quarantine burst is logged as one line: the first quarantine after a
	// quiet quarantineLogEvery, then the count since, at most that often.
	lastLog, sinceLog atomic.Int64
}

// quarantineLogEvery bounds quarantine log lines to one per topic per period.
const quarantineLogEvery = 10 * time.Second

// ingestStats maps topic names to their counters (*ingestCounters).
type ingestStats struct{ topics sync.Map }

func (s *ingestStats) counters(topic string) *ingestCounters {
	if c, ok := s.topics.Load(topic); ok {
		return c.(*ingestCounters)
	}
	c, _ := s.topics.LoadOrStore(topic, &ingestCounters{})
	return c.(*ingestCounters)
}

// IngestStats returns the validation counters of every topic that has had a
// record validated or redriven, sorted by topic.
func (b *Broker) IngestStats() []IngestStats {
	var out []IngestStats
	b.ingest.topics.Range(func(k, v any) bool {
		c := v.(*ingestCounters)
		out = append(out, IngestStats{
			Topic:     k.(string),
			Validated: c.validated.Load(), Accepted: c.accepted.Load(),
			Quarantined: c.quarantined.Load(), Redriven: c.redriven.Load(), Rejected: c.rejected.Load(),
		})
		return true
	})
	slices.SortFunc(out, func(x, y IngestStats) int { return strings.Compare(x.Topic, y.Topic) })
	return out
}

// TopicIngestStats returns one topic's validation counters (zero if none).
func (b *Broker) TopicIngestStats(topic string) IngestStats {
	c := b.ingest.counters(topic)
	return IngestStats{Topic: topic, Validated: c.validated.Load(), Accepted: c.accepted.Load(),
		Quarantined: c.quarantined.Load(), Redriven: c.redriven.Load(), Rejected: c.rejected.Load()}
}

// Validation topic config names.
const (
	ConfigValidation            = "strand.validation"
	ConfigValidationSchema      = "strand.validation.schema"
	ConfigValidationKeyRequired = "strand.validation.key.required"
	ConfigDLQTopic              = "strand.dlq.topic"
	ConfigValidationKey         = "strand.validation.key"
	ConfigValidationStrategy    = "strand.validation.subject.strategy"
	ConfigValidationAction      = "strand.validation.action"
)

// ingestConfigDefs are appended to configDefs.
var ingestConfigDefs = []*ConfigDef{
	{Name: ConfigValidation, Default: string(ingest.ModeNone), Type: TypeString,
		check: checkEnum(string(ingest.ModeNone), string(ingest.ModeJSON), string(ingest.ModeJSONSchema), string(ingest.ModeSchema)),
		Doc:   "Strand: validate records at ingress: none, json (the value must be a JSON document), jsonschema (it must satisfy strand.validation.schema) or schema (Confluent wire format: a schema id of the built-in registry, of the topic's subject, and a payload that decodes against it). Invalid records go to strand.dlq.topic (or, with strand.validation.action=reject, fail the batch)."},
	{Name: ConfigValidationKey, Default: "none", Type: TypeString, check: checkEnum("none", "schema"),
		Doc: "Strand: with strand.validation=schema, schema also checks each non-null key against the registry (subject <topic>-key under TopicNameStrategy)."},
	{Name: ConfigValidationStrategy, Default: string(ingest.TopicName), Type: TypeString, check: checkStrategy,
		Doc: "Strand: the subject a schema id must belong to with strand.validation=schema: TopicNameStrategy (<topic>-value), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy (<topic>-<record name>)."},
	{Name: ConfigValidationAction, Default: string(ingest.ActionDLQ), Type: TypeString, check: checkEnum(string(ingest.ActionDLQ), string(ingest.ActionReject)),
		Doc: "Strand: what happens to an invalid record: dlq (to strand.dlq.topic with its reason; the producer is not failed, its offset is a gap) or reject (the whole batch fails with INVALID_RECORD and one error per invalid record)."},
	{Name: ConfigValidationSchema, Default: "", Type: TypeString, check: checkSchema,
		Doc: "Strand: the JSON Schema (text) of strand.validation=jsonschema; references must stay inside it."},
	{Name: ConfigValidationKeyRequired, Default: "false", Type: TypeBoolean, check: checkEnum("true", "false"),
		Doc: "Strand: quarantine records with a null or empty key."},
	{Name: ConfigDLQTopic, Default: "", Type: TypeString, check: checkDLQTopic,
		Doc: "Strand: the topic invalid records go to; empty: <topic>.dlq, created on first use with the topic's partition count."},
}

func checkSchema(v string) (string, error) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	if _, err := ingest.Compile(ingest.Spec{Mode: ingest.ModeJSONSchema, Schema: v}); err != nil {
		return "", errInvalidValue(err.Error())
	}
	return v, nil
}

func checkStrategy(v string) (string, error) {
	s, err := ingest.ParseStrategy(v)
	if err != nil {
		return "", errInvalidValue(err.Error())
	}
	return string(s), nil
}

func checkDLQTopic(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if err := validateTopicName(v); err != nil {
		return "", errInvalidValue(err.Error())
	}
	if IsInternalTopic(v) {
		return "", errInvalidValue("an internal topic cannot be a DLQ")
	}
	return v, nil
}

// ValidationSpec returns the topic's validation settings.
func (c TopicConfig) ValidationSpec() ingest.Spec {
	mode, _ := c.Get(ConfigValidation)
	schema, _ := c.Get(ConfigValidationSchema)
	key, _ := c.Get(ConfigValidationKeyRequired)
	spec := ingest.Spec{Mode: ingest.Mode(mode), Schema: schema, KeyRequired: key == "true"}
	if action, _ := c.Get(ConfigValidationAction); action != "" {
		spec.Action = ingest.Action(action)
	}
	if spec.Mode == ingest.ModeSchema {
		spec.Schema = "" // strand.validation.schema is jsonschema's
		keys, _ := c.Get(ConfigValidationKey)
		strategy, _ := c.Get(ConfigValidationStrategy)
		spec.KeySchema, spec.Strategy = keys == "schema", ingest.Strategy(strategy)
	}
	return spec
}

// TopicValidator returns t's validator bound to this broker's schema
// registry (nil: no validation).
func (b *Broker) TopicValidator(t *Topic) *ingest.Validator {
	return t.Config.Validator().Bind(b.schemas, t.Name)
}

// RecordError is one record a rejected batch was refused for.
type RecordError struct {
	Index  int32 // the record's place in its batch (its offset delta)
	Reason string
}

// RecordErrors is the error of a batch refused by strand.validation.action=
// reject: it wraps ErrInvalidRecord and lists every invalid record.
type RecordErrors struct {
	Topic     string
	Partition PartitionID
	Records   []RecordError
}

func (e *RecordErrors) Error() string {
	first := e.Records[0]
	return fmt.Sprintf("%v: %s-%d: %d invalid record(s) in the batch; record %d: %s",
		ErrInvalidRecord, e.Topic, e.Partition, len(e.Records), first.Index, first.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidRecord) hold.
func (e *RecordErrors) Unwrap() error { return ErrInvalidRecord }

// DLQTopic returns the name of the topic's DLQ.
func (c TopicConfig) DLQTopic(topic string) string {
	if v, _ := c.Get(ConfigDLQTopic); v != "" {
		return v
	}
	return ingest.DefaultDLQTopic(topic)
}

// Validator returns the topic's compiled validator (nil: no validation).
func (c TopicConfig) Validator() *ingest.Validator { return c.validator }

// compileValidator compiles the config's validator once per config change
// (ingest caches compiled Specs, so partitions and topics with the same
// settings share one).
func (c *TopicConfig) compileValidator() error {
	v, err := ingest.Compile(c.ValidationSpec())
	if err != nil {
		name := ConfigValidation
		if c.ValidationSpec().Mode == ingest.ModeJSONSchema {
			name = ConfigValidationSchema
		}
		return &ConfigError{Name: name, Reason: err.Error()}
	}
	c.validator = v
	return nil
}

// quarantine is what screen found in one batch: the records to send to the
// DLQ, with their reasons, and where they go.
type quarantine struct {
	validated int32
	redriven  int32           // accepted records that carry a redrive's source header
	records   []record.Record // offsets relative to the batch (producer's base offset + delta)
	reasons   []string
	base      record.Offset // the producer's base offset, to make offsets relative
	codec     record.Codec
	b         *Broker
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
func (q *quarantine) joinTxn(h record.Header, enlist Enlister) error {
	if q == nil || q.dlq == nil || enlist == nil || !h.IsTransactional() || q.dlq.CheckLeader() != nil {
		return nil
	}
	if err := enlist(q.dlq.Topic(), int32(q.dlq.ID())); err != nil {
		return fmt.Errorf("broker: adding DLQ %s-%d to the transaction: %w", q.dlq.Topic(), q.dlq.ID(), err)
	}
	q.inTxn, q.pid, q.epoch = true, h.ProducerID, h.ProducerEpoch
	return nil
}

// screener judges the batches of a topic that is not internal (its
// partitions' partition.Screener): a validated topic's records are
// screen'ed, and redriven records are counted on any topic.
type screener struct {
	b   *Broker
	cfg TopicConfig
}

// Screen implements partition.Screener.
func (s *screener) Screen(p *Partition, batch []byte, h record.Header, enlist Enlister) ([]byte, record.Header, partition.Quarantine, error) {
	if v := s.cfg.Validator(); v != nil {
		nb, nh, q, err := s.b.screen(p, batch, h, v, &s.cfg)
		if err != nil {
			return nil, h, nil, err
		}
		if err := q.joinTxn(nh, enlist); err != nil {
			return nil, h, nil, fmt.Errorf("%s-%d: %w", p.Topic(), p.ID(), err)
		}
		return nb, nh, q, nil
	}
	if n := s.b.redrivenUnvalidated(p, batch, h, &s.cfg); n > 0 {
		return batch, h, &quarantine{b: s.b, redriven: n}, nil // counts them; nothing to quarantine
	}
	return batch, h, nil, nil
}

// screen decodes a batch of a validated topic and judges every record. When
// all are valid it returns the batch unchanged (the fast path: the
// producer's bytes are stored as sent). Otherwise it returns a new batch of
// the valid records with the producer's offset range, producer id, epoch,
// base sequence and codec (an empty batch, still spanning the range, when no
// record is valid), and the invalid records to quarantine.
func (b *Broker) screen(p *Partition, batch []byte, h record.Header, v *ingest.Validator, cfg *TopicConfig) ([]byte, record.Header, *quarantine, error) {
	v = v.Bind(b.schemas, p.Topic())
	if ok, redriven := allValid(batch, h, v); ok {
		return batch, h, &quarantine{b: b, validated: h.NumRecords, redriven: redriven}, nil
	}
	decoded, err := record.Decode(batch)
	if err != nil {
		return nil, h, nil, fmt.Errorf("%w: %s-%d: %w", ErrCorruptMessage, p.Topic(), p.ID(), err)
	}
	q := &quarantine{b: b, validated: h.NumRecords, base: h.BaseOffset, codec: h.Compression()}
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
		b.ingest.counters(p.Topic()).rejected.Add(int64(len(q.records)))
		return nil, h, nil, re
	}
	if q.dlq, err = b.resolveDLQ(p, cfg); err != nil {
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

// errDLQValidated refuses a DLQ topic that is validated itself.
var errDLQValidated = errors.New("a DLQ topic must not be validated itself")

// resolveDLQ returns the DLQ partition for a partition of a validated topic:
// the same index in the DLQ topic (modulo its partition count, should it
// have fewer), creating the topic with the source's partition count if it
// does not exist. It runs before the source partition's lock is taken
// (creating a topic takes the broker's locks).
func (b *Broker) resolveDLQ(p *Partition, cfg *TopicConfig) (*Partition, error) {
	name := cfg.DLQTopic(p.Topic())
	t, err := b.Topic(name)
	if errors.Is(err, ErrUnknownTopicOrPartition) {
		src, serr := b.Topic(p.Topic())
		if serr != nil {
			return nil, serr
		}
		t, err = b.CreateTopic(b.dlqSpec(name, src))
		if errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("broker: DLQ %q of %s-%d: %w", name, p.Topic(), p.ID(), err)
	}
	if t.Config.Validator() != nil || name == p.Topic() {
		return nil, fmt.Errorf("%w: DLQ %q of topic %q: %w", ErrInvalidConfig, name, p.Topic(), errDLQValidated)
	}
	return t.Partition(PartitionID(int(p.ID()) % len(t.partitions)))
}

// dlqSpec is an auto-created DLQ topic: the source's partition count and,
// in a cluster, each partition on the node of the source partition it
// serves, so a quarantined record is written where it was refused.
func (b *Broker) dlqSpec(name string, src *Topic) TopicSpec {
	spec := TopicSpec{Name: name, Partitions: src.Partitions(), ReplicationFactor: -1}
	if !b.clustered() {
		return spec
	}
	img := b.meta.Image()
	var a [][]NodeID
	for i := range src.Partitions() {
		reg, ok := img.Partition(src.ID, i)
		if !ok {
			return spec
		}
		a = append(a, partition.NodeIDs(reg.Replicas))
	}
	spec.Partitions, spec.Assignment = -1, a
	return spec
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
		if role, leader := q.dlq.RoleAndLeader(); q.b.clustered() && !q.b.fenced() && role != RoleLeader && leader >= 0 {
			_, err := q.b.produceRemote(leader, q.dlq, batch)
			return err
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
	b := q.b
	c := b.ingest.counters(topic)
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
	b.logger.Warn("broker: records quarantined", "topic", topic, "dlq", dlq, "records", pending,
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
func (b *Broker) redrivenUnvalidated(p *Partition, batch []byte, h record.Header, cfg *TopicConfig) int32 {
	if IsInternalTopic(p.Topic()) {
		return 0
	}
	if _, seen := b.ingest.topics.Load(p.Topic()); !seen {
		if !h.IsTransactional() {
			return 0
		}
		if _, err := b.Topic(cfg.DLQTopic(p.Topic())); err != nil {
			return 0
		}
	}
	_, n := allValid(batch, h, nil) // a nil validator accepts every record
	return n
}

// redrivenRecord reports whether a record came back from a DLQ (a redrive
// marks it, whoever runs it: the broker, the CLI, or another client).
func redrivenRecord(hs []record.RecordHeader) bool {
	for _, h := range hs {
		if h.Key == ingest.HeaderRedriveSource {
			return true
		}
	}
	return false
}

// allValid is screen's fast path: it walks the batch's records section
// (decompressed if need be) just far enough to find each key and value, and
// reports whether the validator accepts them all. Anything unexpected (a
// malformed record, a failed decompression) answers false, and record.Decode
// then judges the batch properly and says what is wrong with it. Decoding
// every record into a Record (with its canonical-encoding check) cost as
// much as validating the JSON in it.
func allValid(batch []byte, h record.Header, v *ingest.Validator) (ok bool, redriven int32) {
	if len(batch) < h.Size() || h.Size() < record.HeaderSize {
		return false, 0
	}
	var buf *[]byte
	if h.Compression() != record.CodecNone {
		buf = decompressBufs.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= maxPooledDecompress {
				decompressBufs.Put(buf)
			}
		}()
	}
	var payload []byte
	var err error
	if buf != nil {
		payload, err = record.DecompressInto(*buf, h.Compression(), batch[record.HeaderSize:h.Size()])
		*buf = payload[:0]
	} else {
		payload = batch[record.HeaderSize:h.Size()]
	}
	if err != nil {
		return false, 0
	}
	for range h.NumRecords {
		size, n := binary.Varint(payload)
		if n <= 0 || size < 1 || size > int64(len(payload)-n) {
			return false, 0
		}
		rec := payload[n+1 : n+int(size)] // after the attributes byte
		payload = payload[n+int(size):]
		for range 2 { // timestamp delta, offset delta
			if _, n = binary.Varint(rec); n <= 0 {
				return false, 0
			}
			rec = rec[n:]
		}
		key, rec, ok := varBytes(rec)
		if !ok {
			return false, 0
		}
		value, rec, ok := varBytes(rec)
		if !ok || v.Validate(key, value) != "" {
			return false, 0
		}
		if hasRedriveHeader(rec) {
			redriven++
		}
	}
	return len(payload) == 0, redriven
}

// hasRedriveHeader reports whether a record's encoded headers section
// holds the redrive source header (false if it cannot be read: the
// record's validity does not depend on its headers).
func hasRedriveHeader(rec []byte) bool {
	count, n := binary.Varint(rec)
	if n <= 0 {
		return false
	}
	rec = rec[n:]
	for range count {
		key, rest, ok := varBytes(rec)
		if !ok {
			return false
		}
		if string(key) == ingest.HeaderRedriveSource {
			return true
		}
		if _, rec, ok = varBytes(rest); !ok {
			return false
		}
	}
	return false
}

// Decompressed records sections are recycled across validated batches (the
// values only need to live while they are judged); a buffer grown past
// maxPooledDecompress is left to the garbage collector.
const maxPooledDecompress = 4 << 20

var decompressBufs = sync.Pool{New: func() any { return new([]byte) }}

// varBytes reads a varint-length-prefixed nullable byte string.
func varBytes(b []byte) (field, rest []byte, ok bool) {
	l, n := binary.Varint(b)
	switch {
	case n <= 0 || l < -1 || l > int64(len(b)-n):
		return nil, nil, false
	case l == -1:
		return nil, b[n:], true
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
