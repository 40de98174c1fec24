package cluster

import (
	"slices"
	"strconv"
)

// Every partition change the controller decides — a broker fenced, shut
// down, back, or restarted after a crash; a leader's ISR change; an
// election — is built here, by Kafka's PartitionChangeBuilder rules
// (REPLICATION.md §2.5), including KIP-966's eligible leader replicas:
//
//   - The target ISR is given. While it is smaller than the partition's
//     min.insync.replicas, every replica leaving the ISR joins the ELR:
//     the leader's high watermark does not move while the ISR is that
//     small (replica.HighWatermark), so each of them holds every
//     acknowledged record. Once the ISR is back at min.insync.replicas the
//     ELR empties. The ISR and the ELR never overlap, and a replica that
//     restarted after an unclean shutdown (its unflushed tail may be gone)
//     leaves both.
//   - A leader is the current one if it stays eligible, else the first
//     acceptable replica, in replica order, in the ISR — or, when the ISR
//     is empty, in the ELR (a clean election: ISR = {it}, the rest stay in
//     the ELR). Failing that, the last known leader if it is the only one
//     recorded and acceptable; failing that, with unclean election
//     allowed, any acceptable replica. Both of the last are unclean:
//     ISR = {it}, the ELR cleared.
//   - With ELR on the ISR may become empty (its last member moves to the
//     ELR, and LastKnownELR records the leader it had); with ELR off the
//     last member stays in the ISR, leaderless, as before KIP-966.

// MinInsyncReplicas is the topic config that acks=all waits for and below
// which the high watermark stands still.
const MinInsyncReplicas = "min.insync.replicas"

// Rules are the controller's settings that partition changes follow.
type Rules struct {
	// ELR turns KIP-966's eligible leader replicas on (Kafka's
	// eligible.leader.replicas.version=1).
	ELR bool
	// DefaultMinISR is min.insync.replicas for topics that do not set it
	// (the brokers' default; Kafka's is 1).
	DefaultMinISR int
}

// DefaultRules are Strand's defaults: ELR on, min.insync.replicas 1.
var DefaultRules = Rules{ELR: true, DefaultMinISR: 1}

// minISR is the effective min.insync.replicas of topic t's partition reg:
// the topic's setting or the default, capped by the replica count as the
// high-watermark rule caps it.
func (r Rules) minISR(img *Image, t TopicID, reg PartitionReg) int {
	n := r.DefaultMinISR
	if top, ok := img.TopicByID(t); ok {
		if v, err := strconv.Atoi(top.Configs[MinInsyncReplicas]); err == nil && v > 0 {
			n = v
		}
	}
	return max(1, min(n, len(reg.Replicas)))
}

// changeSpec is what a decision asks of one partition.
type changeSpec struct {
	isr []NodeID // the target ISR
	// crashed, unless NoLeader, restarted after an unclean shutdown: it
	// leaves the ISR and the ELR and cannot lead.
	crashed NodeID
	// unclean lets a replica outside the ISR and ELR lead.
	unclean bool
}

// buildChange builds the PartitionChange that spec makes to partition p
// of topic t (reg) in img; ok is false when nothing changes.
func buildChange(img *Image, rules Rules, t TopicID, p int32, reg PartitionReg, spec changeSpec) (PartitionChange, bool) {
	ch := PartitionChange{TopicID: t, PartitionID: p, ExpectedPartitionEpoch: reg.PartitionEpoch, Leader: LeaderUnchanged}
	ok := func(id NodeID) bool { return id != NoLeader && id != spec.crashed && acceptable(img, id) }
	isr := slices.DeleteFunc(slices.Clone(spec.isr), func(id NodeID) bool { return id == spec.crashed })
	var elr []NodeID
	if rules.ELR && len(isr) < rules.minISR(img, t, reg) { // Kafka's maybePopulateTargetElr
		elr = inReplicaOrder(reg.Replicas, func(id NodeID) bool {
			return (slices.Contains(reg.ELR, id) || slices.Contains(reg.ISR, id)) && !slices.Contains(isr, id) && id != spec.crashed
		})
	}
	valid := func(id NodeID) bool {
		return ok(id) && (slices.Contains(isr, id) || len(isr) == 0 && slices.Contains(elr, id))
	}
	leader, unclean := NoLeader, false
	switch {
	case valid(reg.Leader):
		leader = reg.Leader
	case slices.ContainsFunc(reg.Replicas, valid):
		leader = reg.Replicas[slices.IndexFunc(reg.Replicas, valid)]
	case rules.ELR && len(isr) == 0 && len(elr) == 0 && len(reg.LastKnownELR) == 1 &&
		slices.Contains(reg.Replicas, reg.LastKnownELR[0]) && ok(reg.LastKnownELR[0]):
		leader, unclean = reg.LastKnownELR[0], true // as before KIP-966 when every replica was lost
	case spec.unclean && slices.ContainsFunc(reg.Replicas, ok):
		leader, unclean = reg.Replicas[slices.IndexFunc(reg.Replicas, ok)], true
	}
	if leader != reg.Leader {
		ch.Leader = leader
		switch {
		case unclean:
			isr, elr, ch.Unclean = []NodeID{leader}, nil, true
		case slices.Contains(elr, leader): // a clean election from the ELR
			isr, elr = []NodeID{leader}, without(elr, leader)
		}
	}
	if !unclean && len(isr) == 0 && !rules.ELR {
		isr = reg.ISR // without ELR the ISR never empties: its last member stays, leaderless
	}
	if !slices.Equal(isr, reg.ISR) {
		ch.ISR = append([]NodeID{}, isr...) // non-nil even when empty: an empty ISR is a change
	}
	var lastKnown []NodeID
	if rules.ELR {
		lastKnown = lastKnownLeader(reg, ch)
	}
	if !slices.Equal(elr, reg.ELR) || !slices.Equal(lastKnown, reg.LastKnownELR) {
		ch.ELR = &ELRState{ELR: nonEmpty(elr), LastKnownELR: nonEmpty(lastKnown)}
	}
	return ch, ch.Leader != LeaderUnchanged || ch.ISR != nil || ch.ELR != nil
}

// lastKnownLeader is the LastKnownELR after ch: the leader the partition
// had when its ISR emptied, kept while it stays leaderless and cleared
// once it has a leader again (Kafka's maybeUpdateLastKnownLeader).
func lastKnownLeader(reg PartitionReg, ch PartitionChange) []NodeID {
	switch {
	case ch.ISR != nil && len(ch.ISR) == 0:
		last := reg.Leader
		if last == NoLeader && len(reg.ISR) == 1 { // leaderless already: its last ISR member
			last = reg.ISR[0]
		}
		if last == NoLeader {
			return reg.LastKnownELR
		}
		return []NodeID{last}
	case ch.Leader >= 0 || reg.Leader != NoLeader && ch.Leader != NoLeader:
		return nil // it has a leader
	}
	return reg.LastKnownELR
}

// inReplicaOrder returns the replicas keep accepts, in replica order (so
// a decision never depends on map or set order).
func inReplicaOrder(replicas []NodeID, keep func(NodeID) bool) []NodeID {
	var out []NodeID
	for _, id := range replicas {
		if keep(id) {
			out = append(out, id)
		}
	}
	return out
}

// ClearELROnMinISRChange clears the ELR of every partition of a topic
// whose min.insync.replicas recs change (as Kafka does): the
// guarantee that ELR members hold the high watermark rests on the old
// value — lowered, the high watermark moves again without them.
func ClearELROnMinISRChange(img *Image, recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		put, ok := r.(PutTopic)
		if !ok {
			continue
		}
		cur, ok := img.Topic(put.Topic.Name)
		if !ok || cur.ID != put.Topic.ID || cur.Configs[MinInsyncReplicas] == put.Topic.Configs[MinInsyncReplicas] {
			continue
		}
		img.EachPartition(func(t TopicID, p int32, reg PartitionReg) {
			if t == cur.ID && len(reg.ELR) > 0 { // the last known leader stays: it vouches for nothing
				out = append(out, PartitionChange{TopicID: t, PartitionID: p, ExpectedPartitionEpoch: reg.PartitionEpoch,
					Leader: LeaderUnchanged, ELR: &ELRState{LastKnownELR: reg.LastKnownELR}})
			}
		})
	}
	return out
}
