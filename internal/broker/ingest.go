package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/dlq"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
)

// TopicValidator returns t's validator bound to this broker's schema
// registry (nil: no validation).
func (b *Broker) TopicValidator(t *Topic) *ingest.Validator {
	return t.Config.Validator().Bind(b.schemas, t.Name)
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
	a, rf, ok := cluster.Beside(b.meta.Image(), src.ID, src.Partitions())
	if !ok {
		if rf > 0 {
			spec.ReplicationFactor = int16(rf)
		}
		return spec
	}
	for _, r := range a {
		spec.Assignment = append(spec.Assignment, partition.NodeIDs(r))
	}
	spec.Partitions = -1
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

func (r redriver) Partitions(topic string) ([]*Partition, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return nil, err
	}
	return t.partitions, nil
}

func (r redriver) Committed(ctx context.Context, group, topic string, p PartitionID) (record.Offset, error) {
	return r.Group(group).Committed(ctx, topic, p)
}

func (r redriver) CommitThrough(ctx context.Context, group, topic string, p PartitionID, last record.Offset) error {
	return r.Group(group).CommitThrough(ctx, topic, p, last)
}

func (r redriver) DLQTopic(topic string) (string, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return "", err
	}
	return t.Config.DLQTopic(topic), nil
}

func (r redriver) Validator(topic string) (*ingest.Validator, int32, error) {
	t, err := r.Topic(topic)
	if err != nil {
		return nil, 0, err
	}
	return r.TopicValidator(t), t.Partitions(), nil
}
