package broker

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf16"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partition"
)

// What a member tells clients about the cluster comes from its image:
// every broker's client endpoint, each partition's leader, replicas, ISR
// and leader epoch, and the controller. A single node answers for itself.

// BrokerInfo is one broker as Metadata and DescribeCluster list it.
type BrokerInfo struct {
	ID     NodeID
	Host   string
	Port   int32
	Rack   string
	Fenced bool
	// Roles: the node's roles (cluster.ParseRoles' form: nil for broker
	// and controller both).
	Roles []string
}

// IsBroker reports whether the node hosts partitions (not
// controller-only).
func (bi BrokerInfo) IsBroker() bool { return cluster.HasRole(bi.Roles, cluster.RoleBroker) }

// RolesString is the node's roles as --roles spells them.
func (bi BrokerInfo) RolesString() string { return cluster.RolesString(bi.Roles) }

// Coordinator routing errors (package coordlog owns them: every
// coordinator's host answers them).
var (
	ErrCoordinatorNotAvailable = coordlog.ErrCoordinatorNotAvailable
	ErrNotCoordinator          = coordlog.ErrNotCoordinator
	ErrCoordinatorLoading      = coordlog.ErrCoordinatorLoading
)

// Brokers returns the cluster's registered brokers with a client
// endpoint, by id; nil on a single node (the caller lists itself).
func (b *Broker) Brokers() []BrokerInfo {
	if !b.clustered() {
		return nil
	}
	var out []BrokerInfo
	for _, br := range b.meta.Image().Brokers() {
		if len(br.Endpoints) == 0 {
			continue
		}
		ep := br.Endpoints[0]
		out = append(out, BrokerInfo{ID: NodeID(br.ID), Host: ep.Host, Port: ep.Port, Rack: br.Rack, Fenced: br.Fenced, Roles: br.Roles})
	}
	return out
}

// ControllerID returns the node that leads the metadata quorum (this node
// when alone), or -1 while there is none.
func (b *Broker) ControllerID() NodeID {
	if !b.clustered() {
		return b.cfg.NodeID
	}
	id, _, ok := b.member.m.Leader()
	if !ok {
		return -1
	}
	return NodeID(id)
}

// PartitionInfo is a partition's place in the cluster as clients see it.
type PartitionInfo struct {
	Leader      NodeID // -1: none (LEADER_NOT_AVAILABLE)
	LeaderEpoch int32
	Replicas    []NodeID
	ISR         []NodeID
	Offline     []NodeID // replicas on fenced brokers
	// ELR and LastKnownELR are the partition's eligible leader replicas
	// and last known leader (KIP-966, cluster.PartitionReg); a single
	// node has neither.
	ELR          []NodeID
	LastKnownELR []NodeID
}

// PartitionInfo describes partition p of t.
func (b *Broker) PartitionInfo(t *Topic, p PartitionID) PartitionInfo {
	if !b.clustered() {
		lp, err := t.Partition(p)
		if err != nil {
			return PartitionInfo{Leader: -1}
		}
		return PartitionInfo{Leader: lp.Leader(), LeaderEpoch: int32(lp.LeaderEpoch()), Replicas: lp.Replicas(), ISR: lp.ISR()}
	}
	img := b.meta.Image()
	reg, ok := img.Partition(t.ID, int32(p))
	if !ok {
		return PartitionInfo{Leader: -1}
	}
	info := PartitionInfo{Leader: NodeID(reg.Leader), LeaderEpoch: reg.LeaderEpoch, Replicas: partition.NodeIDs(reg.Replicas), ISR: partition.NodeIDs(reg.ISR),
		ELR: partition.NodeIDs(reg.ELR), LastKnownELR: partition.NodeIDs(reg.LastKnownELR)}
	for _, r := range reg.Replicas {
		if br, ok := img.Broker(r); !ok || br.Fenced {
			info.Offline = append(info.Offline, NodeID(r))
		}
	}
	if info.Leader >= 0 && slices.Contains(info.Offline, info.Leader) {
		info.Leader = -1
	}
	return info
}

// Coordinator returns the broker that coordinates group groupID: the
// leader of __consumer_offsets, created on a cluster's first request
// (Kafka creates it on the first FindCoordinator).
func (b *Broker) Coordinator(groupID string) (NodeID, error) {
	if !b.clustered() {
		return b.cfg.NodeID, nil
	}
	t, err := b.Topic(ConsumerOffsetsTopic)
	if err != nil {
		spec := offsetsTopicSpec(b.cfg.OffsetsTopicPartitions)
		if b.clustered() {
			// offsets.topic.replication.factor is 3 in Kafka, which refuses
			// to create the topic with fewer brokers; Strand takes what
			// the cluster has, up to 3, so a one- or two-node cluster works.
			spec.ReplicationFactor = int16(min(3, len(liveBrokers(b.meta.Image()))))
		}
		if t, err = b.CreateTopic(spec); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(ConsumerOffsetsTopic)
		}
		if err != nil {
			return -1, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, ConsumerOffsetsTopic, err)
		}
	}
	info := b.PartitionInfo(t, offsetsPartition(groupID, t.Partitions()))
	if info.Leader < 0 {
		return -1, fmt.Errorf("%w: %s has no leader", ErrCoordinatorNotAvailable, ConsumerOffsetsTopic)
	}
	return info.Leader, nil
}

// offsetsPartition is the __consumer_offsets partition of a group:
// Kafka's abs(groupId.hashCode()) % n, with Java's String.hashCode over
// UTF-16 code units and Utils.abs (MinInt32 maps to 0), so a group lands
// on the partition a Kafka broker would pick.
func offsetsPartition(groupID string, n int32) PartitionID {
	var h int32
	for _, u := range utf16.Encode([]rune(groupID)) {
		h = 31*h + int32(u)
	}
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return PartitionID(h % n)
}
