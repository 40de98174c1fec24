package main

import (
	"github.com/strandmq/strand/internal/cluster"
)

// checkRolesFlags refuses --roles and --raft-addr where they cannot work:
// a node with one role only is part of a cluster (a controller-only
// single node would serve no data; a broker-only one has no controller
// to follow), a broker-only node joins by itself (not --join, which waits
// for add-voter), and only it has a raft address of its own.
func checkRolesFlags(o *serveOptions, roles []string) error {
	broker := cluster.HasRole(roles, cluster.RoleBroker)
	controller := cluster.HasRole(roles, cluster.RoleController)
	switch {
	case o.quorum == "" && !broker:
		return usageErr("--roles controller needs --controller-quorum: a controller-only node hosts no partitions, so alone it would serve no data; a single node is --roles controller,broker")
	case o.quorum == "" && !controller:
		return usageErr("--roles broker needs --controller-quorum, listing the controllers whose metadata log this broker follows")
	case !controller && o.join:
		return usageErr("--join is for a controller joining the quorum (it waits for `strand cluster add-voter`); a broker-only node joins by itself as a non-voter")
	case controller && o.raftAddr != "":
		return usageErr("--raft-addr is for a broker-only node (--roles broker); a controller's Raft address is its --controller-quorum entry")
	}
	return nil
}
