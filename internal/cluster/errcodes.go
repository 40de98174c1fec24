package cluster

import (
	"errors"
	"fmt"
)

// The controller's errors and the codes its answers carry them by. They
// are here, not in package quorum, because a decision's PartitionResult
// carries a code too, and callers everywhere test them with errors.Is.

var (
	// ErrDuplicateBroker: another live process registered this node id
	// (Kafka's DUPLICATE_BROKER_REGISTRATION).
	ErrDuplicateBroker = errors.New("cluster: another live broker has this node id")
	// ErrStaleBrokerEpoch: a heartbeat from an incarnation the quorum has
	// replaced; the broker must register again (STALE_BROKER_EPOCH).
	ErrStaleBrokerEpoch = errors.New("cluster: stale broker epoch")
)

// ErrNotController: this node does not lead the metadata quorum; changes go
// to the leader (quorum's RaftStore.Leader).
var ErrNotController = errors.New("cluster: not the controller")

// ErrNoLeader: this node has known no controller for longer than an
// election takes — it is likely cut off from the quorum. Clients are told
// at once (Kafka's NOT_CONTROLLER) so they look for the controller
// elsewhere instead of queueing behind requests that cannot commit here.
var ErrNoLeader = errors.New("cluster: no controller known")

// ErrNotTheSender: a controller RPC speaks for a node other than the one
// its connection authenticated as (node 2's certificate registering node
// 3, say).
var ErrNotTheSender = errors.New("cluster: a node may speak only for itself")

// ErrUnsupportedRequest answers a controller RPC with a field this build
// does not know: a newer node's, sent before its feature level was
// finalized. Refusing it is safe; acting on the part it understands is not.
var ErrUnsupportedRequest = errors.New("cluster: controller RPC with fields this build does not know (a newer node's?)")

// ErrInconsistentClusterID: a connection on the raft port, or a controller
// RPC, came from a node of another cluster (Kafka's
// INCONSISTENT_CLUSTER_ID, 104). It is refused before anything is read
// or changed: no vote, no entry, no registration.
var ErrInconsistentClusterID = errors.New("cluster: the peer belongs to another cluster")

// rpcCodes carries the errors a caller acts on across the wire.
var rpcCodes = map[string]error{
	"conflict":                ErrConflict,
	"not_controller":          ErrNotController,
	"duplicate_broker":        ErrDuplicateBroker,
	"stale_epoch":             ErrStaleBrokerEpoch,
	"unknown_partition":       ErrUnknownPartition,
	"fenced_leader_epoch":     ErrFencedLeaderEpoch,
	"invalid_update_version":  ErrInvalidUpdateVersion,
	"ineligible_replica":      ErrIneligibleReplica,
	"invalid_request":         ErrInvalidRequest,
	"election_not_needed":     ErrElectionNotNeeded,
	"preferred_not_available": ErrPreferredLeaderNotAvailable,
	"eligible_not_available":  ErrEligibleLeadersNotAvailable,
	"no_reassignment":         ErrNoReassignmentInProgress,
	"not_the_sender":          ErrNotTheSender,
	"invalid_assignment":      ErrInvalidReplicaAssignment,
	"invalid_feature":         ErrInvalidFeature,
	"feature_downgrade":       ErrFeatureDowngrade,
	"unsupported_feature":     ErrUnsupportedFeature,
	"unsupported_request":     ErrUnsupportedRequest,
	"inconsistent_cluster_id": ErrInconsistentClusterID,
}

// RPCError is the error a wire code and message stand for: the sentinel
// the code names, wrapped, so callers can errors.Is it.
func RPCError(code, msg string) error {
	if sentinel, ok := rpcCodes[code]; ok {
		return fmt.Errorf("%w (controller: %s)", sentinel, msg)
	}
	return fmt.Errorf("cluster: controller: %s", msg)
}

// WireError is an error as the controller's answers carry it (a
// PartitionResult's, or a whole RPC's): its code in rpcCodes, and text.
type WireError struct{ Code, Err string }

// RPCFailure is err as the controller's answers carry it.
func RPCFailure(err error) WireError {
	for code, sentinel := range rpcCodes {
		if errors.Is(err, sentinel) {
			return WireError{Code: code, Err: err.Error()}
		}
	}
	return WireError{Code: "error", Err: err.Error()}
}
