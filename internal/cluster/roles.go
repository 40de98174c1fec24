package cluster

import (
	"fmt"
	"slices"
	"strings"
)

// Roles: what a node does in the cluster (Kafka's process.roles). A
// controller is a voter of the metadata quorum, which may lead it and so
// run the controller; a broker hosts partitions. A node may be both (the
// default, Kafka's "combined" mode). A broker-only node follows the
// metadata log as a raft non-voter and never votes; a controller-only node
// registers (so admin requests can be forwarded to its internal listener)
// but placement never gives it a replica, so it leads nothing and
// coordinates nothing.

// Role names, as --roles spells them.
const (
	RoleBroker     = "broker"
	RoleController = "controller"
)

// ParseRoles parses --roles ("controller,broker", "broker", "controller")
// into its normal form: nil for both (the default, which registrations
// leave out so older nodes read them), else the one role.
func ParseRoles(s string) ([]string, error) {
	var broker, controller bool
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case RoleBroker:
			broker = true
		case RoleController:
			controller = true
		case "":
			return nil, fmt.Errorf("roles %q: an empty role; want broker, controller or both (controller,broker)", s)
		default:
			return nil, fmt.Errorf("roles %q: unknown role %q; want broker, controller or both (controller,broker)", s, strings.TrimSpace(part))
		}
	}
	switch {
	case broker && controller:
		return nil, nil
	case broker:
		return []string{RoleBroker}, nil
	default:
		return []string{RoleController}, nil
	}
}

// RolesString is roles as --roles spells them ("broker,controller" for
// the default, nil).
func RolesString(roles []string) string {
	if len(roles) == 0 {
		return RoleBroker + "," + RoleController
	}
	return strings.Join(roles, ",")
}

// HasRole reports whether roles (in ParseRoles' form) include role.
func HasRole(roles []string, role string) bool {
	return len(roles) == 0 || slices.Contains(roles, role)
}

// IsBroker reports whether the node hosts partitions.
func (b BrokerReg) IsBroker() bool { return HasRole(b.Roles, RoleBroker) }

// IsController reports whether the node registered as a quorum voter.
func (b BrokerReg) IsController() bool { return HasRole(b.Roles, RoleController) }

// ErrRoles: a registration or quorum change that does not fit a node's
// roles (a broker-only node made a voter, a node id registered again with
// other roles).
var ErrRoles = fmt.Errorf("%w: roles", ErrConflict)

// QuorumMember is one member of the metadata quorum's configuration.
type QuorumMember struct {
	ID    NodeID
	Addr  string // raft address
	Voter bool   // false: a broker-only node following the log
}
