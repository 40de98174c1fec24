package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg/schemastore"
)

// SchemasTopic is the internal topic holding the schema registry.
const SchemasTopic = schemastore.Topic

// SchemaStore is the schema registry's store over _schemas.
type SchemaStore = schemastore.Store

// schemasTopicMaxBatch bounds one registry record (a schema's text).
const schemasTopicMaxBatch = 16 << 20

// schemasTopicSpec is _schemas: one partition, compacted, every config that
// could drop or refuse the registry's records pinned.
func schemasTopicSpec() TopicSpec {
	return TopicSpec{
		Name:       SchemasTopic,
		Partitions: 1,
		Configs: map[string]string{
			ConfigCleanupPolicy:         "compact",
			ConfigRetentionMs:           "-1",
			ConfigRetentionBytes:        "-1",
			ConfigRetentionRecords:      "-1",
			ConfigMinInsyncReplicas:     "1",
			ConfigMaxMessageBytes:       strconv.Itoa(schemasTopicMaxBatch),
			ConfigValidation:            "none",
			ConfigValidationKeyRequired: "false",
		},
	}
}

// Schemas returns the schema registry's store.
func (b *Broker) Schemas() *SchemaStore { return b.schemas }

// schemasPartition returns this node's replica of _schemas, creating the
// topic if create is set and it does not exist.
func (b *Broker) schemasPartition(create bool) (*Partition, error) {
	t, err := b.Topic(SchemasTopic)
	if errors.Is(err, ErrUnknownTopicOrPartition) && create {
		spec := schemasTopicSpec()
		if b.clustered() {
			// Every live node gets a replica, so every node serves the
			// registry from its own copy.
			spec.ReplicationFactor = int16(max(1, len(liveBrokers(b.meta.Image()))))
		}
		if t, err = b.CreateTopic(spec); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(SchemasTopic)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %s: %w", SchemasTopic, err)
	}
	return t.Partition(0)
}

// openSchemas reads _schemas, if it exists here, before the broker
// serves. The topic is created by the registry's first write (a broker
// whose registry is never used has no _schemas, as it has no
// __consumer_offsets on a cluster before the first group); a cluster
// member reads its replica in the background as it appears.
func (b *Broker) openSchemas() error {
	p, err := b.schemasPartition(false)
	if err != nil {
		return nil
	}
	_, err = b.schemas.ReadFrom(p)
	return err
}

// tailSchemas reads new _schemas records as they commit, until Close.
func (b *Broker) tailSchemas() {
	defer b.wg.Done()
	wake := make(chan struct{}, 1)
	var watched *Partition
	defer func() {
		if watched != nil {
			watched.StopNotify(wake)
		}
	}()
	// The partition may appear, move or be replaced (a cluster member
	// gaining its replica): look again every second even without news.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		p, err := b.schemasPartition(false)
		if watched != nil {
			watched.StopNotify(wake)
			watched = nil
		}
		if err == nil {
			// One notification per registration: register before
			// reading, so an advance during the read is not missed.
			watched = p
			p.NotifyHighWatermark(wake)
			p.NotifyEnd(wake) // a remote write's record arrives before its high watermark
			if _, err := b.schemas.ReadFrom(p); err != nil && !b.isClosed() {
				b.logger.Warn("broker: reading the schema registry", "topic", SchemasTopic, "err", err)
			}
		}
		select {
		case <-b.stop:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// schemaNode is the broker as the schema store sees it (schemastore.Node).
type schemaNode struct{ b *Broker }

func (n schemaNode) Partition(create bool) (*Partition, error) { return n.b.schemasPartition(create) }
func (n schemaNode) Clustered() bool                           { return n.b.clustered() }
func (n schemaNode) Now() time.Time                            { return n.b.cfg.Now() }
func (n schemaNode) Logger() *slog.Logger                      { return n.b.logger }

func (n schemaNode) ProduceRemote(leader NodeID, p *Partition, batch []byte) (record.Offset, error) {
	return n.b.produceRemote(leader, p, batch)
}
