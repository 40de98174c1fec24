package broker

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition"
)

// On a cluster member, topic changes are records committed through the
// controller (cluster.Store.Apply forwards them and returns once this
// node's image holds them); the registry then follows the image
// (syncLocked), so the answer to a CreateTopics already lists the topic
// with its leaders, on this node and — a moment later — on every other.

// place assigns n partitions rf replicas each (cluster.Place).
func place(img *cluster.Image, n int32, rf int) ([][]cluster.NodeID, error) {
	a, err := cluster.Place(img, n, rf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidReplicationFactor, err)
	}
	return a, nil
}

// checkClusterAssignment checks a manual assignment (cluster.CheckAssignment).
func checkClusterAssignment(img *cluster.Image, a [][]NodeID) error {
	if err := cluster.CheckAssignment(img, partition.ClusterIDLists(a)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidReplicaAssignment, err)
	}
	return nil
}

// liveBrokers are the brokers partitions may be placed on
// (cluster.LiveBrokers).
func liveBrokers(img *cluster.Image) []cluster.NodeID { return cluster.LiveBrokers(img) }

// ReplicationFactor is the replica count a new topic asking for rf gets:
// rf, or the broker default (default.replication.factor) for -1 and 0.
func (b *Broker) ReplicationFactor(rf int16) int {
	if rf <= 0 {
		return b.cfg.DefaultReplicationFactor
	}
	return int(rf)
}

// createTopicInCluster places and registers a new topic. b.admin is held.
func (b *Broker) createTopicInCluster(t *Topic, n int32, spec TopicSpec) (*Topic, error) {
	img := b.meta.Image()
	replicas := partition.ClusterIDLists(spec.Assignment)
	if len(replicas) == 0 {
		var err error
		if replicas, err = place(img, n, b.ReplicationFactor(spec.ReplicationFactor)); err != nil {
			return nil, err
		}
	}
	if spec.ValidateOnly {
		t.partitions = make([]*Partition, n)
		return t, nil
	}
	recs := append([]cluster.Record{cluster.PutTopic{Topic: cluster.Topic{Name: t.Name, ID: t.ID, Partitions: n, Configs: t.Config.Overrides()}}},
		cluster.PartitionRecords(t.ID, 0, replicas)...)
	if err := b.applyInClusterLocked("create topic "+t.Name, recs...); err != nil {
		if errors.Is(err, cluster.ErrConflict) {
			img := b.meta.Image() // holds what the change ran into
			b.syncLocked(img)
			if _, exists := img.Topic(t.Name); exists {
				return nil, fmt.Errorf("%w: %q", ErrTopicExists, t.Name)
			}
		}
		return nil, err
	}
	b.logger.Info("broker: topic created", "topic", t.Name, "partitions", n, "configs", t.Config.Overrides())
	return b.Topic(t.Name)
}

// addPartitionsInCluster grows a topic to total partitions. b.admin is held.
func (b *Broker) addPartitionsInCluster(t *Topic, total int32, assignment [][]NodeID, validateOnly bool) (*Topic, error) {
	cur := t.Partitions()
	replicas := partition.ClusterIDLists(assignment)
	if len(replicas) == 0 {
		var err error
		rf := 1
		if reg, ok := b.meta.Image().Partition(t.ID, 0); ok {
			rf = len(reg.Replicas) // new partitions take the topic's replication factor
		}
		if replicas, err = place(b.meta.Image(), total-cur, rf); err != nil {
			return nil, err
		}
	}
	if validateOnly {
		return &Topic{Name: t.Name, ID: t.ID, Config: t.Config, partitions: make([]*Partition, total)}, nil
	}
	prev := cluster.Topic{Name: t.Name, ID: t.ID, Partitions: cur, Configs: t.Config.Overrides()}
	recs := append([]cluster.Record{cluster.PutTopic{Topic: cluster.Topic{Name: t.Name, ID: t.ID, Partitions: total, Configs: t.Config.Overrides()}, Prev: &prev}},
		cluster.PartitionRecords(t.ID, cur, replicas)...)
	if err := b.applyInClusterLocked("create partitions of "+t.Name, recs...); err != nil {
		return nil, err
	}
	b.logger.Info("broker: partitions added", "topic", t.Name, "from", cur, "to", total)
	return b.Topic(t.Name)
}

// applyInClusterLocked commits recs through the controller and brings the
// registry up to the image that holds them. b.admin is held.
func (b *Broker) applyInClusterLocked(what string, recs ...cluster.Record) error {
	img, err := b.meta.Apply(recs...)
	if err != nil {
		return fmt.Errorf("broker: %s: %w", what, err)
	}
	b.syncLocked(img)
	return nil
}
