package partition

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/vfs"
)

// NodeID identifies a node (Kafka's broker id).
type NodeID int32

// PartitionID is a partition's index within its topic.
type PartitionID int32

// TopicID is a topic's UUID.
type TopicID = cluster.TopicID

// Node is what every partition on a node shares: the node's identity,
// clock and directories, its counters, and the calls a partition makes
// back to the node (Host). One Node serves all of a node's partitions.
type Node struct {
	ID     NodeID
	FS     vfs.FS
	Logger *slog.Logger
	Now    func() time.Time
	// SnapshotDir holds the producer-state snapshots of every partition.
	SnapshotDir string
	// RemoteDeletes is the journal of remote deletions (RemoteDeletesDir);
	// empty: none is journaled.
	RemoteDeletes string
	// Clustered is set on a cluster member: a partition then waits for
	// its registration to lead, and its high watermark follows its ISR.
	Clustered            bool
	ReplicaLagTime       time.Duration
	ProducerIDExpiration time.Duration
	// Started is when the node started (a follower never seen caught up
	// has lagged since then).
	Started time.Time
	// RollSnapSlots bounds the producer snapshots written at the same
	// time in the background (a buffered channel).
	RollSnapSlots chan struct{}
	Host          Host
	// Tier is the node's object-storage tier (KIP-405); nil: none.
	Tier *tiered.Tier
	// WriteGate bounds the appends of this node's partition logs copying
	// into the data directory at once (partlog.Config.WriteGate).
	WriteGate *partlog.WriteGate

	// Parked counts acks=all produces waiting for the high watermark;
	// ISRShrinks and ISRExpands the ISR changes this node's leaders
	// committed.
	Parked, ISRShrinks, ISRExpands atomic.Int64
}

// Host is what a partition asks of the node that hosts it.
type Host interface {
	// Image is the cluster's metadata image (cluster members only).
	Image() *cluster.Image
	// Fenced returns the error a fenced node answers every request with,
	// nil while it is not fenced.
	Fenced() error
	// AlterPartition asks the controller for an ISR change. BrokerEpoch
	// is the node's registration epoch, which the request carries.
	AlterPartition(req cluster.AlterPartition) (cluster.PartitionReg, error)
	BrokerEpoch() int64
	// Unfollow stops fetching the partition from its leader (it closes
	// or is deleted).
	Unfollow(p *Partition)
	// Go runs fn on a goroutine the node waits for when it closes.
	Go(fn func())
	// MarkerWritten is told that a transaction marker was committed on
	// p: a coordinator whose records are in p may act on the outcome.
	MarkerWritten(ctx context.Context, p *Partition, pid producer.ID, commit bool) error
}

// Config is a partition's view of its topic's config: what its append
// path enforces. The node derives it from the topic's config (Kafka's
// names and defaults live with the topic registry, not here).
type Config struct {
	Log               partlog.Config
	MaxMessageBytes   int
	MinInsyncReplicas int
	// LogAppendTime: the broker stamps batches with its clock.
	LogAppendTime bool
	// RequireKeys refuses records without a key (a compacted user topic).
	RequireKeys bool
	// Trusted marks an internal topic: its batches come from the node's
	// own coordinators, and transactional checks that guard a client's
	// batches do not apply.
	Trusted bool
	// Screen, when set, judges each batch before it is appended
	// (validation with a dead-letter queue: package dlq).
	Screen Screener
	// RemoteStorage: sealed segments go to the node's Tier
	// (remote.storage.enable), which keeps them for TotalRetention.
	RemoteStorage  bool
	TotalRetention tiered.Retention
	// RemoteCopyDisable (remote.log.copy.disable) stops uploads: the
	// remote data stays readable, and local data follows the total
	// retention instead of local.retention.*.
	RemoteCopyDisable bool
}

// Screener judges a batch before it is appended. It returns the batch
// to append (the same one, or one without the records it took out) and
// the quarantine of what it took out, or nil when it has nothing to say.
// It runs before the partition lock: it may create topics, or ask
// another node.
type Screener interface {
	Screen(p *Partition, batch []byte, h record.Header, enlist Enlister) ([]byte, record.Header, Quarantine, error)
}

// Quarantine is what a Screener took out of a batch. The partition
// writes it under its lock, after the idempotence check and before the
// batch, so that the records taken out are where the batch's offsets
// say, and counts it once the batch is appended.
type Quarantine interface {
	WriteLocked(src *Partition, base record.Offset) error
	Count(topic string)
}

// Counters are a topic's traffic counters, shared by its partitions;
// atomics, so the produce and fetch paths never take a lock to count.
type Counters struct {
	RecordsIn, BytesIn, RecordsOut, BytesOut atomic.Int64
}

// CountIn counts one appended batch.
func (c *Counters) CountIn(bytes int, records int32) {
	c.BytesIn.Add(int64(bytes))
	c.RecordsIn.Add(int64(records))
}

// NodeIDs converts the metadata's node ids.
func NodeIDs(ids []cluster.NodeID) []NodeID {
	out := make([]NodeID, len(ids))
	for i, id := range ids {
		out[i] = NodeID(id)
	}
	return out
}
