package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/strandmq/strand/internal/dlq"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
)

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

// errDLQValidated refuses a DLQ topic that is validated itself.
var errDLQValidated = errors.New("a DLQ topic must not be validated itself")

// resolveDLQ returns the DLQ partition for a partition of a validated topic:
// the same index in the DLQ topic (modulo its partition count, should it
// have fewer), creating the topic with the source's partition count if it
// does not exist. It runs before the source partition's lock is taken
// (creating a topic takes the broker's locks).
func (b *Broker) resolveDLQ(p *Partition, name string) (*Partition, error) {
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

// Validation's types, under the names the layers above have always used
// (package dlq owns them).
type (
	IngestStats    = dlq.TopicStats
	RecordError    = dlq.RecordError
	RecordErrors   = dlq.RecordErrors
	RedriveOptions = dlq.RedriveOptions
	RedriveResult  = dlq.RedriveResult
)

// IngestStats returns the validation counters of every topic that has had a
// record validated or redriven, sorted by topic.
func (b *Broker) IngestStats() []IngestStats { return b.ingest.All() }

// TopicIngestStats returns one topic's validation counters (zero if none).
func (b *Broker) TopicIngestStats(topic string) IngestStats { return b.ingest.Topic(topic) }

// Redrive moves the records of topic's DLQ that its validator now accepts
// back into it (dlq.Redrive).
func (b *Broker) Redrive(ctx context.Context, topic string, opts RedriveOptions) (RedriveResult, error) {
	return dlq.Redrive(ctx, redriver{b}, topic, opts)
}

// dlqNode is the broker as quarantining sees it (dlq.Node).
type dlqNode struct{ b *Broker }

func (n dlqNode) DLQPartition(src *Partition, name string) (*Partition, error) {
	return n.b.resolveDLQ(src, name)
}

func (n dlqNode) TopicExists(name string) bool {
	_, err := n.b.Topic(name)
	return err == nil
}

func (n dlqNode) Schemas() ingest.SchemaSource { return n.b.schemas }
func (n dlqNode) Clustered() bool              { return n.b.clustered() }
func (n dlqNode) Fenced() bool                 { return n.b.fenced() }
func (n dlqNode) Logger() *slog.Logger         { return n.b.logger }

func (n dlqNode) ProduceRemote(leader NodeID, p *Partition, batch []byte) error {
	_, err := n.b.produceRemote(leader, p, batch)
	return err
}

// redriver is the broker's in-process API as a redrive uses it
// (dlq.Redriver).
type redriver struct{ *Broker }

func (r redriver) DLQTopic(topic string) (string, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return "", err
	}
	return t.Config.DLQTopic(topic), nil
}

func (r redriver) Partitions(topic string) ([]*Partition, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.partitions, nil
}

func (r redriver) Validator(topic string) (*ingest.Validator, int32, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return nil, 0, err
	}
	return r.TopicValidator(t), t.Partitions(), nil
}

func (r redriver) Committed(ctx context.Context, group, topic string, p PartitionID) (record.Offset, error) {
	return r.Group(group).Committed(ctx, topic, p)
}

func (r redriver) CommitThrough(ctx context.Context, group, topic string, p PartitionID, last record.Offset) error {
	return r.Group(group).CommitThrough(ctx, topic, p, last)
}
