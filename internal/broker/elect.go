package broker

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition"
)

// Operator requests the controller decides per partition: leader
// elections (ElectLeaders) and partition reassignments
// (AlterPartitionReassignments, ListPartitionReassignments).

// PartitionOutcome is one partition's result of such a request: Err nil
// when it was done.
type PartitionOutcome struct {
	Topic     string
	Partition int32
	Err       error
}

// ElectLeaders asks the controller to elect leaders: preferred ones (each
// partition's first replica, where it is an in-sync live replica) or, with
// unclean, any live replica of a leaderless partition. parts names the
// partitions by topic; nil means every partition, and then partitions that
// need no election are left out. A single node leads everything already
// (cluster.ErrElectionNotNeeded).
func (b *Broker) ElectLeaders(unclean bool, parts map[string][]int32) ([]PartitionOutcome, error) {
	typ := cluster.ElectPreferred
	if unclean {
		typ = cluster.ElectUnclean
	}
	req := cluster.ElectLeaders{Type: typ}
	out, names := b.resolvePartitions(parts, func(name string, p int32) error {
		return fmt.Errorf("%w: node %d leads %s-%d, its only replica", cluster.ErrElectionNotNeeded, b.cfg.NodeID, name, p)
	}, func(tp cluster.TopicPartition) { req.Partitions = append(req.Partitions, tp) })
	if !b.clustered() || (parts != nil && len(req.Partitions) == 0) {
		return out, nil
	}
	results, err := b.member.m.ElectLeaders(req, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("broker: elect leaders: %w", err)
	}
	return append(out, b.outcomes(results, names)...), nil
}

// Reassign starts partition reassignments: parts maps each topic's
// partitions to their target replicas, nil to cancel the one in progress.
// A single node has nowhere to move a partition to.
func (b *Broker) Reassign(parts map[string]map[int32][]NodeID) ([]PartitionOutcome, error) {
	byTopic := make(map[string][]int32, len(parts))
	for name, ps := range parts {
		byTopic[name] = slices.Sorted(maps.Keys(ps))
	}
	var req cluster.AlterReassignments
	out, names := b.resolvePartitions(byTopic, func(name string, p int32) error {
		return fmt.Errorf("%w: a single node cannot move %s-%d", ErrInvalidReplicaAssignment, name, p)
	}, func(tp cluster.TopicPartition) {
		var replicas []cluster.NodeID
		if target := parts[b.topicName(tp.Topic)][tp.Partition]; target != nil {
			replicas = partition.ClusterIDs(target)
		}
		req.Parts = append(req.Parts, cluster.Reassignment{TopicPartition: tp, Replicas: replicas})
	})
	if len(req.Parts) == 0 {
		return out, nil
	}
	results, err := b.member.m.AlterReassignments(req, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("broker: reassign partitions: %w", err)
	}
	return append(out, b.outcomes(results, names)...), nil
}

// Reassignment is a partition reassignment in progress.
type Reassignment struct {
	Topic            string
	Partition        int32
	Replicas         []NodeID
	Adding, Removing []NodeID
}

// Reassignments lists the reassignments in progress, of the named
// topics' partitions (nil: all).
func (b *Broker) Reassignments(parts map[string][]int32) []Reassignment {
	if !b.clustered() {
		return nil
	}
	img := b.meta.Image()
	var out []Reassignment
	for _, t := range img.Topics() {
		want, named := parts[t.Name]
		if parts != nil && !named {
			continue
		}
		for p := range t.Partitions {
			reg, ok := img.Partition(t.ID, p)
			if !ok || !reg.Reassigning() || (want != nil && !slices.Contains(want, p)) {
				continue
			}
			out = append(out, Reassignment{Topic: t.Name, Partition: p, Replicas: partition.NodeIDs(reg.Replicas),
				Adding: partition.NodeIDs(reg.AddingReplicas), Removing: partition.NodeIDs(reg.RemovingReplicas)})
		}
	}
	return out
}

// resolvePartitions turns named partitions into the controller's ids,
// calling add for each one that exists; unknown ones, and on a single
// node every one (single's error), go straight into the outcomes.
func (b *Broker) resolvePartitions(parts map[string][]int32, single func(string, int32) error, add func(cluster.TopicPartition)) ([]PartitionOutcome, map[cluster.TopicID]string) {
	var out []PartitionOutcome
	names := map[cluster.TopicID]string{}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		t, err := b.Topic(name)
		for _, p := range parts[name] {
			switch {
			case err != nil:
				out = append(out, PartitionOutcome{name, p, err})
			case p < 0 || p >= t.Partitions():
				out = append(out, PartitionOutcome{name, p, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, name, p)})
			case !b.clustered():
				out = append(out, PartitionOutcome{name, p, single(name, p)})
			default:
				names[t.ID] = name
				add(cluster.TopicPartition{Topic: t.ID, Partition: p})
			}
		}
	}
	return out, names
}

// outcomes names the controller's per-partition results.
func (b *Broker) outcomes(results []cluster.PartitionResult, names map[cluster.TopicID]string) []PartitionOutcome {
	var out []PartitionOutcome
	for _, r := range results {
		name, ok := names[r.Topic]
		if !ok {
			if name = b.topicName(r.Topic); name == "" {
				continue // deleted meanwhile
			}
		}
		out = append(out, PartitionOutcome{name, r.Partition, r.Error()})
	}
	return out
}

// topicName is the name of topic id, "" if there is none.
func (b *Broker) topicName(id cluster.TopicID) string {
	if t, err := b.TopicByID(id); err == nil {
		return t.Name
	}
	return ""
}
