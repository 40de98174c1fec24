package cluster

import (
	"errors"
	"fmt"
	"slices"
)

// Leaders and in-sync replica sets change only here, on the controller,
// by Kafka's rules (REPLICATION.md §2.4, §2.5; change.go builds each
// change): a leader comes from the ISR, in replica order, or from the
// eligible leader replicas when the ISR is empty; and a leader's request
// to change its ISR (AlterPartition) is checked in Kafka's order before it
// becomes a PartitionChange.

// Errors of AlterPartition, as Kafka's codes.
var (
	ErrUnknownPartition     = errors.New("cluster: unknown topic or partition")
	ErrFencedLeaderEpoch    = errors.New("cluster: fenced leader epoch")
	ErrInvalidUpdateVersion = errors.New("cluster: invalid update version (partition epoch)")
	ErrIneligibleReplica    = errors.New("cluster: ineligible replica")
	ErrInvalidRequest       = errors.New("cluster: invalid request")
)

// UncleanLeaderElection is the topic config that lets a replica outside
// the ISR lead when no ISR member can (losing what only the ISR had).
const UncleanLeaderElection = "unclean.leader.election.enable"

// acceptable reports whether broker id may lead or join an ISR:
// registered, unfenced and not shutting down.
func acceptable(img *Image, id NodeID) bool {
	b, ok := img.Broker(id)
	return ok && !b.Fenced && !b.InControlledShutdown
}

// electLeader chooses a leader for reg with target ISR isr: the current
// leader if it is still in isr and acceptable, else the first acceptable
// replica, in replica order, that is in isr. NoLeader when there is none.
// (Reassignment's rule; every other decision goes through buildChange.)
func electLeader(img *Image, reg PartitionReg, isr []NodeID) NodeID {
	if reg.Leader != NoLeader && slices.Contains(isr, reg.Leader) && acceptable(img, reg.Leader) {
		return reg.Leader
	}
	for _, r := range reg.Replicas {
		if slices.Contains(isr, r) && acceptable(img, r) {
			return r
		}
	}
	return NoLeader
}

// uncleanAllowed reports whether the topic lets an out-of-sync replica
// lead.
func uncleanAllowed(img *Image, t TopicID) bool {
	top, ok := img.TopicByID(t)
	return ok && top.Configs[UncleanLeaderElection] == "true"
}

// without returns ids without id.
func without(ids []NodeID, id NodeID) []NodeID {
	return slices.DeleteFunc(slices.Clone(ids), func(x NodeID) bool { return x == id })
}

// changeFor builds the PartitionChange that gives reg the ISR isr and the
// leader the rules elect from it (out of the ISR and ELR only when the
// topic allows unclean election); ok is false when nothing changes.
func changeFor(img *Image, rules Rules, t TopicID, p int32, reg PartitionReg, isr []NodeID) (PartitionChange, bool) {
	return buildChange(img, rules, t, p, reg, changeSpec{isr: isr, crashed: NoLeader, unclean: uncleanAllowed(img, t)})
}

// LeaveISRs takes broker id out of every ISR and leadership it holds
// (fenced, shutting down, or replaced by a new process), electing new
// leaders from what remains. Leaving an ISR smaller than
// min.insync.replicas puts it in the ELR; without ELR the last member of
// an ISR stays in it, leaderless until it returns, since any other
// replica may lack acknowledged records.
func LeaveISRs(img *Image, rules Rules, id NodeID) []Record {
	var recs []Record
	gone := img.withFence(id, true)
	img.EachPartition(func(t TopicID, p int32, reg PartitionReg) {
		if !slices.Contains(reg.ISR, id) && reg.Leader != id {
			return
		}
		if ch, ok := changeFor(gone, rules, t, p, reg, without(reg.ISR, id)); ok {
			recs = append(recs, ch)
		}
	})
	return recs
}

// UncleanShutdownChanges takes broker id, back after an unclean shutdown, out of
// every ISR and ELR (Kafka's handleBrokerUncleanShutdown): its unflushed
// tail may be gone, so it must not lead before it has caught up again.
func UncleanShutdownChanges(img *Image, rules Rules, id NodeID) []Record {
	var recs []Record
	img.EachPartition(func(t TopicID, p int32, reg PartitionReg) {
		if !slices.Contains(reg.ISR, id) && !slices.Contains(reg.ELR, id) && reg.Leader != id {
			return
		}
		spec := changeSpec{isr: reg.ISR, crashed: id, unclean: uncleanAllowed(img, t)}
		if ch, ok := buildChange(img, rules, t, p, reg, spec); ok {
			recs = append(recs, ch)
		}
	})
	return recs
}

// ElectFor elects leaders for leaderless partitions now that broker id
// is back (Kafka's handleBrokerUnfenced tries every leaderless one).
func ElectFor(img *Image, rules Rules, id NodeID) []Record {
	var recs []Record
	back := img.withFence(id, false)
	img.EachPartition(func(t TopicID, p int32, reg PartitionReg) {
		if reg.Leader != NoLeader {
			return
		}
		if ch, ok := changeFor(back, rules, t, p, reg, reg.ISR); ok {
			recs = append(recs, ch)
		}
	})
	return recs
}

// UncleanElections elects leaders outside the ISR for the leaderless
// partitions of topics that allow it — turned on after the partition lost
// its last in-sync replica, as Kafka's controller does on its next check.
func UncleanElections(img *Image, rules Rules) []Record {
	var recs []Record
	img.EachPartition(func(t TopicID, p int32, reg PartitionReg) {
		if reg.Leader != NoLeader || !uncleanAllowed(img, t) {
			return
		}
		if ch, ok := changeFor(img, rules, t, p, reg, reg.ISR); ok {
			recs = append(recs, ch)
		}
	})
	return recs
}

// withFence is img as a decision about broker id's fencing sees it: id
// fenced (leaving: it can no longer lead) or unfenced (back: it can).
func (im *Image) withFence(id NodeID, fenced bool) *Image {
	b, ok := im.brokers[id]
	if !ok || b.Fenced == fenced && !b.InControlledShutdown {
		return im
	}
	next, _ := im.With()
	b.Fenced, b.InControlledShutdown = fenced, false
	next.brokers[id] = b
	return next
}

// AlterPartition is a partition leader's request to change its ISR.
type AlterPartition struct {
	Broker         NodeID // the leader asking
	BrokerEpoch    int64
	TopicID        TopicID
	PartitionID    int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []NodeID
	// ISREpochs, when set, is the broker epoch of each ISR member (in ISR
	// order) as its fetches carried it (KIP-903): a newcomer whose epoch
	// is not its registration's is a process that has since restarted —
	// perhaps without the tail it had fetched — and may not join.
	ISREpochs []int64 `json:",omitempty"`
}

// CheckAlterPartition validates a request in Kafka's order
// (ReplicationControlManager.validateAlterPartitionData) and returns the
// change it makes (the ISR, and the ELR that follows from it).
func CheckAlterPartition(img *Image, rules Rules, r AlterPartition) (PartitionChange, error) {
	b, ok := img.Broker(r.Broker)
	if !ok || b.Epoch != r.BrokerEpoch {
		return PartitionChange{}, fmt.Errorf("%w: node %d at epoch %d", ErrStaleBrokerEpoch, r.Broker, r.BrokerEpoch)
	}
	reg, ok := img.Partition(r.TopicID, r.PartitionID)
	switch {
	case !ok:
		return PartitionChange{}, fmt.Errorf("%w: %s-%d", ErrUnknownPartition, r.TopicID, r.PartitionID)
	case r.LeaderEpoch > reg.LeaderEpoch || r.PartitionEpoch > reg.PartitionEpoch:
		return PartitionChange{}, fmt.Errorf("%w: the request's epochs (%d, %d) are ahead of the controller's (%d, %d)",
			ErrNotController, r.LeaderEpoch, r.PartitionEpoch, reg.LeaderEpoch, reg.PartitionEpoch)
	case r.LeaderEpoch < reg.LeaderEpoch:
		return PartitionChange{}, fmt.Errorf("%w: %d, the partition is at %d", ErrFencedLeaderEpoch, r.LeaderEpoch, reg.LeaderEpoch)
	case r.Broker != reg.Leader:
		return PartitionChange{}, fmt.Errorf("%w: node %d does not lead the partition (node %d does)", ErrInvalidRequest, r.Broker, reg.Leader)
	case r.PartitionEpoch < reg.PartitionEpoch:
		return PartitionChange{}, fmt.Errorf("%w: %d, the partition is at %d", ErrInvalidUpdateVersion, r.PartitionEpoch, reg.PartitionEpoch)
	case !slices.Contains(r.ISR, r.Broker):
		return PartitionChange{}, fmt.Errorf("%w: the ISR %v leaves out its leader %d", ErrInvalidRequest, r.ISR, r.Broker)
	}
	for _, id := range r.ISR {
		if !slices.Contains(reg.Replicas, id) {
			return PartitionChange{}, fmt.Errorf("%w: ISR member %d is not a replica (%v)", ErrInvalidRequest, id, reg.Replicas)
		}
		if !slices.Contains(reg.ISR, id) && !acceptable(img, id) {
			return PartitionChange{}, fmt.Errorf("%w: node %d is fenced, shutting down or unregistered", ErrIneligibleReplica, id)
		}
	}
	for i, id := range r.ISR {
		b, _ := img.Broker(id)
		if i < len(r.ISREpochs) && r.ISREpochs[i] > 0 && !slices.Contains(reg.ISR, id) && r.ISREpochs[i] != b.Epoch {
			return PartitionChange{}, fmt.Errorf("%w: node %d fetched at broker epoch %d, it is registered at %d", ErrIneligibleReplica, id, r.ISREpochs[i], b.Epoch)
		}
	}
	// The requester keeps leading (it is in the new ISR): an ISR change
	// moves no leadership, even from a leader the controller is fencing.
	ch, _ := buildChange(img.withFence(r.Broker, false), rules, r.TopicID, r.PartitionID, reg, changeSpec{isr: slices.Clone(r.ISR), crashed: NoLeader})
	if ch.ISR == nil {
		ch.ISR = slices.Clone(r.ISR) // an unchanged ISR still bumps the partition epoch, as before
	}
	return ch, nil
}
