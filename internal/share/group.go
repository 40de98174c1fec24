package share

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Membership errors; the kafka package maps them to Kafka's codes.
var (
	ErrUnknownMember  = errors.New("share: unknown member id")             // UNKNOWN_MEMBER_ID
	ErrFencedEpoch    = errors.New("share: fenced member epoch")           // FENCED_MEMBER_EPOCH
	ErrInvalidConfig  = errors.New("share: invalid group config")          // INVALID_CONFIG
	ErrGroupNotFound  = errors.New("share: group not found")               // GROUP_ID_NOT_FOUND
	ErrInvalidMessage = errors.New("share: invalid share group heartbeat") // INVALID_REQUEST
)

// The epochs a heartbeat carries besides a member's own.
const (
	JoinEpoch  int32 = 0
	LeaveEpoch int32 = -1
)

// The group configs Strand serves for share groups (Kafka's names).
const (
	ConfigLockDuration    = "share.record.lock.duration.ms"
	ConfigDeliveryLimit   = "share.delivery.count.limit"
	ConfigAutoOffsetReset = "share.auto.offset.reset"
	ConfigIsolationLevel  = "share.isolation.level"
	ConfigSessionTimeout  = "share.session.timeout.ms"
	ConfigHeartbeat       = "share.heartbeat.interval.ms"
	ConfigDeadLetterTopic = "errors.deadletterqueue.topic.name"
)

// ConfigNames lists the group configs, sorted.
var ConfigNames = []string{ConfigDeadLetterTopic, ConfigAutoOffsetReset, ConfigDeliveryLimit, ConfigHeartbeat, ConfigIsolationLevel, ConfigLockDuration, ConfigSessionTimeout}

// Member is one member of a share group.
type Member struct {
	ID, RackID, ClientID, ClientHost string
	Epoch                            int32
	Topics                           []string
	Assigned                         map[string][]int32 // as last sent to the member
	target                           map[string][]int32
	lastSeen                         time.Time
}

type group struct {
	id      string
	epoch   int32 // bumps when the target assignment changes
	members map[string]*Member
	sizes   map[string]int32 // partition counts the target was computed for
}

// Coordinator is the share-group coordinator of one node: membership,
// heartbeats, the server-side assignment and group configs. Membership is
// kept in memory (a restarted coordinator's members rejoin, as after a
// session timeout); group configs are persisted in __share_group_state,
// or kept by a ConfigStore (a cluster's metadata).
type Coordinator struct {
	host     Host
	mgr      *Manager
	now      func() time.Time
	defaults GroupDefaults
	store    ConfigStore // nil: the configs are c.mu.configs

	mu struct {
		sync.Mutex
		groups  map[string]*group
		configs map[string]map[string]string
	}
}

// GroupDefaults are the broker-wide defaults of the group configs.
type GroupDefaults struct {
	Partition         Config
	SessionTimeout    time.Duration // group.share.session.timeout.ms, 45 s
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms, 5 s
	AutoOffsetReset   string
}

// NewCoordinator returns a coordinator over host, replaying the group
// configs. SetManager must be called before heartbeats are served.
func NewCoordinator(host Host, now func() time.Time, d GroupDefaults) (*Coordinator, error) {
	if now == nil {
		now = time.Now
	}
	if d.SessionTimeout <= 0 {
		d.SessionTimeout = 45 * time.Second
	}
	if d.HeartbeatInterval <= 0 {
		d.HeartbeatInterval = 5 * time.Second
	}
	if d.AutoOffsetReset == "" {
		d.AutoOffsetReset = "latest"
	}
	d.Partition = NewPartition(d.Partition, 0).Config()
	c := &Coordinator{host: host, now: now, defaults: d}
	c.mu.groups = map[string]*group{}
	c.mu.configs = map[string]map[string]string{}
	err := host.ReplayState(func(kb, vb []byte) {
		k, err := DecodeKey(kb)
		if err != nil || k.Type != KeyGroupConfig {
			return
		}
		if vb == nil {
			delete(c.mu.configs, k.Group)
			return
		}
		var m map[string]string
		if json.Unmarshal(vb, &m) == nil {
			c.mu.configs[k.Group] = m
		}
	})
	if err != nil {
		return nil, fmt.Errorf("share: replay group configs: %w", err)
	}
	return c, nil
}

// ConfigStore keeps group configs where every node reads them (a
// cluster's metadata image): a Coordinator with one neither persists nor
// replays configs in __share_group_state.
type ConfigStore interface {
	// GroupConfigs returns the configs set on group (nil: none); the
	// caller does not change the map.
	GroupConfigs(group string) map[string]string
	// AlterGroupConfigs sets (value non-nil) or removes (nil) configs of
	// group, already checked, durably; validateOnly checks only that the
	// store can take them.
	AlterGroupConfigs(ctx context.Context, group string, set map[string]*string, validateOnly bool) error
}

// SetConfigStore makes store the keeper of group configs (before the
// coordinator serves anything).
func (c *Coordinator) SetConfigStore(store ConfigStore) { c.store = store }

// configsLocked returns group's configs (c.mu held); the caller does not
// change the map.
func (c *Coordinator) configsLocked(group string) map[string]string {
	if c.store != nil {
		return c.store.GroupConfigs(group)
	}
	return c.mu.configs[group]
}

// SetManager connects the share-partition manager, which releases the
// records of members that leave.
func (c *Coordinator) SetManager(m *Manager) { c.mgr = m }

// HeartbeatRequest is a ShareGroupHeartbeat in Strand's terms.
type HeartbeatRequest struct {
	Group, MemberID      string
	Epoch                int32
	RackID               *string
	Topics               []string // nil: unchanged
	ClientID, ClientHost string
}

// HeartbeatResponse is what the member is told.
type HeartbeatResponse struct {
	Epoch      int32
	Interval   time.Duration
	Assignment map[string][]int32 // nil: unchanged since the member's epoch
}

// Heartbeat handles one ShareGroupHeartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error) {
	if req.Group == "" || req.MemberID == "" {
		return HeartbeatResponse{}, fmt.Errorf("%w: group id and member id must be set", ErrInvalidMessage)
	}
	if req.Epoch == JoinEpoch && len(req.Topics) == 0 {
		return HeartbeatResponse{}, fmt.Errorf("%w: SubscribedTopicNames must be set in the first request", ErrInvalidMessage)
	}
	if req.Epoch < LeaveEpoch {
		return HeartbeatResponse{}, fmt.Errorf("%w: member epoch %d", ErrInvalidMessage, req.Epoch)
	}
	var released []string
	defer func() {
		for _, m := range released {
			c.mgr.ReleaseMember(ctx, req.Group, m)
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	g := c.groupLocked(req.Group)
	released = c.expireLocked(g, now)
	m := g.members[req.MemberID]
	switch {
	case req.Epoch == LeaveEpoch:
		if m == nil {
			return HeartbeatResponse{}, fmt.Errorf("%w: %s", ErrUnknownMember, req.MemberID)
		}
		delete(g.members, req.MemberID)
		released = append(released, req.MemberID)
		c.reassignLocked(g)
		return HeartbeatResponse{Epoch: LeaveEpoch}, nil
	case req.Epoch == JoinEpoch:
		if m == nil {
			m = &Member{ID: req.MemberID}
			g.members[req.MemberID] = m
		}
		m.Epoch = 0 // a rejoin gets its assignment again
	case m == nil:
		return HeartbeatResponse{}, fmt.Errorf("%w: %s", ErrUnknownMember, req.MemberID)
	case req.Epoch != m.Epoch:
		return HeartbeatResponse{}, fmt.Errorf("%w: %d, the member is at %d", ErrFencedEpoch, req.Epoch, m.Epoch)
	}
	m.lastSeen, m.ClientID, m.ClientHost = now, req.ClientID, req.ClientHost
	if req.RackID != nil {
		m.RackID = *req.RackID
	}
	if req.Topics != nil {
		m.Topics = slices.Sorted(slices.Values(req.Topics))
		m.Topics = slices.Compact(m.Topics)
	}
	c.reassignLocked(g)
	resp := HeartbeatResponse{Epoch: m.Epoch, Interval: c.durationLocked(req.Group, ConfigHeartbeat, c.defaults.HeartbeatInterval)}
	if m.Epoch != g.epoch || !sameAssignment(m.Assigned, m.target) || req.Epoch == JoinEpoch || req.Topics != nil {
		m.Epoch = max(g.epoch, 1)
		m.Assigned = m.target
		resp.Epoch, resp.Assignment = m.Epoch, m.Assigned
	}
	return resp, nil
}

func sameAssignment(a, b map[string][]int32) bool {
	return maps.EqualFunc(a, b, slices.Equal)
}

func (c *Coordinator) groupLocked(id string) *group {
	g := c.mu.groups[id]
	if g == nil {
		g = &group{id: id, members: map[string]*Member{}}
		c.mu.groups[id] = g
	}
	return g
}

// expireLocked removes members whose session timed out; it returns them so
// their records are released.
func (c *Coordinator) expireLocked(g *group, now time.Time) []string {
	timeout := c.durationLocked(g.id, ConfigSessionTimeout, c.defaults.SessionTimeout)
	var gone []string
	for id, m := range g.members {
		if now.Sub(m.lastSeen) > timeout {
			delete(g.members, id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		c.reassignLocked(g)
	}
	return gone
}

// reassignLocked recomputes the target assignment when membership,
// subscriptions or partition counts changed; the group epoch then bumps.
func (c *Coordinator) reassignLocked(g *group) {
	topics := c.host.Topics()
	subs := map[string][]string{}
	sizes := map[string]int32{}
	for id, m := range g.members {
		subs[id] = m.Topics
		for _, t := range m.Topics {
			if ti, ok := topics[t]; ok {
				sizes[t] = ti.Partitions
			}
		}
	}
	target := Assign(subs, sizes)
	changed := !maps.Equal(sizes, g.sizes)
	for id, m := range g.members {
		if !sameAssignment(m.target, target[id]) {
			changed = true
		}
		m.target = target[id]
	}
	if changed {
		g.epoch++
		g.sizes = sizes
	}
}

// Description is a share group as ShareGroupDescribe reports it; Members
// are sorted by id.
type Description struct {
	Group   string
	State   string // Empty, Stable or Dead (unknown)
	Epoch   int32
	Members []Member
}

// Describe describes groups; an unknown group is Dead, as Kafka reports it.
func (c *Coordinator) Describe(ids []string) []Description {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Description
	for _, id := range ids {
		g := c.mu.groups[id]
		if g == nil {
			out = append(out, Description{Group: id, State: "Dead"})
			continue
		}
		c.expireLockedNoRelease(g)
		d := Description{Group: id, State: "Empty", Epoch: g.epoch}
		for _, mid := range slices.Sorted(maps.Keys(g.members)) {
			d.Members = append(d.Members, *g.members[mid])
		}
		if len(d.Members) > 0 {
			d.State = "Stable"
		}
		out = append(out, d)
	}
	return out
}

// expireLockedNoRelease is expireLocked for readers: the members' records
// are released by their own lock expiry.
func (c *Coordinator) expireLockedNoRelease(g *group) { _ = c.expireLocked(g, c.now()) }

// Listing is one share group in ListGroups.
type Listing struct{ Group, State string }

// List lists the share groups this coordinator knows: those with members
// since it started and those with configs.
func (c *Coordinator) List() []Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := map[string]bool{}
	for id := range c.mu.groups {
		ids[id] = true
	}
	for id := range c.mu.configs {
		ids[id] = true
	}
	var out []Listing
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		st := "Empty"
		if g := c.mu.groups[id]; g != nil {
			c.expireLockedNoRelease(g)
			if len(g.members) > 0 {
				st = "Stable"
			}
		}
		out = append(out, Listing{Group: id, State: st})
	}
	return out
}

// Has reports whether id is a share group this coordinator knows.
func (c *Coordinator) Has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.groups[id]
	_, cfg := c.mu.configs[id]
	return ok || cfg
}

// GroupConfig returns a group's effective settings.
func (c *Coordinator) GroupConfig(group string) GroupConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	gc := GroupConfig{Partition: c.defaults.Partition, AutoOffsetReset: c.defaults.AutoOffsetReset}
	cfg := c.configsLocked(group)
	if v, ok := cfg[ConfigLockDuration]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		gc.Partition.LockDuration = time.Duration(n) * time.Millisecond
	}
	if v, ok := cfg[ConfigDeliveryLimit]; ok {
		n, _ := strconv.ParseInt(v, 10, 16)
		gc.Partition.DeliveryLimit = int16(n)
	}
	if v, ok := cfg[ConfigAutoOffsetReset]; ok {
		gc.AutoOffsetReset = v
	}
	gc.DeadLetterTopic = cfg[ConfigDeadLetterTopic]
	gc.ReadCommitted = cfg[ConfigIsolationLevel] == ReadCommitted
	return gc
}

// Configs returns the group configs set on a group (not the defaults).
func (c *Coordinator) Configs(group string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.configsLocked(group))
}

func (c *Coordinator) durationLocked(group, name string, def time.Duration) time.Duration {
	if v, ok := c.configsLocked(group)[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Duration(n) * time.Millisecond
		}
	}
	return def
}

// CheckConfig validates one group config value.
func CheckConfig(name, value string) error {
	intIn := func(lo, hi int64) error {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%w: %s=%q must be an integer in [%d, %d]", ErrInvalidConfig, name, value, lo, hi)
		}
		return nil
	}
	switch name {
	case ConfigLockDuration:
		return intIn(1000, 3_600_000)
	case ConfigDeliveryLimit:
		return intIn(2, 10)
	case ConfigSessionTimeout:
		return intIn(1000, 3_600_000)
	case ConfigHeartbeat:
		return intIn(100, 3_600_000)
	case ConfigAutoOffsetReset:
		if value != "latest" && value != "earliest" {
			return fmt.Errorf("%w: %s must be latest or earliest (by_duration is not served)", ErrInvalidConfig, name)
		}
	case ConfigIsolationLevel:
		if value != ReadUncommitted && value != ReadCommitted {
			return fmt.Errorf("%w: %s must be read_uncommitted or read_committed", ErrInvalidConfig, name)
		}
	case ConfigDeadLetterTopic:
		if value == StateTopic || len(value) > 249 {
			return fmt.Errorf("%w: %s=%q", ErrInvalidConfig, name, value)
		}
	default:
		return fmt.Errorf("%w: unknown group config %q", ErrInvalidConfig, name)
	}
	return nil
}

// AlterConfigs sets (value non-nil) or deletes (nil) group configs,
// validated first, and persists the group's configs; validateOnly checks
// without changing anything.
func (c *Coordinator) AlterConfigs(ctx context.Context, group string, set map[string]*string, validateOnly bool) error {
	for k, v := range set {
		if v != nil {
			if err := CheckConfig(k, *v); err != nil {
				return err
			}
		} else if !slices.Contains(ConfigNames, k) {
			return fmt.Errorf("%w: unknown group config %q", ErrInvalidConfig, k)
		}
	}
	if c.store != nil {
		return c.store.AlterGroupConfigs(ctx, group, set, validateOnly)
	}
	if validateOnly {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := maps.Clone(c.mu.configs[group])
	if next == nil {
		next = map[string]string{}
	}
	for k, v := range set {
		if v == nil {
			delete(next, k)
		} else {
			next[k] = *v
		}
	}
	key := EncodeKey(Key{Type: KeyGroupConfig, Group: group, Partition: -1})
	rec := StateRecord{Key: key}
	if len(next) > 0 {
		rec.Value, _ = json.Marshal(next)
	}
	if err := c.host.AppendState(ctx, []StateRecord{rec}); err != nil {
		return fmt.Errorf("share: persist configs of %s: %w", group, err)
	}
	if len(next) == 0 {
		delete(c.mu.configs, group)
	} else {
		c.mu.configs[group] = next
	}
	return nil
}

// ErrNotEmpty: the group has members (NON_EMPTY_GROUP); its offsets may
// not be altered or deleted.
var ErrNotEmpty = errors.New("share: the share group has members")

// CheckEmpty fails with ErrNotEmpty while the group has live members.
func (c *Coordinator) CheckEmpty(group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.mu.groups[group]; g != nil {
		c.expireLockedNoRelease(g)
		if len(g.members) > 0 {
			return fmt.Errorf("%w: %s has %d", ErrNotEmpty, group, len(g.members))
		}
	}
	return nil
}
