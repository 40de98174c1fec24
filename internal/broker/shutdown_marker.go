package broker

import (
	"fmt"
	"strings"

	"github.com/strandmq/strand/internal/datadir"
)

// takeShutdownMarker is datadir.TakeShutdownMarker of this node's directory.
func (b *Broker) takeShutdownMarker() (int64, error) {
	return datadir.TakeShutdownMarker(b.fs, b.cfg.Dir)
}

// writeShutdownMarker is datadir.WriteShutdownMarker of this node's directory.
func (b *Broker) writeShutdownMarker(epoch int64) error {
	return datadir.WriteShutdownMarker(b.fs, b.cfg.Dir, epoch)
}

// memberEpoch is this member's broker epoch, 0 on a single node or before
// it registered.
func (b *Broker) memberEpoch() int64 {
	if b.member == nil {
		return 0
	}
	return b.member.epoch.Load()
}

// checkNodeMeta refuses a member's data directory written by another node
// id or another cluster, and records the cluster id once it is known.
func (b *Broker) checkNodeMeta(clusterID string) error {
	m, ok, err := datadir.ReadNodeMeta(b.fs, b.cfg.Dir)
	if err != nil {
		return err
	}
	switch {
	case ok && m.NodeID != int32(b.cfg.NodeID):
		return fmt.Errorf("broker: %s belongs to node %d, not node %d (its %s says so); give each node its own data directory", b.cfg.Dir, m.NodeID, b.cfg.NodeID, datadir.NodeMetaFile)
	case ok && m.ClusterID != "" && clusterID != "" && m.ClusterID != clusterID:
		return fmt.Errorf("broker: %s belongs to cluster %s, but the metadata quorum is cluster %s; this directory is from another cluster", b.cfg.Dir, m.ClusterID, clusterID)
	case !ok || (m.ClusterID == "" && clusterID != ""):
		return datadir.WriteNodeMeta(b.fs, b.cfg.Dir, datadir.NodeMeta{NodeID: int32(b.cfg.NodeID), ClusterID: clusterID, Roles: strings.Join(b.cfg.Roles, ",")})
	}
	return nil
}
