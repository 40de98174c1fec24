package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/cluster/quorum"
	"github.com/strandmq/strand/internal/producer"
)

// A broker in a cluster is a member of it (REPLICATION.md §3): it
// registers each process as a new incarnation, heartbeats the controller,
// and serves partitions only while the controller has it unfenced. A
// broker that loses the controller for a session fences itself — it
// cannot prove it still leads anything — so a node cut off from the
// quorum answers NOT_LEADER_OR_FOLLOWER rather than take writes the
// cluster has given to no one.

// Member is a metadata store with a controller to register with and
// heartbeat (quorum.RaftStore). A broker whose Config.Metadata is one
// runs as a member of a cluster.
type Member interface {
	cluster.Store
	Register(r cluster.Registration, timeout time.Duration) (int64, error)
	SendHeartbeat(hb cluster.Heartbeat, timeout time.Duration) (cluster.HeartbeatReply, error)
	AppliedIndex() uint64
	Leader() (id int32, addr string, ok bool)
	QuorumStatus() (quorum.QuorumStatus, bool)
	State() quorum.RaftState
	ChangeVoter(v quorum.VoterChange, timeout time.Duration) error
	SyncWithController(timeout time.Duration) error
	AlterPartition(r cluster.AlterPartition, timeout time.Duration) (cluster.PartitionReg, error)
	ElectLeaders(r cluster.ElectLeaders, timeout time.Duration) ([]cluster.PartitionResult, error)
	AlterReassignments(r cluster.AlterReassignments, timeout time.Duration) ([]cluster.PartitionResult, error)
}

// ControllerEndpoint returns the internal listener (host:port) of the
// node leading the metadata quorum, for requests forwarded to it.
func (b *Broker) ControllerEndpoint() (NodeID, string, error) {
	if !b.clustered() {
		return -1, "", ErrNoQuorum
	}
	id, _, ok := b.member.m.Leader()
	if !ok {
		return -1, "", fmt.Errorf("%w: no controller elected", cluster.ErrNotController)
	}
	br, ok := b.meta.Image().Broker(id)
	if ok {
		for _, ep := range br.Endpoints {
			if ep.Name == "INTERNAL" {
				return NodeID(id), net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
			}
		}
	}
	return NodeID(id), "", fmt.Errorf("%w: controller %d has not registered an internal listener", cluster.ErrNotController, id)
}

// SyncWithController returns once this member's metadata holds what the
// controller has applied (after a change forwarded to it).
func (b *Broker) SyncWithController(timeout time.Duration) error {
	if !b.clustered() {
		return nil
	}
	if err := b.member.m.SyncWithController(timeout); err != nil {
		return err
	}
	// The registry follows the image on the reconciler's goroutine; bring
	// it up to date here, so this node's answers show the change.
	b.admin.Lock()
	defer b.admin.Unlock()
	b.syncLocked(b.meta.Image())
	return nil
}

// IsController reports whether this node leads the metadata quorum (a
// single node always does).
func (b *Broker) IsController() bool { return b.ControllerID() == b.cfg.NodeID }

// ErrNoQuorum: the request needs a metadata quorum and this node is a
// single node, its own cluster.
var ErrNoQuorum = errors.New("broker: a single node has no metadata quorum")

// ChangeVoter adds a voter to the cluster's metadata quorum, or removes
// one, through the controller.
func (b *Broker) ChangeVoter(v quorum.VoterChange) error {
	if !b.clustered() {
		return ErrNoQuorum
	}
	return b.member.m.ChangeVoter(v, 30*time.Second)
}

// QuorumStatus describes the metadata quorum; ok is false unless this
// node is a cluster member leading it.
func (b *Broker) QuorumStatus() (quorum.QuorumStatus, bool) {
	if !b.clustered() {
		return quorum.QuorumStatus{}, false
	}
	return b.member.m.QuorumStatus()
}

// RaftState is this member's raft state; ok is false on a single node.
func (b *Broker) RaftState() (quorum.RaftState, bool) {
	if !b.clustered() {
		return quorum.RaftState{}, false
	}
	return b.member.m.State(), true
}

// Clustered reports whether the broker is a member of a cluster.
func (b *Broker) Clustered() bool { return b.clustered() }

// Heartbeat timings (Kafka's broker.heartbeat.interval.ms and, on the
// controller, broker.session.timeout.ms).
const (
	DefaultHeartbeatInterval = time.Second
	DefaultSessionTimeout    = 9 * time.Second
	// DefaultReplicaLagTime is Kafka's replica.lag.time.max.ms.
	DefaultReplicaLagTime = 30 * time.Second
)

type membership struct {
	// ids is this member's current block of cluster-unique producer ids.
	ids struct {
		sync.Mutex
		next, limit producer.ID
	}
	m           Member
	incarnation string
	// previousEpoch is the broker epoch of this node's last clean
	// shutdown, cluster.UncleanShutdown if it had none.
	previousEpoch int64
	epoch         atomic.Int64
	// unfenced holds since when the controller last said so: the broker
	// serves only while that is within a session.
	lastUnfenced atomic.Int64 // unix nanos; 0: fenced
	shutdown     atomic.Bool  // Close asked for a controlled shutdown
	stopped      chan struct{}
}

// clustered reports whether this broker is a member of a cluster.
func (b *Broker) clustered() bool { return b.member != nil }

// fenced reports whether this member may not serve partitions: the
// controller has not unfenced it within the last session.
func (b *Broker) fenced() bool {
	if b.member == nil {
		return false
	}
	last := b.member.lastUnfenced.Load()
	return last == 0 || time.Since(time.Unix(0, last)) > b.cfg.SessionTimeout
}

// Fenced reports whether the broker is a fenced cluster member (health
// checks, metrics).
func (b *Broker) Fenced() bool { return b.fenced() }

// runMembership registers this process and heartbeats until Close; on
// Close it asks for a controlled shutdown first (heartbeat WantShutdown
// until the controller has moved leadership away, at most a session).
func (b *Broker) runMembership() {
	ms := b.member
	defer close(ms.stopped)
	registered := ms.epoch.Load() > 0
	metaChecked := false // meta.properties holds the cluster id
	var warned time.Time
	for {
		select {
		case <-b.stop:
			if registered {
				b.controlledShutdown()
			}
			return
		default:
		}
		var err error
		if id := ms.m.Image().ClusterID(); id != "" && !metaChecked {
			if err := b.checkNodeMeta(id); err != nil {
				ms.lastUnfenced.Store(0)
				b.logger.Error("broker: serving nothing", "err", err)
				<-b.stop
				return
			}
			metaChecked = true
		}
		if !registered {
			if err = b.register(b.cfg.HeartbeatInterval * 3); err == nil {
				registered = true
			}
		} else {
			var r cluster.HeartbeatReply
			r, err = ms.m.SendHeartbeat(b.heartbeat(false), b.cfg.HeartbeatInterval*3)
			switch {
			case errors.Is(err, cluster.ErrStaleBrokerEpoch):
				registered = false // replaced (or the quorum lost us): a new registration
				ms.lastUnfenced.Store(0)
			case err == nil && !r.Fenced:
				if ms.lastUnfenced.Swap(time.Now().UnixNano()) == 0 {
					b.logger.Info("broker: unfenced: serving partitions", "node", b.cfg.NodeID)
				}
			case err == nil:
				ms.lastUnfenced.Store(0)
			}
		}
		if err != nil && time.Since(warned) > 10*time.Second {
			warned = time.Now()
			b.logger.Warn("broker: cannot reach the cluster's controller; serving no partitions until it answers", "node", b.cfg.NodeID, "err", err)
		}
		select {
		case <-b.stop:
		case <-time.After(b.cfg.HeartbeatInterval):
		}
	}
}

// register registers this process as a new incarnation of its node.
func (b *Broker) register(timeout time.Duration) error {
	ms := b.member
	reg := cluster.Registration{ID: cluster.NodeID(b.cfg.NodeID), IncarnationID: ms.incarnation, Endpoints: b.cfg.Endpoints, Rack: b.cfg.Rack,
		Features: cluster.SupportedFeatures(), PreviousBrokerEpoch: ms.previousEpoch, Roles: b.cfg.Roles}
	epoch, err := ms.m.Register(reg, timeout)
	if err != nil {
		return err
	}
	ms.epoch.Store(epoch)
	b.logger.Info("broker: registered with the controller", "node", b.cfg.NodeID, "broker_epoch", epoch)
	return nil
}

func (b *Broker) heartbeat(wantShutdown bool) cluster.Heartbeat {
	return cluster.Heartbeat{ID: cluster.NodeID(b.cfg.NodeID), Epoch: b.member.epoch.Load(), AppliedIndex: b.member.m.AppliedIndex(), WantShutdown: wantShutdown}
}

// controlledShutdown hands this broker's leadership back to the
// controller before the process stops, so clients move on at once
// instead of after a session timeout.
func (b *Broker) controlledShutdown() {
	deadline := time.Now().Add(b.cfg.SessionTimeout)
	unreachable := 0
	for time.Now().Before(deadline) {
		r, err := b.member.m.SendHeartbeat(b.heartbeat(true), min(time.Until(deadline), 2*b.cfg.HeartbeatInterval))
		if err == nil && r.ShouldShutdown {
			b.logger.Info("broker: controlled shutdown: leadership handed back", "node", b.cfg.NodeID)
			return
		}
		// No controller twice running: the quorum is going down too (the
		// whole cluster stopping), and nobody is there to take over.
		if unreachable++; err == nil || !errors.Is(err, cluster.ErrNotController) {
			unreachable = 0
		} else if unreachable >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.logger.Warn("broker: controlled shutdown gave up; the controller will fence this node after its session", "node", b.cfg.NodeID)
}

// errFenced is notLeader's error on a fenced member.
func (b *Broker) errFenced() error {
	return fmt.Errorf("%w: node %d is fenced (no recent word from the cluster's controller)", ErrNotLeader, b.cfg.NodeID)
}

// nextProducerID hands out an id from this member's block, reserving the
// next block through the controller when it is used up (Kafka's
// AllocateProducerIds), so no two brokers give one id to two producers.
func (ms *membership) nextProducerID(b *Broker) (producer.ID, error) {
	ms.ids.Lock()
	defer ms.ids.Unlock()
	for ms.ids.next >= ms.ids.limit {
		first := ms.m.Image().NextProducerID()
		_, err := ms.m.Apply(cluster.ProducerIDBlock{Broker: cluster.NodeID(b.cfg.NodeID), First: first, Count: producer.IDBlock})
		switch {
		case err == nil:
			ms.ids.next, ms.ids.limit = producer.ID(first), producer.ID(first+producer.IDBlock)
		case errors.Is(err, cluster.ErrConflict):
			// another broker took that block; the image now shows the next
		default:
			return producer.NoID, fmt.Errorf("broker: reserving producer ids: %w", err)
		}
	}
	id := ms.ids.next
	ms.ids.next++
	return id, nil
}
