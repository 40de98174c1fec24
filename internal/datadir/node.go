package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/vfs"
)

// NodeMetaFile (meta.properties) names the node and cluster a member's data directory
// belongs to, as Kafka's does: written at the first start, checked at
// every later one, so a directory moved to another node, or from another
// cluster, is refused instead of serving the wrong data.
const NodeMetaFile = "meta.properties"

// NodeMeta is what meta.properties holds.
type NodeMeta struct {
	NodeID    int32
	ClusterID string // "" until the quorum has named the cluster
	// Roles is the node's --roles as it first started ("broker",
	// "controller"; "" for both, and in files from before roles): a node
	// keeps its roles, so a later start with others is refused.
	Roles string
}

// ReadNodeMeta reads dir's meta.properties; false if there is none.
func ReadNodeMeta(fs vfs.FS, dir string) (NodeMeta, bool, error) {
	b, err := vfs.ReadFile(fs, filepath.Join(dir, NodeMetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return NodeMeta{}, false, nil
	}
	if err != nil {
		return NodeMeta{}, false, fmt.Errorf("broker: read %s: %w", NodeMetaFile, err)
	}
	m := NodeMeta{NodeID: -1}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		switch {
		case !ok || strings.HasPrefix(k, "#"):
		case k == "node.id":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return m, true, fmt.Errorf("broker: %s: node.id %q is not a number", NodeMetaFile, v)
			}
			m.NodeID = int32(n)
		case k == "cluster.id":
			m.ClusterID = v
		case k == "process.roles":
			m.Roles = v
		}
	}
	if m.NodeID < 0 {
		return m, true, fmt.Errorf("broker: %s in %s has no node.id", NodeMetaFile, dir)
	}
	return m, true, nil
}

// WriteNodeMeta writes dir's meta.properties, durably.
func WriteNodeMeta(fs vfs.FS, dir string, m NodeMeta) error {
	s := fmt.Sprintf("# Written by strand: the node and cluster this directory belongs to.\nversion=1\nnode.id=%d\n", m.NodeID)
	if m.ClusterID != "" {
		s += "cluster.id=" + m.ClusterID + "\n"
	}
	if m.Roles != "" {
		s += "process.roles=" + m.Roles + "\n"
	}
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, NodeMetaFile), []byte(s)); err != nil {
		return fmt.Errorf("broker: write %s: %w", NodeMetaFile, err)
	}
	return nil
}
