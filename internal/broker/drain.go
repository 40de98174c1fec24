package broker

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partition/fetcher"
)

// ErrNotClustered: a change that only a cluster has (a single node has
// no other broker to drain to).
var ErrNotClustered = errors.New("broker: only a cluster member has brokers to drain")

// Drained reports whether broker id is marked drained.
func (b *Broker) Drained(id int32) bool {
	br, ok := b.meta.Image().Broker(cluster.NodeID(id))
	return ok && br.Drained
}

// SetDrained marks broker id drained, or clears the mark: a drained broker
// is no target of placement or of the partition balancer (the mark is
// metadata.version 2: refused while the cluster runs 1).
func (b *Broker) SetDrained(id int32, drained, validateOnly bool) error {
	if !b.clustered() {
		return ErrNotClustered
	}
	img := b.meta.Image()
	if _, ok := img.Broker(cluster.NodeID(id)); !ok {
		return fmt.Errorf("%w: broker %d is not registered", cluster.ErrInvalidRequest, id)
	}
	if lvl := img.FeatureLevel(cluster.MetadataVersion); lvl < cluster.MetadataVersionRoles {
		return fmt.Errorf("%w: marking a broker drained needs %s %d and the cluster runs %d: once every node runs this build, finalize it (strand cluster features --latest)",
			cluster.ErrUnsupportedFeature, cluster.MetadataVersion, cluster.MetadataVersionRoles, lvl)
	}
	if validateOnly {
		return nil
	}
	if _, err := b.meta.Apply(cluster.DrainBroker{ID: cluster.NodeID(id), Drained: drained}); err != nil {
		return fmt.Errorf("broker: mark broker %d drained=%t: %w", id, drained, err)
	}
	return nil
}

// MetadataImage returns the metadata image this node holds now (the
// replication throttles and reassignments of internal/kafka read it).
func (b *Broker) MetadataImage() *cluster.Image { return b.meta.Image() }

// SetBrokerConfigs sets and removes dynamic broker configs (the
// replication throttle rates) of broker id, or the cluster default
// (cluster.DefaultBrokerConfigNode): metadata.version 3.
func (b *Broker) SetBrokerConfigs(id int32, set map[string]string, remove []string, validateOnly bool) error {
	if !b.clustered() {
		return fmt.Errorf("%w (a single node replicates nothing to throttle)", ErrNotClustered)
	}
	rec := cluster.BrokerConfig{Node: cluster.NodeID(id), Set: set, Remove: remove}
	if validateOnly {
		_, err := b.meta.Image().With(rec)
		return err
	}
	if _, err := b.meta.Apply(rec); err != nil {
		return fmt.Errorf("broker: set broker %d configs: %w", id, err)
	}
	return nil
}

// ReassignmentThrottle is this node's --reassignment-throttle in bytes
// per second (0: none).
func (b *Broker) ReassignmentThrottle() int64 { return b.cfg.ReassignmentThrottle }

// LeaderQuota and FollowerQuota are the node's replication quotas
// (leader.replication.throttled.rate, follower.replication.throttled.rate).
func (b *Broker) LeaderQuota() *fetcher.Quota { return b.fetchers.LeaderQuota() }

// FollowerQuota: see LeaderQuota.
func (b *Broker) FollowerQuota() *fetcher.Quota { return b.fetchers.FollowerQuota() }
