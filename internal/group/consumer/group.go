package consumer

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// Code is a Kafka error code; the values equal Kafka's, so the wire layer
// copies them.
type Code int16

// The codes a ConsumerGroupHeartbeat can answer with.
const (
	None                     Code = 0
	UnknownMemberID          Code = 25
	InvalidRequest           Code = 42
	GroupIDNotFound          Code = 69
	GroupMaxSizeReached      Code = 81
	FencedInstanceID         Code = 82
	FencedMemberEpoch        Code = 110
	UnreleasedInstanceID     Code = 111
	UnsupportedAssignor      Code = 112
	InvalidRegularExpression Code = 128
)

// Special member epochs a request can carry.
const (
	// JoinEpoch (0) joins or rejoins the group.
	JoinEpoch int32 = 0
	// LeaveEpoch (-1) leaves the group for good.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch (-2) is a static member leaving temporarily: it keeps
	// its place and partitions until its session times out.
	StaticLeaveEpoch int32 = -2
)

// MemberState is where a member is in reconciling towards its target (Kafka's
// MemberState).
type MemberState int8

const (
	// Stable: the member has everything its target gives it, at the
	// assignment epoch (or it is waiting for nothing).
	Stable MemberState = iota
	// UnrevokedPartitions: the member must give up Revoking first; its epoch
	// stays where it was until it reports owning none of them.
	UnrevokedPartitions
	// UnreleasedPartitions: the member is at the assignment epoch but part of
	// its target is still held by other members; it gets them once they are
	// released.
	UnreleasedPartitions
)

func (s MemberState) String() string {
	switch s {
	case Stable:
		return "stable"
	case UnrevokedPartitions:
		return "unrevoked_partitions"
	case UnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// GroupState is the state ConsumerGroupDescribe and ListGroups report.
type GroupState int8

const (
	Empty       GroupState = iota // no members
	Assigning                     // group epoch > assignment epoch
	Reconciling                   // some member is not at its target yet
	StableGroup                   // every member holds its target
)

func (s GroupState) String() string {
	return [...]string{"Empty", "Assigning", "Reconciling", "Stable"}[s]
}

// Member is one member of a consumer group.
type Member struct {
	ID         string
	InstanceID string // static membership; "" for a dynamic member
	Rack       string
	ClientID   string
	ClientHost string

	// Subscription: topic names, and a regex (RE2, full match) whose
	// matches among the cluster's topics are added. Assignor is the server
	// assignor the member asked for, or "".
	Topics   []string
	Regex    string
	Assignor string

	RebalanceTimeout time.Duration
	// Classic is set for a member speaking the classic protocol (online
	// migration, classic.go); nil for a ConsumerGroupHeartbeat member.
	Classic *ClassicMember

	// Epoch is the member epoch: the assignment epoch it has caught up to,
	// or StaticLeaveEpoch. PreviousEpoch is the one before, accepted once
	// more when a response was lost.
	Epoch         int32
	PreviousEpoch int32
	State         MemberState
	// Assigned is what the member was last told it owns; Revoking what it
	// must still give up. Both count as owned: no other member is given a
	// partition in either. Lists are sorted and never changed in place.
	Assigned []assign.Partition
	Revoking []assign.Partition

	// Volatile: not persisted. SessionDeadline is when the member is
	// removed without a heartbeat; RebalanceDeadline, set while it is
	// UnrevokedPartitions, when it is fenced for not revoking.
	SessionDeadline   time.Time
	RebalanceDeadline time.Time
}

// Group is the state of one consumer group. The engine never changes a Group
// it is given: every step returns a new one (members are copied on write;
// partition lists are shared, and never modified in place).
type Group struct {
	ID string
	// Epoch is the group epoch: bumped whenever an input of the assignment
	// changes. AssignmentEpoch is the group epoch Target was computed for.
	Epoch           int32
	AssignmentEpoch int32
	// Subscribed is the partition count of every topic some member
	// subscribes to, as of the last epoch bump (Kafka's subscription
	// metadata); a change of it bumps the epoch.
	Subscribed map[string]int32
	Members    map[string]*Member
	// Target is the assignment the assignor computed at AssignmentEpoch.
	Target map[string][]assign.Partition

	// MetadataRefresh (volatile, not persisted) is when a heartbeat next
	// re-resolves every subscription against the cluster's topics, to notice
	// new topics that names or regexes match; zero means at the next one.
	// Changes to topics already subscribed are noticed at every heartbeat.
	MetadataRefresh time.Time
}

// NewGroup returns an empty group at epoch 0.
func NewGroup(id string) *Group {
	return &Group{ID: id, Subscribed: map[string]int32{}, Members: map[string]*Member{}, Target: map[string][]assign.Partition{}}
}

// Clone returns a copy that shares nothing mutable with g.
func (g *Group) Clone() *Group {
	c := *g
	c.Subscribed = maps.Clone(g.Subscribed)
	c.Target = maps.Clone(g.Target)
	c.Members = make(map[string]*Member, len(g.Members))
	for id, m := range g.Members {
		mc := *m
		c.Members[id] = &mc
	}
	if c.Subscribed == nil {
		c.Subscribed = map[string]int32{}
	}
	if c.Target == nil {
		c.Target = map[string][]assign.Partition{}
	}
	return &c
}

// State reports the group's state for describe and list.
func (g *Group) State() GroupState {
	switch {
	case len(g.Members) == 0:
		return Empty
	case g.Epoch > g.AssignmentEpoch:
		return Assigning
	}
	for _, m := range g.Members {
		if m.Epoch == StaticLeaveEpoch {
			continue
		}
		if m.Epoch != g.AssignmentEpoch || m.State != Stable {
			return Reconciling
		}
	}
	return StableGroup
}

// StaticMember returns the member holding instance id, if any.
func (g *Group) StaticMember(instance string) (*Member, bool) {
	for _, m := range g.Members {
		if m.InstanceID == instance {
			return m, true
		}
	}
	return nil, false
}

// Owners maps every owned partition (assigned, or still being revoked) to
// its member. The engine keeps ownership exclusive; a partition found twice
// is a broken invariant and panics.
func (g *Group) Owners() map[assign.Partition]string {
	owners, err := g.owners()
	if err != nil {
		panic(err)
	}
	return owners
}

// owners is Owners, reporting a partition owned twice as an error.
func (g *Group) owners() (map[assign.Partition]string, error) {
	owners := map[assign.Partition]string{}
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := g.Members[id]
		for _, list := range [][]assign.Partition{m.Assigned, m.Revoking} {
			for _, p := range list {
				if other, dup := owners[p]; dup {
					return nil, fmt.Errorf("consumer: group %s: %v owned by %s and %s", g.ID, p, other, id)
				}
				owners[p] = id
			}
		}
	}
	return owners, nil
}
