package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/share/sharenode"
)

// Share groups (KIP-932) are hosted by package sharenode; this file is the
// node's side: sharenode.Broker over this broker, and the start.

// ShareNode is share groups on this node.
type ShareNode = sharenode.Node

// Share returns the node's share groups.
func (b *Broker) Share() *ShareNode { return b.share }

// openShare starts share groups (on a cluster member too: its share
// coordinators start as syncCoordinators finds it leading
// __share_group_state partitions).
func (b *Broker) openShare() (err error) {
	b.share, err = sharenode.New(sharenode.Config{Broker: shareBroker{b}, NodeID: int32(b.cfg.NodeID), Now: b.cfg.Now, Logger: b.logger,
		Clustered: b.clustered(), Peers: b.peers, StatePartitions: b.cfg.OffsetsTopicPartitions, Stop: b.stop, Meta: b.meta})
	return err
}

// shareBroker is sharenode.Broker over this broker.
type shareBroker struct{ b *Broker }

func (s shareBroker) Topics() map[string]share.TopicInfo {
	out := map[string]share.TopicInfo{}
	for _, t := range s.b.Topics() {
		out[t.Name] = share.TopicInfo{ID: t.ID, Partitions: t.Partitions()}
	}
	return out
}

func (s shareBroker) Partition(topic string, id [16]byte, p int32) (*Partition, error) {
	if id == ([16]byte{}) {
		return s.b.Partition(topic, PartitionID(p))
	}
	t, err := s.b.TopicByID(TopicID(id))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownTopicOrPartition, err)
	}
	return t.Partition(PartitionID(p))
}

func (s shareBroker) Leader(topic string, pick func(int32) int32) (int32, int32, error) {
	t, err := s.b.Topic(topic)
	if err != nil {
		return 0, -1, err
	}
	k := pick(t.Partitions())
	return k, int32(s.b.PartitionInfo(t, PartitionID(k)).Leader), nil
}

func (s shareBroker) Led(topic string) map[int32]*Partition { return s.b.ledPartitions(topic) }

func (s shareBroker) Store(p *Partition) *coordlog.Store { return s.b.coordStore(p) }

func (s shareBroker) CreateInternalTopic(name string, n int32, rf int16, configs map[string]string) error {
	spec := offsetsTopicSpec(n)
	spec.Name, spec.ReplicationFactor = name, rf
	maps.Copy(spec.Configs, configs)
	if _, err := s.b.CreateTopic(spec); err != nil && !errors.Is(err, ErrTopicExists) {
		return err
	}
	return nil
}

func (s shareBroker) ProduceDeadLetters(ctx context.Context, topic, src string, p int32, recs []record.Record) error {
	t, err := s.b.Topic(topic)
	if errors.Is(err, ErrUnknownTopicOrPartition) {
		st, serr := s.b.Topic(src)
		if serr != nil {
			return serr
		}
		if t, err = s.b.CreateTopic(s.b.dlqSpec(topic, st)); errors.Is(err, ErrTopicExists) {
			t, err = s.b.Topic(topic)
		}
	}
	if err != nil {
		return fmt.Errorf("broker: dead-letter topic %q: %w", topic, err)
	}
	dp, err := t.Partition(PartitionID(int(p) % int(t.Partitions())))
	if err != nil {
		return err
	}
	// The dead-letter partition has the source's replicas and, but for
	// failovers, its leader; after one the two elections may pick
	// different nodes. A follower's copy never takes an append of its own,
	// so the dead letters go to the DLQ partition's leader, as a
	// quarantine's do (dlq.Node.ProduceRemote): appending here would fail
	// every rejection of the share-partition until the leaderships meet
	// again.
	if dp.CheckLeader() != nil {
		if role, leader := dp.RoleAndLeader(); s.b.clustered() && !s.b.fenced() && role != partition.RoleLeader && leader >= 0 {
			batch, err := encodeProduced(recs, s.b.cfg.Now().UnixMilli())
			if err != nil {
				return fmt.Errorf("broker: dead letters for %s: %w", topic, err)
			}
			_, err = s.b.produceRemote(leader, dp, batch)
			return err
		}
	}
	_, err = s.b.ProduceRecords(ctx, topic, dp.ID(), recs)
	return err
}
