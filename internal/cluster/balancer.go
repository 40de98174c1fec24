package cluster

import (
	"cmp"
	"fmt"
	"slices"
)

// The partition balancer (Redpanda's continuous balancing, Cruise
// Control's replica-count goal): when brokers hold uneven numbers of
// replicas — a broker joined, or one came back from a drain — the
// controller moves replicas, a few at a time through ordinary
// reassignments, until every broker holds within one of every other; then
// it evens out preferred leaders the same way. It waits while anything
// is moving or any partition is short of in-sync replicas (a node down or
// catching up is not an imbalance to act on), and it never targets a
// drained broker, a controller-only node or a fenced one.

// BalanceMovesPerRound bounds the reassignments one round starts: each
// copies a partition, so a few at a time keep the copying from crowding
// out clients (the next round waits until they are done).
const BalanceMovesPerRound = 4

// DrainBroker marks a broker drained (Drained) or not: a drained broker
// is no target of placement or of the balancer, so a drain's moves are
// not undone; the mark outlives restarts until cleared (metadata.version
// 2).
type DrainBroker struct {
	ID      NodeID
	Drained bool
}

func (r DrainBroker) apply(im *Image, _ int64) error {
	b, ok := im.brokers[r.ID]
	if !ok {
		return fmt.Errorf("%w: broker %d is not registered", ErrConflict, r.ID)
	}
	b.Drained = r.Drained
	im.brokers[r.ID] = b
	return nil
}

// PlanBalance returns the reassignments that take img toward even
// replica counts over the balancer's targets (LiveBrokers), then even
// preferred-leader counts, at most max of them; none while a
// reassignment is in progress or a partition's ISR is short.
func PlanBalance(img *Image, max int) []Reassignment {
	targets := LiveBrokers(img)
	// Below metadata.version 2 a drain cannot mark its node, and the
	// balancer would undo it.
	if len(targets) < 2 || img.FeatureLevel(MetadataVersion) < MetadataVersionRoles || !settled(img) {
		return nil
	}
	if moves := evenReplicas(img, targets, max); len(moves) > 0 {
		return moves
	}
	return evenLeaders(img, targets, max)
}

// settled reports whether no partition is moving or short of in-sync
// replicas.
func settled(img *Image) bool {
	ok := true
	img.EachPartition(func(_ TopicID, _ int32, reg PartitionReg) {
		ok = ok && !reg.Reassigning() && len(reg.ISR) == len(reg.Replicas)
	})
	return ok
}

// partitionsInOrder lists img's partitions by topic name, then id: the
// balancer decides the same way on every controller.
func partitionsInOrder(img *Image) []TopicPartition {
	var out []TopicPartition
	for _, t := range img.Topics() {
		for p := range t.Partitions {
			out = append(out, TopicPartition{Topic: t.ID, Partition: p})
		}
	}
	return out
}

// extremes returns the targets with the most and the fewest of count
// (ties: the highest id has the most, the lowest the fewest).
func extremes(targets []NodeID, count map[NodeID]int) (most, fewest NodeID) {
	most = slices.MaxFunc(targets, func(a, b NodeID) int { return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b)) })
	fewest = slices.MinFunc(targets, func(a, b NodeID) int { return cmp.Or(cmp.Compare(count[a], count[b]), cmp.Compare(a, b)) })
	return most, fewest
}

func evenReplicas(img *Image, targets []NodeID, max int) []Reassignment {
	count := map[NodeID]int{}
	for _, id := range targets {
		count[id] = 0
	}
	parts := partitionsInOrder(img)
	regs := make(map[TopicPartition]PartitionReg, len(parts))
	for _, tp := range parts {
		reg, _ := img.Partition(tp.Topic, tp.Partition)
		regs[tp] = reg
		for _, id := range reg.Replicas {
			if _, ok := count[id]; ok {
				count[id]++
			}
		}
	}
	var out []Reassignment
	moved := map[TopicPartition]bool{}
	for len(out) < max {
		_, to := extremes(targets, count)
		// The fullest broker first; if racks forbid each of its moves, the
		// next fullest, while it holds two more than to.
		from := slices.SortedFunc(slices.Values(targets), func(a, b NodeID) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(b, a)) })
		ok := false
		for _, f := range from {
			if count[f]-count[to] <= 1 {
				break
			}
			var tp TopicPartition
			var replicas []NodeID
			if tp, replicas, ok = pickMove(img, parts, regs, moved, f, to); ok {
				moved[tp] = true
				count[f]--
				count[to]++
				out = append(out, Reassignment{TopicPartition: tp, Replicas: replicas})
				break
			}
		}
		if !ok {
			break
		}
	}
	return out
}

// pickMove finds a partition with a replica on from and none on to whose
// racks would stay as spread, preferring one from does not lead, and
// returns its replicas with to in from's place.
func pickMove(img *Image, parts []TopicPartition, regs map[TopicPartition]PartitionReg, moved map[TopicPartition]bool, from, to NodeID) (TopicPartition, []NodeID, bool) {
	var fallback *TopicPartition
	for _, tp := range parts {
		reg := regs[tp]
		i := slices.Index(reg.Replicas, from)
		if moved[tp] || i < 0 || slices.Contains(reg.Replicas, to) {
			continue
		}
		next := slices.Clone(reg.Replicas)
		next[i] = to
		if rackCount(img, next) < rackCount(img, reg.Replicas) {
			continue
		}
		if reg.Leader != from {
			return tp, next, true
		}
		if fallback == nil {
			fallback = &tp
		}
	}
	if fallback == nil {
		return TopicPartition{}, nil, false
	}
	next := slices.Clone(regs[*fallback].Replicas)
	next[slices.Index(next, from)] = to
	return *fallback, next, true
}

// rackCount is how many racks replicas span (every rackless broker counts
// as one rack, "").
func rackCount(img *Image, replicas []NodeID) int {
	racks := map[string]bool{}
	for _, id := range replicas {
		b, _ := img.Broker(id)
		racks[b.Rack] = true
	}
	return len(racks)
}

// evenLeaders reorders replica lists so that each target is the
// preferred leader (the first replica) of about as many partitions as
// every other: a reorder completes at once and the controller then elects
// the new preferred leaders.
func evenLeaders(img *Image, targets []NodeID, max int) []Reassignment {
	count := map[NodeID]int{}
	for _, id := range targets {
		count[id] = 0
	}
	parts := partitionsInOrder(img)
	regs := make(map[TopicPartition]PartitionReg, len(parts))
	for _, tp := range parts {
		reg, _ := img.Partition(tp.Topic, tp.Partition)
		regs[tp] = reg
		if _, ok := count[reg.Replicas[0]]; ok {
			count[reg.Replicas[0]]++
		}
	}
	var out []Reassignment
	moved := map[TopicPartition]bool{}
	for len(out) < max {
		from, to := extremes(targets, count)
		if count[from]-count[to] <= 1 {
			break
		}
		found := false
		for _, tp := range parts {
			reg := regs[tp]
			j := slices.Index(reg.Replicas, to)
			if moved[tp] || reg.Replicas[0] != from || j < 0 || !slices.Contains(reg.ISR, to) {
				continue
			}
			next := slices.Clone(reg.Replicas)
			next[0], next[j] = next[j], next[0]
			moved[tp], found = true, true
			count[from]--
			count[to]++
			out = append(out, Reassignment{TopicPartition: tp, Replicas: next})
			break
		}
		if !found {
			break
		}
	}
	return out
}

// MarkDrained proposes marking broker id drained (or not) through st: a
// drained broker is no target of placement or of the partition balancer.
// The mark is metadata.version 2, refused while the cluster runs 1.
func MarkDrained(st Store, id NodeID, drained, validateOnly bool) error {
	img := st.Image()
	if _, ok := img.Broker(id); !ok {
		return fmt.Errorf("%w: broker %d is not registered", ErrInvalidRequest, id)
	}
	if lvl := img.FeatureLevel(MetadataVersion); lvl < MetadataVersionRoles {
		return fmt.Errorf("%w: marking a broker drained needs %s %d and the cluster runs %d: once every node runs this build, finalize it (strand cluster features --latest)",
			ErrUnsupportedFeature, MetadataVersion, MetadataVersionRoles, lvl)
	}
	if validateOnly {
		return nil
	}
	if _, err := st.Apply(DrainBroker{ID: id, Drained: drained}); err != nil {
		return fmt.Errorf("cluster: mark broker %d drained=%t: %w", id, drained, err)
	}
	return nil
}
