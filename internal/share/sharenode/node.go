package sharenode

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/wire"
)

// Broker is what the node offers its share groups (package broker
// implements it).
type Broker interface {
	// Topics lists the topics by name.
	Topics() map[string]share.TopicInfo
	// Partition returns a partition this node holds, by topic id (by name
	// when the id is zero); partition.ErrUnknownTopicOrPartition if none.
	Partition(topic string, id [16]byte, p int32) (*partition.Partition, error)
	// Leader returns topic's partition count and the leader of its
	// partition pick(count) (-1 if it has none);
	// partition.ErrUnknownTopicOrPartition if the topic does not exist.
	Leader(topic string, pick func(partitions int32) int32) (p, leader int32, err error)
	// Led returns the partitions of topic this node leads, by index.
	Led(topic string) map[int32]*partition.Partition
	// Store is an internal topic's partition as a coordinator's log.
	Store(p *partition.Partition) *coordlog.Store
	// CreateInternalTopic creates a compacted internal topic as
	// __consumer_offsets is created (retention off, validation off),
	// with these partitions, replication factor (0: the node's default)
	// and configs over those; nil if it exists already.
	CreateInternalTopic(name string, partitions int32, rf int16, configs map[string]string) error
	// ProduceDeadLetters appends recs to partition p of the dead-letter
	// topic, creating it for the source topic src (its partition count,
	// its replicas) when it is missing, and returns once they are durable.
	ProduceDeadLetters(ctx context.Context, topic, src string, p int32, recs []record.Record) error
}

// Config is a node's share hosting.
type Config struct {
	Broker Broker
	NodeID int32
	Now    func() time.Time
	Logger *slog.Logger
	// Clustered: the node is a cluster member; the fields below are used
	// only then.
	Clustered bool
	// Peers reach the share coordinators on other nodes.
	Peers wire.Peers
	// StatePartitions is __share_group_state's partition count on a
	// cluster (__consumer_offsets').
	StatePartitions int32
	// Meta is the cluster's metadata: its live brokers (the state topic's
	// replication factor is at most that) and the groups' configs.
	Meta cluster.Store
	// Stop closes when the node stops (it ends retries and loads).
	Stop <-chan struct{}
}

// Node is share groups on this node.
type Node struct {
	Coordinator *share.Coordinator
	Manager     *share.Manager
	Sessions    *share.Sessions

	cfg Config
	// states are a cluster member's share coordinators, one per
	// __share_group_state partition it leads; nil on a single node.
	states *coordlog.Shards[*partition.Partition, *share.StateShard]
}

// Sentinel errors of coordinator routing; package broker re-exports them
// (the wire layer maps them to NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS
// and COORDINATOR_NOT_AVAILABLE).
var (
	ErrNotCoordinator          = coordlog.ErrNotCoordinator
	ErrCoordinatorLoading      = coordlog.ErrCoordinatorLoading
	ErrCoordinatorNotAvailable = coordlog.ErrCoordinatorNotAvailable
)

// stateMaxBatch bounds one __share_group_state record: a snapshot of a
// window of 2,000 offsets in the worst case of one run each.
const stateMaxBatch = 16 << 20

// New starts a node's share coordinator and manager. On a single node they
// replay __share_group_state first; the topic is created on the first
// write, so a node whose clients never use share groups lists no new
// topic. On a cluster, share coordinators start as Sync finds this node
// leading __share_group_state partitions.
func New(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{cfg: cfg}
	var h share.Host = &host{n: n}
	var store share.StateStore
	if cfg.Clustered {
		h, store = &clusterHost{host{n: n}}, stateStore{n}
	}
	coord, err := share.NewCoordinator(h, cfg.Now, share.GroupDefaults{Partition: share.Defaults})
	if err != nil {
		return nil, err
	}
	mgr, err := share.NewManager(share.ManagerConfig{Host: h, Logger: cfg.Logger, Now: cfg.Now, Config: coord.GroupConfig, Store: store})
	if err != nil {
		return nil, err
	}
	coord.SetManager(mgr)
	if cfg.Clustered {
		coord.SetConfigStore(metaConfigs{cfg.Meta})
	}
	n.Coordinator, n.Manager, n.Sessions = coord, mgr, share.NewSessions()
	if cfg.Clustered {
		n.states = &coordlog.Shards[*partition.Partition, *share.StateShard]{What: "share coordinator", Logger: cfg.Logger,
			Load: func(_ int32, p *partition.Partition) (*share.StateShard, error) {
				return share.LoadStateShard(stateLog{cfg.Broker.Store(p)}, cfg.Logger)
			},
			Stop: func(*share.StateShard) {}, // holds no goroutine: its next append fails once leadership moved
		}
	}
	return n, nil
}

// Sync runs a share coordinator for each __share_group_state partition
// this member leads and stops the others (the node calls it whenever
// leadership changes; a no-op on a single node).
func (n *Node) Sync(closed func() bool, goFn func(func())) {
	if n == nil || n.states == nil {
		return
	}
	n.states.Sync(n.cfg.Broker.Led(share.StateTopic), closed, n.cfg.Stop, goFn)
}

// Close stops the share-partition manager's lock expiry and the share
// coordinators, before the partitions they write to close.
func (n *Node) Close() {
	if n == nil {
		return
	}
	n.Manager.Close()
	if n.states != nil {
		n.states.StopAll()
	}
}

// stateConfigs are __share_group_state's configs over
// __consumer_offsets'.
func stateConfigs() map[string]string {
	return map[string]string{"max.message.bytes": strconv.Itoa(stateMaxBatch)}
}

// StateShard returns the share coordinator of key if this node runs it:
// ErrNotCoordinator if another node leads key's __share_group_state
// partition (or there is none yet), ErrCoordinatorLoading while this one
// replays it.
func (n *Node) StateShard(key share.SPKey) (*share.StateShard, error) {
	if n == nil || n.states == nil {
		return nil, fmt.Errorf("%w: share coordinators run on a cluster's members only", ErrNotCoordinator)
	}
	k, _, err := n.cfg.Broker.Leader(share.StateTopic, func(count int32) int32 { return share.StatePartitionFor(key, count) })
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist yet", ErrNotCoordinator, share.StateTopic)
	}
	sh, ok := n.states.Get(k)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: the state of %s is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, key.Group, share.StateTopic, k, n.cfg.NodeID)
	case sh == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, share.StateTopic, k)
	}
	return sh, nil
}
