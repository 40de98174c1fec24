package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// NodeID is a broker's node id.
type NodeID = int32

// Sentinels of PartitionChange.Leader, as Kafka's.
const (
	NoLeader        NodeID = -1 // the partition has no leader
	LeaderUnchanged NodeID = -2 // the change keeps the leader
)

// Endpoint is one listener a broker registers.
type Endpoint struct {
	Name string // "CLIENT", "INTERNAL"
	Host string
	Port int32
}

// BrokerReg is a broker as the quorum knows it.
type BrokerReg struct {
	ID            NodeID
	IncarnationID string // new at every process start
	// Epoch is the raft index of the registration that created this
	// incarnation: requests carrying an older one are from a dead process.
	Epoch                int64
	Endpoints            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
	// Features are the feature levels the node's build supports
	// (features.go).
	Features map[string]FeatureRange `json:",omitempty"`
	// Roles are the node's roles (roles.go): nil for a broker and
	// controller both, as every node was before roles.
	Roles []string `json:",omitempty"`
	// Drained: the operator drained it (DrainBroker); no placement or
	// balancer target until cleared.
	Drained bool `json:",omitempty"`
}

// PartitionReg is one partition's placement and leadership.
type PartitionReg struct {
	Replicas       []NodeID // preferred order: Replicas[0] is the preferred leader
	ISR            []NodeID
	Leader         NodeID // NoLeader when none
	LeaderEpoch    int32  // bumps when the leader changes
	PartitionEpoch int32  // bumps on every change (the CAS of PartitionChange)
	// AddingReplicas and RemovingReplicas are a reassignment in progress
	// (both in Replicas): it completes once every adding replica is in
	// the ISR, leaving Replicas without the removing ones.
	AddingReplicas   []NodeID `json:",omitempty"`
	RemovingReplicas []NodeID `json:",omitempty"`
	// ELR are the eligible leader replicas (KIP-966): replicas that left
	// the ISR while it was smaller than min.insync.replicas — so the high
	// watermark, frozen since, is on them — and may lead cleanly when the
	// ISR is empty. Never overlaps the ISR. LastKnownELR is the partition's
	// last known leader, kept when the ISR emptied: it may lead again (an
	// unclean election, loudly logged) once no ISR or ELR member is left.
	ELR          []NodeID `json:",omitempty"`
	LastKnownELR []NodeID `json:",omitempty"`
}

func (r PartitionReg) clone() PartitionReg {
	r.Replicas, r.ISR = slices.Clone(r.Replicas), slices.Clone(r.ISR)
	r.AddingReplicas, r.RemovingReplicas = slices.Clone(r.AddingReplicas), slices.Clone(r.RemovingReplicas)
	r.ELR, r.LastKnownELR = slices.Clone(r.ELR), slices.Clone(r.LastKnownELR)
	return r
}

// Reassigning reports whether a reassignment is in progress.
func (r PartitionReg) Reassigning() bool {
	return len(r.AddingReplicas) > 0 || len(r.RemovingReplicas) > 0
}

// Broker returns broker id's registration.
func (im *Image) Broker(id NodeID) (BrokerReg, bool) {
	b, ok := im.brokers[id]
	return b, ok
}

// Brokers returns every registered broker, by id.
func (im *Image) Brokers() []BrokerReg {
	out := slices.Collect(maps.Values(im.brokers))
	slices.SortFunc(out, func(a, b BrokerReg) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Partition returns a partition's registration.
func (im *Image) Partition(topic TopicID, p int32) (PartitionReg, bool) {
	r, ok := im.partitions[topic][p]
	return r, ok
}

// RegisterBroker registers a broker process. A new incarnation gets the
// entry's index as its epoch and starts fenced; the same incarnation
// registering again amends its endpoints and rack and keeps both
// (Kafka's ClusterControlManager.registerBroker).
type RegisterBroker struct {
	ID            NodeID
	IncarnationID string
	Endpoints     []Endpoint
	Rack          string
	Features      map[string]FeatureRange `json:",omitempty"`
	// Roles: see BrokerReg.Roles; absent for the default, so a cluster
	// without roles writes what older nodes read.
	Roles []string `json:",omitempty"`
}

func (r RegisterBroker) apply(im *Image, index int64) error {
	if r.ID < 0 || r.IncarnationID == "" {
		return fmt.Errorf("%w: broker %d with incarnation %q", ErrConflict, r.ID, r.IncarnationID)
	}
	b, ok := im.brokers[r.ID]
	if !ok || b.IncarnationID != r.IncarnationID {
		b = BrokerReg{ID: r.ID, IncarnationID: r.IncarnationID, Epoch: index, Fenced: true, Drained: b.Drained}
	}
	b.Endpoints, b.Rack, b.Features, b.Roles = slices.Clone(r.Endpoints), r.Rack, maps.Clone(r.Features), slices.Clone(r.Roles)
	im.brokers[r.ID] = b
	return nil
}

// BrokerRegistrationChange fences or unfences a broker, or marks it in
// controlled shutdown; a stale epoch changes nothing.
type BrokerRegistrationChange struct {
	ID    NodeID
	Epoch int64
	// Fenced: -1 unfence, 0 unchanged, 1 fence.
	Fenced int8
	// InControlledShutdown: 0 unchanged, 1 set.
	InControlledShutdown int8
}

func (r BrokerRegistrationChange) apply(im *Image, _ int64) error {
	b, ok := im.brokers[r.ID]
	if !ok || b.Epoch != r.Epoch {
		return nil // a stale change: a no-op, as Kafka
	}
	switch r.Fenced {
	case -1:
		b.Fenced = false
	case 1:
		b.Fenced = true
	}
	if r.InControlledShutdown == 1 {
		b.InControlledShutdown = true
	}
	im.brokers[r.ID] = b
	return nil
}

// UnregisterBroker removes a broker whose epoch matches.
type UnregisterBroker struct {
	ID    NodeID
	Epoch int64
}

func (r UnregisterBroker) apply(im *Image, _ int64) error {
	if b, ok := im.brokers[r.ID]; ok && b.Epoch == r.Epoch {
		delete(im.brokers, r.ID)
	}
	return nil
}

// Partition registers a new partition of an existing topic, at leader and
// partition epoch 0.
type Partition struct {
	TopicID     TopicID
	PartitionID int32
	Replicas    []NodeID
	ISR         []NodeID
	Leader      NodeID
}

func (r Partition) apply(im *Image, _ int64) error {
	t, ok := im.TopicByID(r.TopicID)
	switch {
	case !ok:
		return fmt.Errorf("%w: no topic with id %s", ErrConflict, r.TopicID)
	case r.PartitionID < 0 || r.PartitionID >= t.Partitions:
		return fmt.Errorf("%w: topic %s has no partition %d", ErrConflict, t.Name, r.PartitionID)
	case len(r.Replicas) == 0:
		return fmt.Errorf("%w: %s-%d without replicas", ErrConflict, t.Name, r.PartitionID)
	}
	if _, exists := im.partitions[r.TopicID][r.PartitionID]; exists {
		return fmt.Errorf("%w: %s-%d is registered", ErrConflict, t.Name, r.PartitionID)
	}
	ps := maps.Clone(im.partitions[r.TopicID])
	if ps == nil {
		ps = map[int32]PartitionReg{}
	}
	ps[r.PartitionID] = PartitionReg{Replicas: slices.Clone(r.Replicas), ISR: slices.Clone(r.ISR), Leader: r.Leader}
	im.partitions[r.TopicID] = ps
	return nil
}

// PartitionChange changes a partition's ISR, leader or replicas, if its
// partition epoch is still the expected one (a compare-and-set, so two
// decisions from one view cannot both apply). The partition epoch always
// bumps; the leader epoch bumps when Leader is not LeaderUnchanged.
type PartitionChange struct {
	TopicID                TopicID
	PartitionID            int32
	ExpectedPartitionEpoch int32
	ISR                    []NodeID // nil: unchanged
	Replicas               []NodeID // nil: unchanged
	Leader                 NodeID   // LeaderUnchanged, NoLeader, or a node
	// Unclean: the leader was elected from outside the ISR
	// (unclean.leader.election.enable), which may lose records.
	Unclean bool `json:",omitempty"`
	// Reassignment, when set, replaces the adding and removing replicas
	// (both empty: none in progress).
	Reassignment *ReassignmentState `json:",omitempty"`
	// ELR, when set, replaces the eligible leader replicas and the last
	// known leader (absent in records from before KIP-966: unchanged).
	ELR *ELRState `json:",omitempty"`
}

// ELRState is a partition's eligible leader replicas and last known ELR.
type ELRState struct {
	ELR          []NodeID `json:",omitempty"`
	LastKnownELR []NodeID `json:",omitempty"`
}

// ReassignmentState is a partition's adding and removing replicas.
type ReassignmentState struct {
	Adding, Removing []NodeID
}

func (r PartitionChange) apply(im *Image, _ int64) error {
	cur, ok := im.partitions[r.TopicID][r.PartitionID]
	switch {
	case !ok:
		return fmt.Errorf("%w: partition %s-%d is not registered", ErrConflict, r.TopicID, r.PartitionID)
	case cur.PartitionEpoch != r.ExpectedPartitionEpoch:
		return fmt.Errorf("%w: partition %s-%d is at epoch %d, not %d", ErrConflict, r.TopicID, r.PartitionID, cur.PartitionEpoch, r.ExpectedPartitionEpoch)
	}
	next := cur.clone()
	if r.ISR != nil {
		next.ISR = slices.Clone(r.ISR)
	}
	if r.Replicas != nil {
		next.Replicas = slices.Clone(r.Replicas)
	}
	if r.Reassignment != nil {
		next.AddingReplicas, next.RemovingReplicas = nonEmpty(r.Reassignment.Adding), nonEmpty(r.Reassignment.Removing)
	}
	if r.ELR != nil {
		next.ELR, next.LastKnownELR = nonEmpty(r.ELR.ELR), nonEmpty(r.ELR.LastKnownELR)
	}
	if r.Replicas != nil { // a replica that left the partition is eligible for nothing
		next.ELR, next.LastKnownELR = onlyReplicas(next.ELR, next.Replicas), onlyReplicas(next.LastKnownELR, next.Replicas)
	}
	if r.Leader != LeaderUnchanged {
		next.Leader = r.Leader
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	ps := maps.Clone(im.partitions[r.TopicID])
	ps[r.PartitionID] = next
	im.partitions[r.TopicID] = ps
	return nil
}

// nonEmpty is ids, or nil when there are none (so an image compares and
// encodes the same whichever way it was reached).
func nonEmpty(ids []NodeID) []NodeID {
	if len(ids) == 0 {
		return nil
	}
	return slices.Clone(ids)
}

// onlyReplicas is ids without those not in replicas (nil when none is).
func onlyReplicas(ids, replicas []NodeID) []NodeID {
	return nonEmpty(slices.DeleteFunc(slices.Clone(ids), func(id NodeID) bool { return !slices.Contains(replicas, id) }))
}

// EachPartition calls fn for every registered partition, in topic id and
// partition order (decisions from it must not depend on map order).
func (im *Image) EachPartition(fn func(TopicID, int32, PartitionReg)) {
	ids := slices.Collect(maps.Keys(im.partitions))
	slices.SortFunc(ids, func(a, b TopicID) int { return cmp.Compare(a.Hex(), b.Hex()) })
	for _, id := range ids {
		ps := im.partitions[id]
		nums := slices.Sorted(maps.Keys(ps))
		for _, p := range nums {
			fn(id, p, ps[p])
		}
	}
}

// LeadsAny reports whether broker id leads a partition.
func (im *Image) LeadsAny(id NodeID) bool {
	for _, ps := range im.partitions {
		for _, r := range ps {
			if r.Leader == id {
				return true
			}
		}
	}
	return false
}
