package cluster

import (
	"errors"
	"slices"
	"testing"
)

// apply commits ch to im, failing the test if it does not apply.
func applyChange(t *testing.T, im *Image, ch PartitionChange) *Image {
	t.Helper()
	next, err := im.WithAt(im.Index()+1, ch)
	if err != nil {
		t.Fatalf("apply %+v: %v", ch, err)
	}
	return next
}

// TestReassignLifecycle walks RF 1 → 3 and a move off a node: the
// targets join as adding replicas, nothing completes until they are in
// the ISR, completion drops the removing replicas and moves leadership
// off them.
func TestReassignLifecycle(t *testing.T) {
	im, id := isrImage(t, nil, nil, false, PartitionReg{Replicas: []NodeID{1}, ISR: []NodeID{1}, Leader: 1, LeaderEpoch: 1})
	tp := TopicPartition{Topic: id, Partition: 0}

	// RF 1 → 3: 2 and 3 are added; no removal.
	ch, err := reassign(im, Reassignment{TopicPartition: tp, Replicas: []NodeID{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	im = applyChange(t, im, ch)
	reg, _ := im.Partition(id, 0)
	if !slices.Equal(reg.Replicas, []NodeID{1, 2, 3}) || !slices.Equal(reg.AddingReplicas, []NodeID{2, 3}) || reg.RemovingReplicas != nil || reg.Leader != 1 {
		t.Fatalf("started: %+v", reg)
	}
	if _, ok := CompleteReassignment(im, reg); ok {
		t.Fatal("completed before the adding replicas joined the ISR")
	}
	im = applyChange(t, im, PartitionChange{TopicID: id, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged, ISR: []NodeID{1, 2, 3}})
	reg, _ = im.Partition(id, 0)
	done, ok := CompleteReassignment(im, reg)
	if !ok {
		t.Fatalf("not complete with ISR %v", reg.ISR)
	}
	done.TopicID = id
	im = applyChange(t, im, done)
	reg, _ = im.Partition(id, 0)
	if reg.Reassigning() || !slices.Equal(reg.Replicas, []NodeID{1, 2, 3}) || reg.Leader != 1 || reg.LeaderEpoch != 1 {
		t.Fatalf("completed: %+v", reg)
	}

	// Move off node 1, the leader: 3 is already in sync, so the target
	// [2, 3] adds nothing and completes at once, with 2 leading.
	ch, err = reassign(im, Reassignment{TopicPartition: tp, Replicas: []NodeID{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	im = applyChange(t, im, ch)
	reg, _ = im.Partition(id, 0)
	if reg.Reassigning() || !slices.Equal(reg.Replicas, []NodeID{2, 3}) || !slices.Equal(reg.ISR, []NodeID{2, 3}) || reg.Leader != 2 || reg.LeaderEpoch != 2 {
		t.Fatalf("moved off the leader: %+v", reg)
	}
}

// TestReassignCancel: cancelling takes the adding replicas out of the
// replica set (and the ISR, if they joined); cancelling when nothing is in
// progress is NO_REASSIGNMENT_IN_PROGRESS.
func TestReassignCancel(t *testing.T) {
	im, id := isrImage(t, nil, nil, false, PartitionReg{Replicas: []NodeID{1, 2}, ISR: []NodeID{1, 2}, Leader: 1})
	tp := TopicPartition{Topic: id, Partition: 0}
	if _, err := reassign(im, Reassignment{TopicPartition: tp}); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("cancel with none in progress: %v", err)
	}
	ch, err := reassign(im, Reassignment{TopicPartition: tp, Replicas: []NodeID{3, 2}})
	if err != nil {
		t.Fatal(err)
	}
	im = applyChange(t, im, ch)
	reg, _ := im.Partition(id, 0)
	if !slices.Equal(reg.Replicas, []NodeID{3, 2, 1}) || !slices.Equal(reg.AddingReplicas, []NodeID{3}) || !slices.Equal(reg.RemovingReplicas, []NodeID{1}) {
		t.Fatalf("started: %+v", reg)
	}
	ch, err = reassign(im, Reassignment{TopicPartition: tp})
	if err != nil {
		t.Fatal(err)
	}
	im = applyChange(t, im, ch)
	reg, _ = im.Partition(id, 0)
	if reg.Reassigning() || !slices.Equal(reg.Replicas, []NodeID{2, 1}) || !slices.Equal(reg.ISR, []NodeID{1, 2}) || reg.Leader != 1 {
		t.Fatalf("cancelled: %+v", reg)
	}
}

// TestReassignRefusesBadTargets: Kafka's INVALID_REPLICA_ASSIGNMENT and
// UNKNOWN_TOPIC_OR_PARTITION cases.
func TestReassignRefusesBadTargets(t *testing.T) {
	im, id := isrImage(t, nil, nil, false, PartitionReg{Replicas: []NodeID{1}, ISR: []NodeID{1}, Leader: 1})
	for _, tc := range []struct {
		replicas []NodeID
		part     int32
		err      error
	}{
		{[]NodeID{}, 0, ErrInvalidReplicaAssignment},
		{[]NodeID{1, 1}, 0, ErrInvalidReplicaAssignment},
		{[]NodeID{1, 9}, 0, ErrInvalidReplicaAssignment},
		{[]NodeID{1}, 5, ErrUnknownPartition},
	} {
		if _, err := reassign(im, Reassignment{TopicPartition: TopicPartition{Topic: id, Partition: tc.part}, Replicas: tc.replicas}); !errors.Is(err, tc.err) {
			t.Errorf("target %v of partition %d: %v, want %v", tc.replicas, tc.part, err, tc.err)
		}
	}
}

// TestReassignErrorsCrossTheWire: a refused reassignment's result carries
// a code the calling node turns back into the same sentinel.
func TestReassignErrorsCrossTheWire(t *testing.T) {
	im, id := isrImage(t, nil, nil, false, PartitionReg{Replicas: []NodeID{1}, ISR: []NodeID{1}, Leader: 1})
	_, res := Reassignments(im, AlterReassignments{Parts: []Reassignment{
		{TopicPartition: TopicPartition{Topic: id}, Replicas: []NodeID{2, 9}},
		{TopicPartition: TopicPartition{Topic: id}},
	}})
	if len(res) != 2 || !errors.Is(res[0].Error(), ErrInvalidReplicaAssignment) || !errors.Is(res[1].Error(), ErrNoReassignmentInProgress) {
		t.Fatalf("results %+v", res)
	}
}
