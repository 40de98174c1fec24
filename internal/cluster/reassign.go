package cluster

import (
	"errors"
	"fmt"
	"slices"
)

// Partition reassignment (AlterPartitionReassignments, KIP-455, as
// Kafka's KRaft controller does it): the target replicas join the
// partition's replica set as adding replicas, followers that fetch from
// the leader like any other; once every one of them is in the ISR the
// controller completes the move — the replica set becomes the target, the
// removing replicas leave it and the ISR, and a leader that is not in the
// target hands over to one that is. Nothing is removed before its
// replacement holds everything the ISR does.

// Reassignment errors.
var (
	ErrNoReassignmentInProgress = errors.New("cluster: no partition reassignment in progress")
	ErrInvalidReplicaAssignment = errors.New("cluster: invalid replica assignment")
)

// Reassignment is one partition's requested replica set; Replicas nil
// cancels the reassignment in progress.
type Reassignment struct {
	TopicPartition
	Replicas []NodeID `json:"replicas"`
}

// AlterReassignments asks the controller to start or cancel
// reassignments.
type AlterReassignments struct {
	Parts []Reassignment `json:"parts"`
}

// reassign is the change that starts (or replaces, or cancels) a
// reassignment of one partition. A reassignment already in progress is
// undone first: its original replicas are the replicas it did not add.
func reassign(img *Image, r Reassignment) (PartitionChange, error) {
	reg, ok := img.Partition(r.Topic, r.Partition)
	if !ok {
		return PartitionChange{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, r.Topic, r.Partition)
	}
	original := slices.DeleteFunc(slices.Clone(reg.Replicas), func(id NodeID) bool { return slices.Contains(reg.AddingReplicas, id) })
	target := r.Replicas
	if target == nil {
		if !reg.Reassigning() {
			return PartitionChange{}, fmt.Errorf("%w: %s-%d", ErrNoReassignmentInProgress, r.Topic, r.Partition)
		}
		target = original
	}
	if err := checkTarget(img, target); err != nil {
		return PartitionChange{}, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, err)
	}
	replicas := slices.Clone(target)
	var adding, removing []NodeID
	for _, id := range target {
		if !slices.Contains(original, id) {
			adding = append(adding, id)
		}
	}
	for _, id := range original {
		if !slices.Contains(target, id) {
			replicas, removing = append(replicas, id), append(removing, id)
		}
	}
	isr := slices.DeleteFunc(slices.Clone(reg.ISR), func(id NodeID) bool { return !slices.Contains(replicas, id) })
	if len(isr) == 0 {
		return PartitionChange{}, fmt.Errorf("%w: %s-%d: no member of the ISR %v would be left", ErrInvalidReplicaAssignment, r.Topic, r.Partition, reg.ISR)
	}
	ch := PartitionChange{TopicID: r.Topic, PartitionID: r.Partition, ExpectedPartitionEpoch: reg.PartitionEpoch,
		Leader: LeaderUnchanged, Replicas: replicas, Reassignment: &ReassignmentState{Adding: adding, Removing: removing}}
	if !slices.Equal(isr, reg.ISR) {
		ch.ISR = isr
	}
	if !slices.Contains(replicas, reg.Leader) && reg.Leader != NoLeader { // an added replica that led, cancelled
		ch.Leader = electLeader(img, PartitionReg{Replicas: replicas, Leader: NoLeader}, isr)
	}
	if len(adding) == 0 { // nothing to wait for: complete at once
		next := reg.clone()
		next.Replicas, next.ISR, next.AddingReplicas, next.RemovingReplicas = replicas, isr, nil, removing
		if ch.Leader != LeaderUnchanged {
			next.Leader = ch.Leader
		}
		if done, ok := CompleteReassignment(img, next); ok {
			done.ExpectedPartitionEpoch, done.TopicID, done.PartitionID = reg.PartitionEpoch, r.Topic, r.Partition
			return done, nil
		}
	}
	return ch, nil
}

// checkTarget refuses an empty target, a broker named twice, or one that
// is not registered (Kafka's INVALID_REPLICA_ASSIGNMENT).
func checkTarget(img *Image, target []NodeID) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: no replicas", ErrInvalidReplicaAssignment)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return fmt.Errorf("%w: broker %d named twice", ErrInvalidReplicaAssignment, id)
		}
		br, ok := img.Broker(id)
		if !ok {
			return fmt.Errorf("%w: broker %d is not registered", ErrInvalidReplicaAssignment, id)
		}
		if !br.IsBroker() {
			return fmt.Errorf("%w: node %d is controller-only (--roles controller) and hosts no partitions", ErrInvalidReplicaAssignment, id)
		}
	}
	return nil
}

// CompleteReassignment is the change that finishes reg's reassignment
// once every adding replica is in the ISR: the removing replicas leave
// the replica set and the ISR, and a leader among them hands over to the
// first live in-sync target replica. ok is false while it must wait (or
// when no in-sync target replica would be left).
func CompleteReassignment(img *Image, reg PartitionReg) (PartitionChange, bool) {
	if !reg.Reassigning() {
		return PartitionChange{}, false
	}
	for _, id := range reg.AddingReplicas {
		if !slices.Contains(reg.ISR, id) {
			return PartitionChange{}, false
		}
	}
	gone := func(id NodeID) bool { return slices.Contains(reg.RemovingReplicas, id) }
	target := slices.DeleteFunc(slices.Clone(reg.Replicas), gone)
	isr := slices.DeleteFunc(slices.Clone(reg.ISR), gone)
	if len(isr) == 0 {
		return PartitionChange{}, false
	}
	ch := PartitionChange{ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged,
		Replicas: target, ISR: isr, Reassignment: &ReassignmentState{}}
	if reg.Leader == NoLeader || gone(reg.Leader) {
		next := reg.clone()
		next.Replicas, next.Leader = target, NoLeader
		ch.Leader = electLeader(img, next, isr)
	}
	return ch, true
}

// Reassignments applies an operator's request: one change per partition
// that can start, one result per partition.
func Reassignments(img *Image, req AlterReassignments) ([]Record, []PartitionResult) {
	var recs []Record
	var results []PartitionResult
	for _, r := range req.Parts {
		ch, err := reassign(img, r)
		if err != nil {
			f := RPCFailure(err)
			results = append(results, PartitionResult{TopicPartition: r.TopicPartition, Code: f.Code, Err: f.Err})
			continue
		}
		recs = append(recs, ch)
		results = append(results, PartitionResult{TopicPartition: r.TopicPartition})
	}
	return recs, results
}
