package group

import (
	"strings"
	"time"
)

// Generation is a group's generation id. It starts at 0 and grows by one per
// completed rebalance; members prove they belong to the current generation.
type Generation int32

// NoGeneration is the generation of a "simple" offset commit by a client that
// is not a member of the group (Kafka's -1).
const NoGeneration Generation = -1

// State is a group's place in the classic protocol's state machine.
type State int8

// The states, named as Kafka's DescribeGroups and ListGroups name them.
const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

// String returns Kafka's name for the state, e.g. "CompletingRebalance".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState parses a state name case-insensitively, as ListGroups v4's
// states filter is matched in Kafka.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if strings.EqualFold(n, name) {
			return State(i), true
		}
	}
	return 0, false
}

// Protocol is one of the assignment protocols a member supports, with the
// member's metadata for it (for the "consumer" protocol type: its
// subscription, a ConsumerMemberMetadata).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest mirrors JoinGroup's request fields.
type JoinRequest struct {
	GroupID    string
	MemberID   string // "" for a new member
	InstanceID string // group.instance.id; "" for a dynamic member
	ClientID   string
	ClientHost string
	// ProtocolType is the kind of group, "consumer" for Kafka consumers.
	ProtocolType string
	// Protocols are in the member's order of preference.
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID is set for JoinGroup v4+ (KIP-394): a new dynamic
	// member first gets MEMBER_ID_REQUIRED and an id to rejoin with.
	RequireKnownMemberID bool
	Reason               string
}

// JoinMember is one member as the leader sees it in its JoinResponse.
type JoinMember struct {
	MemberID   string
	InstanceID string
	Metadata   []byte
}

// JoinResponse mirrors JoinGroup's response fields.
type JoinResponse struct {
	Code         Code
	Generation   Generation
	ProtocolType string
	Protocol     string
	Leader       string
	MemberID     string
	// Members is set for the leader only: every member with its metadata for
	// the chosen protocol, in join order.
	Members []JoinMember
}

// MemberAssignment is the leader's assignment for one member.
type MemberAssignment struct {
	MemberID   string
	Assignment []byte
}

// SyncRequest mirrors SyncGroup's request fields.
type SyncRequest struct {
	GroupID    string
	Generation Generation
	MemberID   string
	InstanceID string
	// ProtocolType and Protocol (v5+) are checked against the group's when
	// not empty.
	ProtocolType string
	Protocol     string
	// Assignments are sent by the leader only.
	Assignments []MemberAssignment
}

// SyncResponse mirrors SyncGroup's response fields.
type SyncResponse struct {
	Code         Code
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// HeartbeatRequest mirrors Heartbeat's request fields.
type HeartbeatRequest struct {
	GroupID    string
	Generation Generation
	MemberID   string
	InstanceID string
}

// LeaveMember is one member leaving (LeaveGroup v3+ batches them). With an
// InstanceID, MemberID may be empty (an admin removing a static member).
type LeaveMember struct {
	MemberID   string
	InstanceID string
	Reason     string
}

// LeaveRequest mirrors LeaveGroup's request fields. A v0-v2 request is a
// batch of one member.
type LeaveRequest struct {
	GroupID string
	Members []LeaveMember
}

// LeaveMemberResult is the outcome for one LeaveMember.
type LeaveMemberResult struct {
	MemberID   string
	InstanceID string
	Code       Code
}

// LeaveResponse mirrors LeaveGroup's response: a top-level code and one
// result per member, in request order.
type LeaveResponse struct {
	Code    Code
	Members []LeaveMemberResult
}

// MemberDescription is one member in a GroupDescription.
type MemberDescription struct {
	MemberID   string
	InstanceID string
	ClientID   string
	ClientHost string
	// Metadata and Assignment are set only while the group is Stable, as in
	// Kafka.
	Metadata   []byte
	Assignment []byte
}

// GroupDescription mirrors one group of DescribeGroups' response. An unknown
// group is described as Dead with CodeNone, as Kafka does.
type GroupDescription struct {
	GroupID string
	Code    Code
	// Message explains Code (DescribeGroups v6's ErrorMessage), e.g. for a
	// consumer-protocol group, which DescribeGroups does not describe.
	Message      string
	State        State
	ProtocolType string
	Protocol     string // only while Stable
	Members      []MemberDescription
}

// GroupListing is one group of ListGroups' response.
type GroupListing struct {
	GroupID      string
	ProtocolType string
	// State is the classic state; a consumer-protocol group maps onto it
	// (Empty, Stable, or PreparingRebalance while assigning or
	// reconciling) for callers that only know classic states.
	State State
	// Type is the group's protocol, TypeClassic or TypeConsumer, and
	// StateName its state as ListGroups reports it: a classic State's
	// name, or a consumer group's (Empty, Assigning, Reconciling, Stable).
	Type      string
	StateName string
	// Rebalances and PartitionsMoved count a consumer group's target
	// assignment changes, and the partitions they moved between members
	// (assign.Moves), since this coordinator loaded the group.
	Rebalances, PartitionsMoved int64
}

// The group types of ListGroups v5 (KIP-848): every group id is one or the
// other, never both.
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetAndMetadata is one committed offset.
type OffsetAndMetadata struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
	// CommitTime is set by the coordinator when the offset is committed.
	CommitTime time.Time
}

// OffsetCommitRequest mirrors OffsetCommit's request fields. A "simple"
// commit, from a client that manages its own partitions, has Generation
// NoGeneration and an empty MemberID.
type OffsetCommitRequest struct {
	// Version is the OffsetCommit version: members of a consumer-protocol
	// group must use v9+, whose GenerationID carries the member epoch.
	Version    int16
	GroupID    string
	Generation Generation
	MemberID   string
	InstanceID string
	Offsets    map[TopicPartition]OffsetAndMetadata
}

func unixMilli(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
