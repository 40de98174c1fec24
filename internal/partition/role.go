package partition

import (
	"fmt"
	"slices"

	"github.com/strandmq/strand/internal/record"
)

// Role is what this node does for a partition.
type Role int8

const (
	// RoleLeader takes produces and serves consumers.
	RoleLeader Role = iota
	// RoleFollower copies its leader's log (AppendAsFollower) and answers
	// clients NOT_LEADER_OR_FOLLOWER.
	RoleFollower
)

func (r Role) String() string {
	if r == RoleFollower {
		return "follower"
	}
	return "leader"
}

// replicaState is a partition's place in the cluster, replaced whole (an
// atomic pointer) so readers see one consistent version: the single source
// of truth for its leader epoch.
type replicaState struct {
	role     Role
	epoch    record.Epoch
	leader   NodeID
	replicas []NodeID
	isr      []NodeID
	// partitionEpoch is the registration's (bumped by every change); -1
	// for a single node's partition, which has none.
	partitionEpoch int32
	// replaced is closed when a newer state takes this one's place: a
	// produce parked for the high watermark learns that leadership moved.
	replaced chan struct{}
}

// soloState is a partition on a single node: its own leader, replica set
// and ISR, at epoch 0.
func soloState(self NodeID) *replicaState {
	return &replicaState{role: RoleLeader, epoch: 0, leader: self, replicas: []NodeID{self}, isr: []NodeID{self},
		partitionEpoch: -1, replaced: make(chan struct{})}
}

// unplacedState is a cluster member's partition before its registration
// applies: it serves nothing.
func unplacedState() *replicaState {
	return &replicaState{role: RoleFollower, epoch: record.NoEpoch, leader: -1, partitionEpoch: -1, replaced: make(chan struct{})}
}

func (p *Partition) state() *replicaState { return p.replica.Load() }

// setState installs s and wakes whoever waits on the state it replaces.
// p.mu must be held.
func (p *Partition) setState(s *replicaState) {
	s.replaced = make(chan struct{})
	old := p.replica.Swap(s)
	if old != nil {
		close(old.replaced)
	}
}

// Role returns whether this node leads the partition or follows.
func (p *Partition) Role() Role { return p.state().role }

// Leader returns the node that leads the partition.
func (p *Partition) Leader() NodeID { return p.state().leader }

// Replicas returns the replica set.
func (p *Partition) Replicas() []NodeID { return slices.Clone(p.state().replicas) }

// ISR returns the in-sync replicas.
func (p *Partition) ISR() []NodeID { return slices.Clone(p.state().isr) }

// LeaderEpoch returns the current leader epoch.
func (p *Partition) LeaderEpoch() record.Epoch { return p.state().epoch }

// BecomeLeader makes this node the partition's leader at epoch, with the
// given replicas and ISR: later appends are stamped with epoch, and the
// epoch cache records where it starts (Kafka's election-time entry). An
// epoch below the current one is refused (a stale decision).
func (p *Partition) BecomeLeader(epoch record.Epoch, replicas, isr []NodeID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.state(); epoch < cur.epoch {
		return fmt.Errorf("%w: %s-%d: leader epoch %d is older than the current %d", ErrFencedLeaderEpoch, p.topic, p.id, epoch, cur.epoch)
	}
	if err := p.log.AssignEpoch(epoch); err != nil {
		return storageError(p, err)
	}
	s := &replicaState{role: RoleLeader, epoch: epoch, leader: p.node.ID, replicas: slices.Clone(replicas), isr: slices.Clone(isr)}
	if p.node.Clustered {
		p.lead.Store(newLeaderState(p, s))
	}
	p.setState(s)
	return nil
}

// BecomeFollower makes this node a follower of leader at epoch: produces
// and consumer fetches are refused with ErrNotLeader from then on.
func (p *Partition) BecomeFollower(epoch record.Epoch, leader NodeID, replicas, isr []NodeID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur := p.state(); epoch < cur.epoch {
		return fmt.Errorf("%w: %s-%d: leader epoch %d is older than the current %d", ErrFencedLeaderEpoch, p.topic, p.id, epoch, cur.epoch)
	}
	p.lead.Store(nil)
	p.setState(&replicaState{role: RoleFollower, epoch: epoch, leader: leader,
		replicas: slices.Clone(replicas), isr: slices.Clone(isr)})
	return nil
}

// CheckLeader returns ErrNotLeader (or the fencing error) unless this node
// leads the partition: requests only a leader answers call it.
func (p *Partition) CheckLeader() error { return p.notLeader() }

// notLeader is the error of a client request a follower must not serve.
func (p *Partition) notLeader() error {
	if err := p.node.Host.Fenced(); err != nil {
		return err
	}
	if s := p.state(); s.role != RoleLeader {
		return fmt.Errorf("%w: %s-%d is led by node %d (epoch %d)", ErrNotLeader, p.topic, p.id, s.leader, s.epoch)
	}
	return nil
}

// RoleAndLeader returns the partition's role and leader, read together.
func (p *Partition) RoleAndLeader() (Role, NodeID) {
	s := p.state()
	return s.role, s.leader
}

// SetPartitionEpoch records the registration a role change came from.
func (p *Partition) SetPartitionEpoch(e int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.state()
	s.replicas, s.isr = slices.Clone(s.replicas), slices.Clone(s.isr)
	s.partitionEpoch = e
	p.setState(&s)
}

// State is a partition's place in the cluster at one moment.
type State struct {
	Role   Role
	Epoch  record.Epoch
	Leader NodeID
	// PartitionEpoch is the registration's; -1 on a single node.
	PartitionEpoch int32
}

// State returns the partition's role, leader and epochs, read together.
func (p *Partition) State() State {
	s := p.state()
	return State{Role: s.role, Epoch: s.epoch, Leader: s.leader, PartitionEpoch: s.partitionEpoch}
}

// StepDown makes the partition leaderless on this node before it is
// removed (a reassignment took it away): parked acks=all produces fail
// NOT_LEADER_OR_FOLLOWER now, not at their timeout.
func (p *Partition) StepDown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.state()
	s.role, s.leader = RoleFollower, -1
	p.setState(&s)
	p.lead.Store(nil)
}
