package consumer

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/assign"
)

// Config holds the group.consumer.* settings the engine reads.
type Config struct {
	// Assignors are the server assignors clients may pick
	// (group.consumer.assignors); the first is the default. Each must be a
	// name assign.ServerByName knows. Default: uniform, range.
	Assignors []string
	// MaxSize caps the members of a group (group.consumer.max.size); 0 is
	// no cap.
	MaxSize int
	// SessionTimeout (group.consumer.session.timeout.ms, 45 s) and
	// HeartbeatInterval (group.consumer.heartbeat.interval.ms, 5 s).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// MetadataRefreshInterval bounds how long a topic created after the
	// members subscribed to its name (or a matching regex) waits to be
	// noticed without a trigger; default 10 s.
	MetadataRefreshInterval time.Duration
}

// Engine runs KIP-848 group steps under one Config. It holds no group state
// and is safe for concurrent use.
type Engine struct{ cfg Config }

// New returns an engine for cfg, with defaults filled in. It panics on an
// assignor name assign.ServerByName does not know: a configuration the broker
// validates first.
func New(cfg Config) *Engine {
	if len(cfg.Assignors) == 0 {
		cfg.Assignors = []string{"uniform", "range"}
	}
	for _, name := range cfg.Assignors {
		if _, ok := assign.ServerByName(name); !ok {
			panic("consumer: unknown server assignor " + name)
		}
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 45 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.MetadataRefreshInterval <= 0 {
		cfg.MetadataRefreshInterval = 10 * time.Second
	}
	return &Engine{cfg: cfg}
}

// Request is a ConsumerGroupHeartbeat request. Nullable fields use Go's nil:
// a nil pointer or nil slice is the wire's null ("unchanged since the last
// heartbeat"), a non-nil empty slice is an empty list.
type Request struct {
	// Version is the request version: from v1 the client makes its own
	// member id, and the caller must also supply one for v0 joins (the
	// engine does not generate ids, to stay deterministic).
	Version            int16
	GroupID            string
	MemberID           string
	MemberEpoch        int32
	InstanceID         *string
	RackID             *string
	RebalanceTimeoutMs int32 // -1: unchanged
	Topics             []string
	Regex              *string
	ServerAssignor     *string
	// Owned is what the member reports owning (the wire's TopicPartitions,
	// resolved from topic ids to names by the caller).
	Owned []assign.Partition

	// From the connection, not the request body.
	ClientID   string
	ClientHost string

	// Classic is set by ClassicJoin: the member speaks the classic
	// protocol.
	Classic *ClassicMember
}

// full reports whether req carries everything (kfake's isFullRequest): then
// the response repeats the assignment even when unchanged.
func (r *Request) full() bool {
	return r.RebalanceTimeoutMs != -1 && (r.Topics != nil || r.Regex != nil) && r.Owned != nil
}

// Response is a ConsumerGroupHeartbeat response. Assignment nil means
// "unchanged"; otherwise it is the member's whole assignment.
type Response struct {
	Code              Code
	Message           string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        []assign.Partition
}

func fail(code Code, format string, args ...any) Response {
	return Response{Code: code, Message: fmt.Sprintf(format, args...)}
}

// validate checks the request on its own, in Kafka's order
// (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid).
func (e *Engine) validate(req *Request) (Response, bool) {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	needID := req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == LeaveEpoch
	switch {
	case needID && blank(req.MemberID), blank(req.MemberID):
		// v0 joins may omit it on the wire, but the caller fills one in.
		return fail(InvalidRequest, "MemberId can't be empty."), false
	case blank(req.GroupID):
		return fail(InvalidRequest, "GroupId can't be empty."), false
	case req.InstanceID != nil && blank(*req.InstanceID):
		return fail(InvalidRequest, "InstanceId can't be empty."), false
	case req.RackID != nil && blank(*req.RackID):
		return fail(InvalidRequest, "RackId can't be empty."), false
	}
	switch {
	case req.MemberEpoch == JoinEpoch:
		if req.RebalanceTimeoutMs == -1 {
			return fail(InvalidRequest, "RebalanceTimeoutMs must be provided in first request."), false
		}
		if req.Owned == nil || len(req.Owned) > 0 {
			return fail(InvalidRequest, "TopicPartitions must be empty when (re-)joining."), false
		}
		if req.Topics == nil && req.Regex == nil {
			return fail(InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."), false
		}
	case req.MemberEpoch == StaticLeaveEpoch && req.InstanceID == nil:
		return fail(InvalidRequest, "InstanceId can't be null."), false
	case req.MemberEpoch < StaticLeaveEpoch:
		return fail(InvalidRequest, "MemberEpoch is invalid."), false
	}
	if req.ServerAssignor != nil && !slices.Contains(e.cfg.Assignors, *req.ServerAssignor) {
		return fail(UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(e.cfg.Assignors, ", ")), false
	}
	if req.Regex != nil && *req.Regex != "" {
		if _, err := regexp.Compile(*req.Regex); err != nil {
			return fail(InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.Regex, err), false
		}
	}
	return Response{}, true
}

// Heartbeat handles one ConsumerGroupHeartbeat for group g (nil: no such
// group yet) at time now, with topics the partition count of every topic in
// the cluster. It returns the response, the group after the request (nil if
// there is still no group) and the records to persist, in order. On an error
// the group is returned unchanged and there are no records. g is not
// modified.
func (e *Engine) Heartbeat(g *Group, req Request, now time.Time, topics map[string]int32) (Response, *Group, []Record) {
	if resp, ok := e.validate(&req); !ok {
		return resp, g, nil
	}
	orig := g
	if g == nil {
		if req.MemberEpoch != JoinEpoch {
			return fail(GroupIDNotFound, "Group %s not found.", req.GroupID), nil, nil
		}
		g = NewGroup(req.GroupID)
	} else {
		g = g.Clone()
	}
	var resp Response
	var recs []Record
	switch req.MemberEpoch {
	case LeaveEpoch, StaticLeaveEpoch:
		resp, recs = e.leave(g, &req)
	default:
		resp, recs = e.joinOrBeat(g, &req, now, topics)
	}
	if resp.Code != None {
		return resp, orig, nil
	}
	resp.HeartbeatInterval = e.cfg.HeartbeatInterval
	return resp, g, recs
}

// leave handles epochs -1 and -2 (Kafka's consumerGroupLeave): a static
// member is found by its instance id and must be the member that holds it;
// -1 removes the member, -2 keeps a static member's place and partitions
// until it rejoins or its session ends, without an epoch bump.
func (e *Engine) leave(g *Group, req *Request) (Response, []Record) {
	var m *Member
	if req.InstanceID == nil {
		if m = g.Members[req.MemberID]; m == nil {
			return fail(UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.ID), nil
		}
	} else {
		var ok bool
		if m, ok = g.StaticMember(*req.InstanceID); !ok {
			return fail(UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID), nil
		}
		if m.ID != req.MemberID {
			return fencedInstance(req, m), nil
		}
	}
	if req.MemberEpoch == LeaveEpoch {
		return Response{MemberID: m.ID, MemberEpoch: LeaveEpoch}, remove(g, m.ID)
	}
	m.PreviousEpoch, m.Epoch = m.Epoch, StaticLeaveEpoch
	return Response{MemberID: m.ID, MemberEpoch: StaticLeaveEpoch}, []Record{currentRecord(g, m)}
}

func fencedInstance(req *Request, holder *Member) Response {
	return fail(FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, holder.ID)
}

// member finds or creates the member a join or heartbeat is for, applying
// static membership; it returns the records of a static replacement.
func (e *Engine) member(g *Group, req *Request) (m *Member, created bool, recs []Record, resp Response) {
	var static *Member
	if req.InstanceID != nil {
		static, _ = g.StaticMember(*req.InstanceID)
	}
	m = g.Members[req.MemberID]
	if req.MemberEpoch != JoinEpoch {
		switch {
		case req.InstanceID != nil && static == nil:
			return nil, false, nil, fail(UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		case static != nil && static.ID != req.MemberID:
			return nil, false, nil, fencedInstance(req, static)
		}
		if m == nil {
			return nil, false, nil, fail(UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.ID)
		}
		if resp, ok := checkEpoch(m, req); !ok {
			return nil, false, nil, resp
		}
		return m, false, nil, Response{}
	}
	if static != nil && static.ID != req.MemberID {
		if static.Epoch != StaticLeaveEpoch {
			return nil, false, nil, fail(UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
				req.MemberID, *req.InstanceID, static.ID)
		}
		// The newcomer takes the place, metadata and target of the member
		// that left temporarily; it rejoins owning nothing.
		repl := *static
		repl.ID = req.MemberID
		target := g.Target[static.ID]
		// A replacement is not a change of the assignment's inputs: no
		// epoch bump.
		recs = drop(g, static.ID)
		repl.Assigned, repl.Revoking, repl.Epoch, repl.PreviousEpoch, repl.State = nil, nil, 0, 0, Stable
		g.Members[repl.ID] = &repl
		g.Target[repl.ID] = target
		recs = append(recs, metadataRecord(g, &repl),
			Record{Type: TypeTargetAssignment, Group: g.ID, Member: repl.ID, Partitions: orEmpty(target)})
		return &repl, false, recs, Response{}
	}
	if m == nil {
		m = &Member{ID: req.MemberID, Epoch: 0}
		if req.InstanceID != nil {
			m.InstanceID = *req.InstanceID
		}
		g.Members[m.ID] = m
		return m, true, nil, Response{}
	}
	// A known member rejoining has abandoned what it owned.
	m.Assigned, m.Revoking, m.State = nil, nil, Stable
	m.PreviousEpoch, m.Epoch = m.Epoch, 0
	return m, false, nil, Response{}
}

// checkEpoch applies Kafka's member epoch rule: a greater epoch is fenced; a
// smaller one only if it is the previous epoch and the member owns nothing
// beyond what it was last given (its response was lost).
func checkEpoch(m *Member, req *Request) (Response, bool) {
	switch {
	case req.MemberEpoch > m.Epoch:
		return fail(FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.Epoch), false
	case req.MemberEpoch < m.Epoch:
		if req.MemberEpoch != m.PreviousEpoch || req.Owned == nil || !subset(req.Owned, m.Assigned) {
			return fail(FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.Epoch), false
		}
	}
	return Response{}, true
}

// joinOrBeat handles epochs 0 and > 0.
func (e *Engine) joinOrBeat(g *Group, req *Request, now time.Time, topics map[string]int32) (Response, []Record) {
	// Kafka checks the size first: a member id the group does not know is
	// refused from a full group, whatever else is wrong.
	if _, known := g.Members[req.MemberID]; !known && e.cfg.MaxSize > 0 && len(g.Members) >= e.cfg.MaxSize {
		return fail(GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", e.cfg.MaxSize), nil
	}
	m, created, recs, resp := e.member(g, req)
	if m == nil {
		return resp, nil
	}
	before := *m
	joined := req.MemberEpoch == JoinEpoch
	bump := e.updateMember(m, req) || created
	if bump || !reflect.DeepEqual(metadataRecord(g, &before), metadataRecord(g, m)) {
		recs = append(recs, metadataRecord(g, m))
	}
	// Re-resolving every subscription costs O(members × topics), so it is
	// done only when an input changed, when a subscribed topic's partition
	// count moved, or at the refresh deadline (Kafka's metadata refresh).
	if bump || subscribedTopicsChanged(g, topics) || !now.Before(g.MetadataRefresh) {
		g.MetadataRefresh = now.Add(e.cfg.MetadataRefreshInterval)
		if md := subscriptionMetadata(g, topics); !maps.Equal(md, g.Subscribed) {
			g.Subscribed = md
			recs = append(recs, Record{Type: TypeSubscriptionMetadata, Group: g.ID, Topics: md})
			bump = true
		}
	}
	if bump {
		g.Epoch++
		recs = append(recs, Record{Type: TypeGroupMetadata, Group: g.ID, Epoch: g.Epoch})
	}
	if g.Epoch > g.AssignmentEpoch {
		recs = append(recs, e.computeTarget(g, topics)...)
	}
	m.SessionDeadline = now.Add(e.sessionTimeout(m))
	owned := normalize(req.Owned)
	if e.reconcile(g, m, owned, now) || joined {
		recs = append(recs, currentRecord(g, m))
	}
	resp = Response{MemberID: m.ID, MemberEpoch: m.Epoch}
	if joined || req.full() || !slices.Equal(before.Assigned, m.Assigned) || before.Epoch != m.Epoch ||
		(owned != nil && !slices.Equal(owned, m.Assigned)) {
		resp.Assignment = orEmpty(m.Assigned)
	}
	return resp, recs
}

// updateMember applies the request's non-null fields to m and reports
// whether an input of the assignment changed (subscription or assignor).
func (e *Engine) updateMember(m *Member, req *Request) bool {
	changed := false
	if req.RackID != nil {
		m.Rack = *req.RackID
	}
	if req.RebalanceTimeoutMs != -1 {
		m.RebalanceTimeout = time.Duration(req.RebalanceTimeoutMs) * time.Millisecond
	}
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	if req.Classic != nil {
		c := *req.Classic
		m.Classic = &c
	}
	if req.Topics != nil {
		topics := slices.Compact(slices.Sorted(slices.Values(req.Topics)))
		if !slices.Equal(topics, m.Topics) {
			m.Topics, changed = topics, true
		}
	}
	if req.Regex != nil && *req.Regex != m.Regex {
		m.Regex, changed = *req.Regex, true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.Assignor {
		m.Assignor, changed = *req.ServerAssignor, true
	}
	return changed
}
