package broker

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/strandmq/strand/internal/cluster"
)

// On a cluster member, topic changes are records committed through the
// controller (cluster.Store.Apply forwards them and returns once this
// node's image holds them); the registry then follows the image
// (syncLocked), so the answer to a CreateTopics already lists the topic
// with its leaders, on this node and — a moment later — on every other.

// liveBrokers are the brokers partitions may be placed on: registered,
// unfenced and not shutting down, by id.
func liveBrokers(img *cluster.Image) []cluster.NodeID {
	var out []cluster.NodeID
	for _, br := range img.Brokers() {
		if !br.Fenced && !br.InControlledShutdown {
			out = append(out, br.ID)
		}
	}
	return out
}

// place assigns n partitions rf replicas each over the live brokers,
// striped from a random start: partition i's replicas start at broker
// (start+i) of a list that takes the racks in turn (Kafka's rack-aware
// placement), so partitions, their leaders (the first replica) and their
// followers spread over the cluster, and a partition's replicas are on
// different racks while there are as many racks as replicas. Without
// racks the list is the brokers in id order (Kafka's placement without
// racks).
func place(img *cluster.Image, n int32, rf int) ([][]cluster.NodeID, error) {
	live := liveBrokers(img)
	switch {
	case len(live) == 0:
		return nil, fmt.Errorf("%w: no live broker to place partitions on (brokers register and are unfenced once they reach the controller)", ErrInvalidReplicationFactor)
	case rf > len(live):
		return nil, fmt.Errorf("%w: replication factor %d is more than the %d live brokers (%v)", ErrInvalidReplicationFactor, rf, len(live), live)
	}
	order, rackOf := rackAlternated(img, live)
	racks := len(slices.Compact(slices.Sorted(maps.Values(rackOf))))
	start := rand.IntN(len(order))
	out := make([][]cluster.NodeID, n)
	for i := range out {
		out[i] = pickReplicas(order, rackOf, (start+i)%len(order), rf, racks)
	}
	return out, nil
}

// rackAlternated orders brokers so that consecutive ones are on different
// racks where it can (racks by name, each rack's brokers by id, then one
// of each rack in turn), and returns each broker's rack.
func rackAlternated(img *cluster.Image, live []cluster.NodeID) ([]cluster.NodeID, map[cluster.NodeID]string) {
	rackOf := make(map[cluster.NodeID]string, len(live))
	byRack := map[string][]cluster.NodeID{}
	for _, id := range live { // live is in id order
		br, _ := img.Broker(id)
		rackOf[id] = br.Rack
		byRack[br.Rack] = append(byRack[br.Rack], id)
	}
	names := slices.Sorted(maps.Keys(byRack))
	order := make([]cluster.NodeID, 0, len(live))
	for round := 0; len(order) < len(live); round++ {
		for _, r := range names {
			if round < len(byRack[r]) {
				order = append(order, byRack[r][round])
			}
		}
	}
	return order, rackOf
}

// pickReplicas takes rf brokers from order starting at from: each from a
// rack no replica of the partition is on yet, while any is left, then the
// next brokers not taken.
func pickReplicas(order []cluster.NodeID, rackOf map[cluster.NodeID]string, from, rf, racks int) []cluster.NodeID {
	out := make([]cluster.NodeID, 0, rf)
	used := map[string]bool{}
	for pass := 0; pass < 2 && len(out) < rf; pass++ {
		for k := range order {
			id := order[(from+k)%len(order)]
			if len(out) == rf {
				break
			}
			if slices.Contains(out, id) || pass == 0 && used[rackOf[id]] && len(used) < racks {
				continue
			}
			out = append(out, id)
			used[rackOf[id]] = true
		}
	}
	return out
}

// ReplicationFactor is the replica count a new topic asking for rf gets:
// rf, or the broker default (default.replication.factor) for -1 and 0.
func (b *Broker) ReplicationFactor(rf int16) int {
	if rf <= 0 {
		return b.cfg.DefaultReplicationFactor
	}
	return int(rf)
}

func checkClusterAssignment(img *cluster.Image, a [][]NodeID) error {
	live := liveBrokers(img)
	for i, replicas := range a {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, i)
		}
		if len(a[0]) != len(replicas) {
			return fmt.Errorf("%w: partition %d has %d replicas, partition 0 has %d: every partition of a topic has the same replication factor", ErrInvalidReplicaAssignment, i, len(replicas), len(a[0]))
		}
		for j, r := range replicas {
			if slices.Contains(replicas[:j], r) {
				return fmt.Errorf("%w: partition %d names broker %d twice", ErrInvalidReplicaAssignment, i, r)
			}
			if !slices.Contains(live, cluster.NodeID(r)) {
				return fmt.Errorf("%w: partition %d on broker %d, which is not a live broker (live: %v)", ErrInvalidReplicaAssignment, i, r, live)
			}
		}
	}
	return nil
}

// partitionRecords registers partitions first.. of topic id on the given
// replicas, each led by its first replica.
func partitionRecords(id TopicID, first int32, replicas [][]cluster.NodeID) []cluster.Record {
	recs := make([]cluster.Record, len(replicas))
	for i, r := range replicas {
		recs[i] = cluster.Partition{TopicID: id, PartitionID: first + int32(i), Replicas: r, ISR: r, Leader: r[0]}
	}
	return recs
}

func toClusterIDs(a [][]NodeID) [][]cluster.NodeID {
	out := make([][]cluster.NodeID, len(a))
	for i, r := range a {
		for _, id := range r {
			out[i] = append(out[i], cluster.NodeID(id))
		}
	}
	return out
}

// createTopicInCluster places and registers a new topic. b.admin is held.
func (b *Broker) createTopicInCluster(t *Topic, n int32, spec TopicSpec) (*Topic, error) {
	img := b.meta.Image()
	replicas := toClusterIDs(spec.Assignment)
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
		partitionRecords(t.ID, 0, replicas)...)
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
	replicas := toClusterIDs(assignment)
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
		partitionRecords(t.ID, cur, replicas)...)
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
