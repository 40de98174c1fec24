package cluster

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
)

// Placement: which brokers a new topic's partitions go to (a cluster
// member's CreateTopics and CreatePartitions).

// LiveBrokers are the brokers partitions may be placed on: registered
// with the broker role (a controller-only node hosts nothing), unfenced,
// not shutting down and not drained (DrainBroker), by id. Placement, drain targets, reassignment
// targets and so coordinators (leaders of internal topics' partitions)
// all come from it.
func LiveBrokers(img *Image) []NodeID {
	var out []NodeID
	for _, br := range img.Brokers() {
		if br.IsBroker() && !br.Fenced && !br.InControlledShutdown && !br.Drained {
			out = append(out, br.ID)
		}
	}
	return out
}

// Place assigns n partitions rf replicas each over the live brokers,
// striped from a random start: partition i's replicas start at broker
// (start+i) of a list that takes the racks in turn (Kafka's rack-aware
// placement), so partitions, their leaders (the first replica) and their
// followers spread over the cluster, and a partition's replicas are on
// different racks while there are as many racks as replicas. Without
// racks the list is the brokers in id order (Kafka's placement without
// racks).
func Place(img *Image, n int32, rf int) ([][]NodeID, error) {
	live := LiveBrokers(img)
	switch {
	case len(live) == 0:
		return nil, errors.New("no live broker to place partitions on (brokers register and are unfenced once they reach the controller)")
	case rf > len(live):
		return nil, fmt.Errorf("replication factor %d is more than the %d live brokers (%v)", rf, len(live), live)
	}
	order, rackOf := rackAlternated(img, live)
	racks := len(slices.Compact(slices.Sorted(maps.Values(rackOf))))
	start := rand.IntN(len(order))
	out := make([][]NodeID, n)
	for i := range out {
		out[i] = pickReplicas(order, rackOf, (start+i)%len(order), rf, racks)
	}
	return out, nil
}

// rackAlternated orders brokers so that consecutive ones are on different
// racks where it can (racks by name, each rack's brokers by id, then one
// of each rack in turn), and returns each broker's rack.
func rackAlternated(img *Image, live []NodeID) ([]NodeID, map[NodeID]string) {
	rackOf := make(map[NodeID]string, len(live))
	byRack := map[string][]NodeID{}
	for _, id := range live { // live is in id order
		br, _ := img.Broker(id)
		rackOf[id] = br.Rack
		byRack[br.Rack] = append(byRack[br.Rack], id)
	}
	names := slices.Sorted(maps.Keys(byRack))
	order := make([]NodeID, 0, len(live))
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
func pickReplicas(order []NodeID, rackOf map[NodeID]string, from, rf, racks int) []NodeID {
	out := make([]NodeID, 0, rf)
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

// CheckAssignment checks a manual replica assignment of a topic's
// partitions: each partition has replicas, all the same number, no broker
// twice, every one a live broker.
func CheckAssignment(img *Image, a [][]NodeID) error {
	live := LiveBrokers(img)
	for i, replicas := range a {
		if len(replicas) == 0 {
			return fmt.Errorf("partition %d has no replicas", i)
		}
		if len(a[0]) != len(replicas) {
			return fmt.Errorf("partition %d has %d replicas, partition 0 has %d: every partition of a topic has the same replication factor", i, len(replicas), len(a[0]))
		}
		for j, r := range replicas {
			if slices.Contains(replicas[:j], r) {
				return fmt.Errorf("partition %d names broker %d twice", i, r)
			}
			if br, ok := img.Broker(r); ok && !br.IsBroker() {
				return fmt.Errorf("partition %d on node %d, which is controller-only (--roles controller) and hosts no partitions", i, r)
			}
			if !slices.Contains(live, r) {
				return fmt.Errorf("partition %d on broker %d, which is not a live broker (live: %v)", i, r, live)
			}
		}
	}
	return nil
}

// Beside is the placement of a topic that sits beside topic id's n
// partitions (a dead-letter topic: each partition on the replicas of the
// source partition it serves, so a quarantined record is written where it
// was refused). ok is false when a source partition is not registered or
// names a broker that is not live — the controller would refuse that
// assignment (the first dead letter may come right after a failover) —
// and then rf is how many replicas the topic can have on the live
// brokers, as many as the source has where they allow.
func Beside(img *Image, id TopicID, n int32) (a [][]NodeID, rf int, ok bool) {
	live := LiveBrokers(img)
	for i := range n {
		reg, found := img.Partition(id, i)
		if !found {
			return nil, 0, false
		}
		for _, r := range reg.Replicas {
			if !slices.Contains(live, r) {
				return nil, min(len(reg.Replicas), len(live)), false
			}
		}
		a = append(a, reg.Replicas)
	}
	return a, 0, true
}

// PartitionRecords register partitions first.. of topic id on the given
// replicas, each led by its first replica.
func PartitionRecords(id TopicID, first int32, replicas [][]NodeID) []Record {
	recs := make([]Record, len(replicas))
	for i, r := range replicas {
		recs[i] = Partition{TopicID: id, PartitionID: first + int32(i), Replicas: r, ISR: r, Leader: r[0]}
	}
	return recs
}
