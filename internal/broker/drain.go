package broker

import (
	"errors"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition/fetcher"
)

// ErrNotClustered: a change that only a cluster has (a single node has
// no other broker to drain to, no replica to throttle).
var ErrNotClustered = errors.New("broker: only a cluster member has other brokers")

// MetadataImage returns the metadata image this node holds now (the
// replication throttles and reassignments of internal/kafka read it).
func (b *Broker) MetadataImage() *cluster.Image { return b.meta.Image() }

// ClusterMetadata returns the cluster's metadata store, through which
// internal/kafka proposes drain marks and broker configs (cluster.MarkDrained,
// cluster.AlterBrokerConfigs); ErrNotClustered on a single node.
func (b *Broker) ClusterMetadata() (cluster.Store, error) {
	if !b.clustered() {
		return nil, ErrNotClustered
	}
	return b.meta, nil
}

// ReassignmentThrottle is this node's --reassignment-throttle in bytes
// per second (0: none).
func (b *Broker) ReassignmentThrottle() int64 { return b.cfg.ReassignmentThrottle }

// LeaderQuota and FollowerQuota are the node's replication quotas
// (leader.replication.throttled.rate, follower.replication.throttled.rate).
func (b *Broker) LeaderQuota() *fetcher.Quota { return b.fetchers.LeaderQuota() }

// FollowerQuota: see LeaderQuota.
func (b *Broker) FollowerQuota() *fetcher.Quota { return b.fetchers.FollowerQuota() }
