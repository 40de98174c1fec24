package broker

import (
	"fmt"
	"strings"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/vfs"
)

// checkRoles refuses to start a data directory whose meta.properties
// records other roles than roles (cluster.ParseRoles' form). Kafka's
// meta.properties records no process.roles; Strand does, because a node
// whose roles changed under it would do what nobody asked: a voter
// restarted as broker-only still votes in the raft log it holds, a broker
// restarted as controller-only still holds replicas. To change roles, the
// node gets a new id (drain it, remove it, start afresh).
func checkRoles(fs vfs.FS, dir string, roles []string) error {
	m, ok, err := datadir.ReadNodeMeta(fs, dir)
	if err != nil || !ok {
		return err
	}
	if want := strings.Join(roles, ","); m.Roles != want {
		return fmt.Errorf("broker: %s was node %d's with --roles %s, and this start has --roles %s; a node keeps its roles "+
			"(to change them, drain the node, remove it, and start it with a new --node-id and an empty --data-dir)",
			dir, m.NodeID, cluster.RolesString(split(m.Roles)), cluster.RolesString(roles))
	}
	return nil
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// Controllers lists the cluster's controllers — the metadata quorum's
// voters, at their client endpoint when they have registered one — for
// DescribeCluster's controller endpoint type (KIP-919); nil on a single
// node.
func (b *Broker) Controllers() []BrokerInfo {
	if !b.clustered() {
		return nil
	}
	qm, ok := b.member.m.(interface {
		QuorumMembers() ([]cluster.QuorumMember, error)
	})
	if !ok {
		return nil
	}
	members, err := qm.QuorumMembers()
	if err != nil {
		return nil
	}
	img := b.meta.Image()
	var out []BrokerInfo
	for _, m := range members {
		if !m.Voter {
			continue
		}
		bi := BrokerInfo{ID: NodeID(m.ID), Roles: []string{cluster.RoleController}}
		if br, ok := img.Broker(m.ID); ok && len(br.Endpoints) > 0 {
			bi.Host, bi.Port, bi.Rack, bi.Fenced, bi.Roles = br.Endpoints[0].Host, br.Endpoints[0].Port, br.Rack, br.Fenced, br.Roles
		}
		out = append(out, bi)
	}
	return out
}
