package cluster

// What a broker process sends the controller (internal/cluster/quorum
// carries it), kept beside the records it turns into.

// Registration is what a broker process tells the controller at start.
type Registration struct {
	ID            NodeID
	IncarnationID string
	Endpoints     []Endpoint
	Rack          string
	// PreviousBrokerEpoch is the epoch the node's clean-shutdown marker
	// recorded, UncleanShutdown when it found none (the last process died
	// with its logs unflushed), 0 when it does not say (an older broker):
	// a new incarnation that is not a clean restart of the registered one
	// leaves every ISR and ELR (Kafka's handleBrokerUncleanShutdown).
	PreviousBrokerEpoch int64 `json:",omitempty"`
	// SuccessorOf is the secret token the node's data directory held at
	// this process's start: a registration whose SuccessorOf hashes to
	// the token hash the registered incarnation id ends with comes from
	// the process that took over its directory, and replaces it at once
	// (internal/cluster/quorum, successor.go). Controllers that predate it
	// ignore it.
	SuccessorOf string `json:",omitempty"`
	// Features are the feature levels the node's build supports; the
	// controller refuses a node that cannot run at the finalized ones.
	Features map[string]FeatureRange `json:",omitempty"`
	// Roles are the process's roles (roles.go; nil: both). A node id keeps
	// the roles it first registered with: a registration with others is
	// refused, and so is a broker-only one from a quorum voter.
	Roles []string `json:",omitempty"`
}

// UncleanShutdown is Registration.PreviousBrokerEpoch of a node that found
// no clean-shutdown marker.
const UncleanShutdown int64 = -1

// Heartbeat is a registered broker's periodic proof of life.
type Heartbeat struct {
	ID           NodeID
	Epoch        int64
	AppliedIndex uint64 // how far this broker's image has come
	WantShutdown bool
}

// HeartbeatReply is the controller's answer.
type HeartbeatReply struct {
	Fenced         bool
	CaughtUp       bool // the broker's image holds its own registration
	ShouldShutdown bool // controlled shutdown: it leads nothing any more
}
