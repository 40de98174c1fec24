package cluster

import (
	"slices"
	"testing"
)

// balanceImage is rackImage with topic t of len(assign) partitions on
// the given replicas, every replica in sync, each led by its first.
func balanceImage(t *testing.T, racks []string, assign [][]NodeID) *Image {
	t.Helper()
	im := rackImage(t, racks...)
	id := NewTopicID()
	recs := []Record{PutTopic{Topic: Topic{Name: "t", ID: id, Partitions: int32(len(assign))}}}
	for p, r := range assign {
		recs = append(recs, Partition{TopicID: id, PartitionID: int32(p), Replicas: r, ISR: slices.Clone(r), Leader: r[0]})
	}
	im, err := im.With(recs...)
	if err != nil {
		t.Fatal(err)
	}
	im.features = map[string]int16{MetadataVersion: MetadataVersionRoles} // the balancer's level
	return im
}

// settle applies a balancer round and lets every new replica catch up,
// as the followers and the controller's tick would.
func settle(t *testing.T, im *Image, plan []Reassignment) *Image {
	t.Helper()
	recs, results := Reassignments(im, AlterReassignments{Parts: plan})
	for _, r := range results {
		if r.Code != "" {
			t.Fatalf("balancer move refused: %+v", r)
		}
	}
	im, err := im.With(recs...)
	if err != nil {
		t.Fatal(err)
	}
	var done []Record
	im.EachPartition(func(tid TopicID, p int32, reg PartitionReg) {
		if !reg.Reassigning() {
			return
		}
		reg.ISR = slices.Clone(reg.Replicas) // caught up
		if ch, ok := CompleteReassignment(im, reg); ok {
			ch.TopicID, ch.PartitionID = tid, p
			ch.ExpectedPartitionEpoch = reg.PartitionEpoch
			done = append(done, PartitionChange{TopicID: tid, PartitionID: p, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged, ISR: reg.ISR})
			done = append(done, ch)
		}
	})
	for _, r := range done {
		ch := r.(PartitionChange)
		cur, _ := im.Partition(ch.TopicID, ch.PartitionID)
		ch.ExpectedPartitionEpoch = cur.PartitionEpoch
		if im, err = im.With(ch); err != nil {
			t.Fatal(err)
		}
	}
	// Leadership follows the preferred replica, as the balancer's
	// election does.
	var elect []Record
	im.EachPartition(func(tid TopicID, p int32, reg PartitionReg) {
		if reg.Leader != reg.Replicas[0] {
			elect = append(elect, PartitionChange{TopicID: tid, PartitionID: p, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: reg.Replicas[0]})
		}
	})
	if im, err = im.With(elect...); err != nil {
		t.Fatal(err)
	}
	return im
}

func counts(im *Image) (replicas, leaders map[NodeID]int) {
	replicas, leaders = map[NodeID]int{}, map[NodeID]int{}
	im.EachPartition(func(_ TopicID, _ int32, reg PartitionReg) {
		for _, id := range reg.Replicas {
			replicas[id]++
		}
		leaders[reg.Leader]++
	})
	return replicas, leaders
}

func spread(m map[NodeID]int, ids []NodeID) int {
	lo, hi := m[ids[0]], m[ids[0]]
	for _, id := range ids {
		lo, hi = min(lo, m[id]), max(hi, m[id])
	}
	return hi - lo
}

// TestBalancerFillsANewBroker: a fourth broker joining three that hold
// every replica of 12 partitions gets replicas and leaders until every
// broker holds within one of every other, a few moves per round, and
// the balancer then stops.
func TestBalancerFillsANewBroker(t *testing.T) {
	var assign [][]NodeID
	for p := range 12 {
		assign = append(assign, []NodeID{NodeID(p%3 + 1), NodeID((p+1)%3 + 1), NodeID((p+2)%3 + 1)})
	}
	im := balanceImage(t, []string{"", "", "", ""}, assign)
	rounds := 0
	for plan := PlanBalance(im, BalanceMovesPerRound); len(plan) > 0; plan = PlanBalance(im, BalanceMovesPerRound) {
		if len(plan) > BalanceMovesPerRound {
			t.Fatalf("a round of %d moves, the bound is %d", len(plan), BalanceMovesPerRound)
		}
		if rounds++; rounds > 50 {
			t.Fatalf("the balancer did not settle in 50 rounds: %v", plan)
		}
		im = settle(t, im, plan)
	}
	replicas, leaders := counts(im)
	all := []NodeID{1, 2, 3, 4}
	if spread(replicas, all) > 1 || spread(leaders, all) > 1 {
		t.Fatalf("after %d rounds: replicas %v, leaders %v; want each within one of the others", rounds, replicas, leaders)
	}
	if replicas[4] != 9 {
		t.Fatalf("broker 4 holds %d of 36 replicas, want 9", replicas[4])
	}
	t.Logf("%d rounds: replicas %v, leaders %v", rounds, replicas, leaders)
}

// TestBalancerLeavesDrainedAndUnsettledAlone: a drained broker is no
// target, and nothing moves while a partition is short of in-sync
// replicas.
func TestBalancerLeavesDrainedAndUnsettledAlone(t *testing.T) {
	assign := [][]NodeID{{1, 2}, {2, 3}, {3, 1}, {1, 2}}
	im := balanceImage(t, []string{"", "", "", ""}, assign)
	drained, err := im.With(DrainBroker{ID: 4, Drained: true})
	if err != nil {
		t.Fatal(err)
	}
	if plan := PlanBalance(drained, 10); len(plan) != 0 {
		t.Fatalf("the balancer moved onto a drained broker: %v", plan)
	}
	if plan := PlanBalance(im, 10); len(plan) == 0 {
		t.Fatal("broker 4 holds nothing and is not drained, but the balancer planned nothing")
	}
	old := *im
	old.features = nil
	if plan := PlanBalance(&old, 10); len(plan) != 0 {
		t.Fatalf("the balancer moved at metadata.version 1, where a drain cannot mark its node: %v", plan)
	}
	tp := partitionsInOrder(im)[0]
	reg, _ := im.Partition(tp.Topic, tp.Partition)
	short, err := im.With(PartitionChange{TopicID: tp.Topic, PartitionID: tp.Partition, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged, ISR: reg.Replicas[:1]})
	if err != nil {
		t.Fatal(err)
	}
	if plan := PlanBalance(short, 10); len(plan) != 0 {
		t.Fatalf("the balancer moved while a partition's ISR was short: %v", plan)
	}
}

// TestBalancerKeepsRacksApart: a move never puts two replicas of a
// partition in one rack when they were apart.
func TestBalancerKeepsRacksApart(t *testing.T) {
	// Racks: 1 a, 2 b, 3 c, 4 a. Broker 4 may take 1's replicas only.
	assign := [][]NodeID{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	im := balanceImage(t, []string{"a", "b", "c", "a"}, assign)
	for rounds := 0; rounds < 20; rounds++ {
		plan := PlanBalance(im, BalanceMovesPerRound)
		if len(plan) == 0 {
			break
		}
		for _, r := range plan {
			if rackCount(im, r.Replicas) < 3 {
				t.Fatalf("move %v puts two replicas in one rack", r)
			}
		}
		im = settle(t, im, plan)
	}
	replicas, _ := counts(im)
	if replicas[4] == 0 || replicas[1]+replicas[4] != 6 {
		t.Fatalf("rack a's replicas should be shared by brokers 1 and 4: %v", replicas)
	}
}
