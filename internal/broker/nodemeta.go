package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/vfs"
)

// meta.properties names the node and cluster a member's data directory
// belongs to, as Kafka's does: written at the first start, checked at
// every later one, so a directory moved to another node, or from another
// cluster, is refused instead of serving the wrong data.
const nodeMetaFile = "meta.properties"

type nodeMeta struct {
	NodeID    NodeID
	ClusterID string // "" until the quorum has named the cluster
}

func readNodeMeta(fs vfs.FS, dir string) (nodeMeta, bool, error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, nodeMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return nodeMeta{}, false, nil
	}
	if err != nil {
		return nodeMeta{}, false, fmt.Errorf("broker: read %s: %w", nodeMetaFile, err)
	}
	m := nodeMeta{NodeID: -1}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok || strings.HasPrefix(k, "#"):
		case k == "node.id":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return m, true, fmt.Errorf("broker: %s: node.id %q is not a number", nodeMetaFile, v)
			}
			m.NodeID = NodeID(n)
		case k == "cluster.id":
			m.ClusterID = v
		}
	}
	if m.NodeID < 0 {
		return m, true, fmt.Errorf("broker: %s in %s has no node.id", nodeMetaFile, dir)
	}
	return m, true, nil
}

func writeNodeMeta(fs vfs.FS, dir string, m nodeMeta) error {
	s := fmt.Sprintf("# Written by strand: the node and cluster this directory belongs to.\nversion=1\nnode.id=%d\n", m.NodeID)
	if m.ClusterID != "" {
		s += "cluster.id=" + m.ClusterID + "\n"
	}
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, nodeMetaFile), []byte(s)); err != nil {
		return fmt.Errorf("broker: write %s: %w", nodeMetaFile, err)
	}
	return nil
}

// checkNodeMeta refuses a member's data directory written by another node
// id or another cluster, and records the cluster id once it is known.
func (b *Broker) checkNodeMeta(clusterID string) error {
	m, ok, err := readNodeMeta(b.fs, b.cfg.Dir)
	if err != nil {
		return err
	}
	switch {
	case ok && m.NodeID != b.cfg.NodeID:
		return fmt.Errorf("broker: %s belongs to node %d, not node %d (its %s says so); give each node its own data directory", b.cfg.Dir, m.NodeID, b.cfg.NodeID, nodeMetaFile)
	case ok && m.ClusterID != "" && clusterID != "" && m.ClusterID != clusterID:
		return fmt.Errorf("broker: %s belongs to cluster %s, but the metadata quorum is cluster %s; this directory is from another cluster", b.cfg.Dir, m.ClusterID, clusterID)
	case !ok || (m.ClusterID == "" && clusterID != ""):
		return writeNodeMeta(b.fs, b.cfg.Dir, nodeMeta{NodeID: b.cfg.NodeID, ClusterID: clusterID})
	}
	return nil
}
