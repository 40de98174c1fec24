package cluster

import (
	"errors"
	"slices"
	"testing"
)

// TestElectionFor pins ElectLeaders' outcomes per partition: preferred
// elections move leadership to the first replica only when it is a live
// ISR member; unclean ones only for leaderless partitions, cleanly when an
// ISR member is back.
func TestElectionFor(t *testing.T) {
	reg := func(replicas, isr []NodeID, leader NodeID) PartitionReg {
		return PartitionReg{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 4, PartitionEpoch: 7}
	}
	for _, tc := range []struct {
		name    string
		typ     ElectionType
		reg     PartitionReg
		fenced  []NodeID
		err     error
		leader  NodeID
		isr     []NodeID // nil: unchanged
		unclean bool
	}{
		{name: "preferred: the first replica back in the ISR takes over", typ: ElectPreferred,
			reg: reg([]NodeID{1, 2, 3}, []NodeID{2, 3, 1}, 2), leader: 1},
		{name: "preferred: already leading", typ: ElectPreferred,
			reg: reg([]NodeID{1, 2, 3}, []NodeID{1, 2, 3}, 1), err: ErrElectionNotNeeded},
		{name: "preferred: out of the ISR", typ: ElectPreferred,
			reg: reg([]NodeID{1, 2, 3}, []NodeID{2, 3}, 2), err: ErrPreferredLeaderNotAvailable},
		{name: "preferred: in the ISR but fenced", typ: ElectPreferred, fenced: []NodeID{1},
			reg: reg([]NodeID{1, 2, 3}, []NodeID{1, 2}, 2), err: ErrPreferredLeaderNotAvailable},
		{name: "unclean: a partition with a leader", typ: ElectUnclean,
			reg: reg([]NodeID{1, 2, 3}, []NodeID{2}, 2), err: ErrElectionNotNeeded},
		{name: "unclean: an ISR member is back, elected cleanly", typ: ElectUnclean,
			reg: reg([]NodeID{1, 2, 3}, []NodeID{3}, NoLeader), leader: 3},
		{name: "unclean: the ISR is gone, the first live replica leads alone", typ: ElectUnclean, fenced: []NodeID{1},
			reg: reg([]NodeID{1, 2, 3}, []NodeID{1}, NoLeader), leader: 2, isr: []NodeID{2}, unclean: true},
		{name: "unclean: no replica is live", typ: ElectUnclean, fenced: []NodeID{1, 2, 3},
			reg: reg([]NodeID{1, 2, 3}, []NodeID{1}, NoLeader), err: ErrEligibleLeadersNotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, id := isrImage(t, tc.fenced, nil, false, tc.reg)
			ch, err := electionFor(im, DefaultRules, tc.typ, id, 0)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || ch.Leader != tc.leader || !slices.Equal(ch.ISR, tc.isr) || ch.Unclean != tc.unclean || ch.ExpectedPartitionEpoch != 7 {
				t.Fatalf("got %+v, %v; want leader %d ISR %v unclean %v at partition epoch 7", ch, err, tc.leader, tc.isr, tc.unclean)
			}
		})
	}
}

// TestElectionsAllPartitions: with no partitions named, every partition
// is tried and those needing no election are left out; a named unknown
// partition is reported.
func TestElectionsAllPartitions(t *testing.T) {
	im, id := isrImage(t, nil, nil, false,
		PartitionReg{Replicas: []NodeID{1, 2}, ISR: []NodeID{1, 2}, Leader: 1},
		PartitionReg{Replicas: []NodeID{2, 1}, ISR: []NodeID{1, 2}, Leader: 1},
		PartitionReg{Replicas: []NodeID{3, 1}, ISR: []NodeID{1}, Leader: 1})
	recs, results := Elections(im, DefaultRules, ElectLeaders{Type: ElectPreferred})
	if len(recs) != 1 || recs[0].(PartitionChange).PartitionID != 1 || recs[0].(PartitionChange).Leader != 2 {
		t.Fatalf("changes %+v, want partition 1 to node 2", recs)
	}
	if len(results) != 2 || results[0].Partition != 1 || results[0].Error() != nil ||
		results[1].Partition != 2 || !errors.Is(results[1].Error(), ErrPreferredLeaderNotAvailable) {
		t.Fatalf("results %+v", results)
	}
	if got := Imbalanced(im, DefaultRules, 0); len(got) != 0 {
		t.Fatalf("imbalanced with a cap of 0: %+v", got)
	}
	_, results = Elections(im, DefaultRules, ElectLeaders{Type: ElectPreferred, Partitions: []TopicPartition{{Topic: id, Partition: 9}}})
	if len(results) != 1 || !errors.Is(results[0].Error(), ErrUnknownPartition) {
		t.Fatalf("unknown partition: %+v", results)
	}
}
