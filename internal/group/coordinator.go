package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/group/consumer"
)

// Kafka's defaults for the coordinator's broker settings.
const (
	DefaultMinSessionTimeout     = 6 * time.Second    // group.min.session.timeout.ms
	DefaultMaxSessionTimeout     = 30 * time.Minute   // group.max.session.timeout.ms
	DefaultInitialRebalanceDelay = 3 * time.Second    // group.initial.rebalance.delay.ms
	DefaultMaxMetadataSize       = 4096               // offset.metadata.max.bytes
	DefaultOffsetsRetention      = 7 * 24 * time.Hour // offsets.retention.minutes
)

// Config configures a Coordinator. Zero values take Kafka's defaults.
type Config struct {
	// Store persists offsets and group metadata; required.
	Store Store
	// Clock defaults to SystemClock.
	Clock Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound a member's
	// session timeout (INVALID_SESSION_TIMEOUT outside them).
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// InitialRebalanceDelay is how long the first rebalance of an Empty group
	// waits for more members to join. Zero means the default (3s); a
	// negative value means no delay, as tests use.
	InitialRebalanceDelay time.Duration
	// MaxMetadataSize bounds a committed offset's metadata string
	// (OFFSET_METADATA_TOO_LARGE above it).
	MaxMetadataSize int
	// PartitionExists, if set, is asked for every committed partition; a
	// false answer is UNKNOWN_TOPIC_OR_PARTITION. Nil accepts all.
	PartitionExists func(TopicPartition) bool
	// OffsetsRetention is offsets.retention.minutes: how long committed
	// offsets outlive their group's consumers (see ExpireOffsets). Zero
	// means the default (7 days); negative, never.
	OffsetsRetention time.Duration
	// Topics, if set, reports every topic of the cluster with its
	// partition count: KIP-848 consumer groups resolve their members'
	// subscriptions against it. Nil means no topics (empty assignments).
	Topics func() map[string]int32
	// Consumer holds the group.consumer.* settings of KIP-848 consumer
	// groups; zero values take Kafka's defaults.
	Consumer consumer.Config
	// MigrationPolicy is group.consumer.migration.policy: which live
	// groups convert between the classic and consumer protocols
	// (migrate.go). "" is Kafka 4's default, bidirectional.
	MigrationPolicy MigrationPolicy
}

// Coordinator is the group coordinator for the classic protocol. Each group
// is an actor: one goroutine owns all of the group's state and timers, and
// every method here hands the group's actor a function and waits for it.
// All methods are safe for concurrent use.
type Coordinator struct {
	cfg     Config
	engine  *consumer.Engine // KIP-848 steps (kip848.go)
	ctx     context.Context  // cancelled by Close; bounds Store appends
	cancel  context.CancelFunc
	closing chan struct{}
	wg      sync.WaitGroup
	// rebalances counts consumer-group target changes (Rebalances).
	rebalances atomic.Int64

	mu struct {
		sync.Mutex
		groups map[string]*group
		closed bool
	}
}

var (
	errClosed  = errors.New("group: coordinator closed")
	errNoGroup = errors.New("group: no such group")
)

// New replays cfg.Store and starts one actor per recovered group.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Store == nil {
		return nil, errors.New("group: Config.Store is required")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.GroupMinSessionTimeout == 0 {
		cfg.GroupMinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.GroupMaxSessionTimeout == 0 {
		cfg.GroupMaxSessionTimeout = DefaultMaxSessionTimeout
	}
	switch {
	case cfg.InitialRebalanceDelay == 0:
		cfg.InitialRebalanceDelay = DefaultInitialRebalanceDelay
	case cfg.InitialRebalanceDelay < 0:
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.MaxMetadataSize == 0 {
		cfg.MaxMetadataSize = DefaultMaxMetadataSize
	}
	if cfg.OffsetsRetention == 0 {
		cfg.OffsetsRetention = DefaultOffsetsRetention
	}
	if cfg.Topics == nil {
		cfg.Topics = func() map[string]int32 { return nil }
	}
	c := &Coordinator{cfg: cfg, closing: make(chan struct{}), engine: consumer.New(cfg.Consumer)}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.groups = map[string]*group{}
	if err := c.replay(); err != nil {
		c.cancel()
		return nil, err
	}
	for _, g := range c.mu.groups {
		c.goTracked(g.run)
	}
	return c, nil
}

// replay rebuilds the groups from the store. It runs before any actor
// starts, so it touches group state directly.
func (c *Coordinator) replay() error {
	skipped := 0
	consumers := consumerReplayer{}
	histories := map[string][]Rebalance{}
	err := c.cfg.Store.Replay(func(r StoreRecord) error {
		if r.Txn != nil && r.Txn.Marker {
			c.replayTxn(r, decodedRecord{})
			return nil
		}
		if id, ok := isHistoryKey(r.Key); ok {
			if r.Value == nil {
				delete(histories, id)
				return nil
			}
			h, err := decodeHistory(r.Value)
			if err != nil {
				c.cfg.Logger.Error("group: skipping an unreadable rebalance history", "group", id, "err", err)
				return nil
			}
			histories[id] = h
			return nil
		}
		if isConsumerKey(r.Key) {
			cr, err := consumer.Decode(r.Key, r.Value)
			if err != nil {
				skipped++
				c.cfg.Logger.Error("group: skipping an unreadable __consumer_offsets record", "err", err, "key", fmt.Sprintf("%x", r.Key))
				return nil
			}
			consumers.add(cr)
			return nil
		}
		d, err := decodeRecord(r)
		if err != nil {
			// One unreadable record (a newer schema, a bug) must not keep
			// every other group from loading: skip it, loudly.
			skipped++
			c.cfg.Logger.Error("group: skipping an unreadable __consumer_offsets record", "err", err, "key", fmt.Sprintf("%x", r.Key))
			return nil
		}
		if c.replayTxn(r, d) {
			return nil
		}
		g := c.mu.groups[d.group]
		if g == nil {
			g = newGroup(c, d.group)
			c.mu.groups[d.group] = g
		}
		switch {
		case d.offset != nil && d.delete:
			delete(g.offsets, d.offset.tp)
		case d.offset != nil:
			g.offsets[d.offset.tp] = d.offset.value
		case d.delete:
			g.resetMetadata()
		default:
			g.loadMetadata(d.meta)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("group: replaying __consumer_offsets: %w", err)
	}
	if skipped > 0 {
		c.cfg.Logger.Error("group: replay skipped unreadable records", "skipped", skipped)
	}
	c.restoreConsumers(consumers, histories)
	for id, g := range c.mu.groups {
		if g.disposable() {
			delete(c.mu.groups, id)
		}
	}
	return nil
}

// goTracked starts fn on a goroutine that Close waits for.
func (c *Coordinator) goTracked(fn func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
}

// Close stops every group's actor and timers and waits for them. Calls in
// flight, including joins waiting for a rebalance, return
// COORDINATOR_NOT_AVAILABLE. Close is idempotent.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	c.mu.Unlock()
	close(c.closing)
	c.cancel()
	c.wg.Wait()
}

// lookup returns the group's actor, creating it if create is set.
func (c *Coordinator) lookup(id string, create bool) (*group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, errClosed
	}
	g := c.mu.groups[id]
	if g == nil {
		if !create {
			return nil, errNoGroup
		}
		g = newGroup(c, id)
		c.mu.groups[id] = g
		c.goTracked(g.run)
	}
	return g, nil
}

// forget removes g from the coordinator; its actor is about to exit.
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.groups[g.id] == g {
		delete(c.mu.groups, g.id)
	}
}

// do runs fn on the group's actor and returns once it has run. A group whose
// actor exits first (deleted) is looked up again.
func (c *Coordinator) do(ctx context.Context, id string, create bool, fn func(*group)) (*group, error) {
	for {
		g, err := c.lookup(id, create)
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		select {
		case g.inbox <- func() { fn(g); close(done) }:
			// The inbox is unbuffered: the actor took fn and runs it now.
			<-done
			return g, nil
		case <-g.dead:
			continue
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closing:
			return nil, errClosed
		}
	}
}

// await waits for a reply the actor sends later (a join or sync parked
// until the rebalance completes).
func await[T any](ctx context.Context, g *group, reply <-chan T) (T, bool) {
	var zero T
	select {
	case r := <-reply:
		return r, true
	case <-ctx.Done():
		return zero, false
	case <-g.dead:
		// The actor may have replied just before exiting.
		select {
		case r := <-reply:
			return r, true
		default:
			return zero, false
		}
	}
}

// Join handles JoinGroup. It waits until the group's join phase ends (or
// the join fails). If ctx ends first, or the coordinator closes, it returns
// COORDINATOR_NOT_AVAILABLE, which clients retry; the member stays parked
// in the group until the join phase ends, as a Kafka member whose
// connection dropped does.
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) JoinResponse {
	fail := func(code Code) JoinResponse {
		return JoinResponse{Code: code, MemberID: req.MemberID, Generation: NoGeneration}
	}
	if req.GroupID == "" {
		return fail(CodeInvalidGroupID)
	}
	if req.SessionTimeout < c.cfg.GroupMinSessionTimeout || req.SessionTimeout > c.cfg.GroupMaxSessionTimeout {
		return fail(CodeInvalidSessionTimeout)
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout // JoinGroup v0 has none
	}
	reply := make(chan JoinResponse, 1)
	// Only a new member may create the group; a known member id for a group
	// that does not exist is UNKNOWN_MEMBER_ID, as in Kafka.
	g, err := c.do(ctx, req.GroupID, req.MemberID == "", func(g *group) { g.join(req, reply) })
	switch {
	case errors.Is(err, errNoGroup):
		return fail(CodeUnknownMemberID)
	case err != nil:
		return fail(CodeCoordinatorNotAvailable)
	}
	r, ok := await(ctx, g, reply)
	if !ok {
		return fail(CodeCoordinatorNotAvailable)
	}
	return r
}

// Sync handles SyncGroup. A follower waits for the leader's assignment.
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) SyncResponse {
	if req.GroupID == "" {
		return SyncResponse{Code: CodeInvalidGroupID}
	}
	reply := make(chan SyncResponse, 1)
	g, err := c.do(ctx, req.GroupID, false, func(g *group) { g.sync(req, reply) })
	switch {
	case errors.Is(err, errNoGroup):
		return SyncResponse{Code: CodeUnknownMemberID}
	case err != nil:
		return SyncResponse{Code: CodeCoordinatorNotAvailable}
	}
	r, ok := await(ctx, g, reply)
	if !ok {
		return SyncResponse{Code: CodeCoordinatorNotAvailable}
	}
	return r
}

// Heartbeat handles Heartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, req HeartbeatRequest) Code {
	if req.GroupID == "" {
		return CodeInvalidGroupID
	}
	var code Code
	_, err := c.do(ctx, req.GroupID, false, func(g *group) { code = g.heartbeat(req) })
	return codeOr(code, err)
}

// codeOr maps a failure to reach the group's actor to a Code.
func codeOr(code Code, err error) Code {
	switch {
	case errors.Is(err, errNoGroup):
		return CodeUnknownMemberID
	case err != nil:
		return CodeCoordinatorNotAvailable
	}
	return code
}

// Leave handles LeaveGroup: each member leaves, and the group rebalances.
func (c *Coordinator) Leave(ctx context.Context, req LeaveRequest) LeaveResponse {
	if req.GroupID == "" {
		return LeaveResponse{Code: CodeInvalidGroupID}
	}
	var resp LeaveResponse
	_, err := c.do(ctx, req.GroupID, false, func(g *group) { resp = g.leave(req) })
	switch {
	case errors.Is(err, errNoGroup):
		// Kafka: top-level NONE, every member UNKNOWN_MEMBER_ID.
		for _, m := range req.Members {
			resp.Members = append(resp.Members, LeaveMemberResult{MemberID: m.MemberID, InstanceID: m.InstanceID, Code: CodeUnknownMemberID})
		}
	case err != nil:
		return LeaveResponse{Code: CodeCoordinatorNotAvailable}
	}
	return resp
}

// Describe handles DescribeGroups, one description per id in order. An
// unknown group is Dead with CodeNone, as in Kafka.
func (c *Coordinator) Describe(ctx context.Context, groupIDs []string) []GroupDescription {
	out := make([]GroupDescription, 0, len(groupIDs))
	for _, id := range groupIDs {
		d := GroupDescription{GroupID: id, State: StateDead}
		if id == "" {
			d.Code = CodeInvalidGroupID
			out = append(out, d)
			continue
		}
		_, err := c.do(ctx, id, false, func(g *group) { d = g.describe() })
		if err != nil && !errors.Is(err, errNoGroup) {
			d = GroupDescription{GroupID: id, State: StateDead, Code: CodeCoordinatorNotAvailable}
		}
		out = append(out, d)
	}
	return out
}

// groupIDs is every group's id, sorted.
func (c *Coordinator) groupIDs() []string {
	c.mu.Lock()
	ids := make([]string, 0, len(c.mu.groups))
	for id := range c.mu.groups {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	sort.Strings(ids)
	return ids
}

// List handles ListGroups: every group whose state is in states (all groups
// when states is empty), sorted by id. A consumer-protocol group is matched
// by its State mapped onto the classic states (see GroupListing).
func (c *Coordinator) List(ctx context.Context, states []State) []GroupListing {
	ids := c.groupIDs()
	var out []GroupListing
	for _, id := range ids {
		var l GroupListing
		if _, err := c.do(ctx, id, false, func(g *group) {
			if g.cg != nil {
				l = g.consumerListing()
				return
			}
			l = GroupListing{GroupID: g.id, ProtocolType: g.protocolType, State: g.state, Type: TypeClassic, StateName: g.state.String()}
		}); err != nil {
			continue // deleted meanwhile, or closing
		}
		if len(states) == 0 || containsState(states, l.State) {
			out = append(out, l)
		}
	}
	return out
}

func containsState(states []State, s State) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// Delete handles DeleteGroups. Only an Empty group can be deleted
// (NON_EMPTY_GROUP otherwise); its offsets and metadata are tombstoned.
func (c *Coordinator) Delete(ctx context.Context, groupIDs []string) map[string]Code {
	out := make(map[string]Code, len(groupIDs))
	for _, id := range groupIDs {
		if id == "" {
			out[id] = CodeInvalidGroupID
			continue
		}
		var code Code
		_, err := c.do(ctx, id, false, func(g *group) { code = g.delete() })
		switch {
		case errors.Is(err, errNoGroup):
			code = CodeGroupIDNotFound
		case err != nil:
			code = CodeCoordinatorNotAvailable
		}
		out[id] = code
	}
	return out
}

// CommitOffsets handles OffsetCommit, with Kafka's generation and member
// checks. A simple commit (NoGeneration, no member id) to a group that does
// not exist creates it, Empty.
func (c *Coordinator) CommitOffsets(ctx context.Context, req OffsetCommitRequest) map[TopicPartition]Code {
	all := func(code Code) map[TopicPartition]Code {
		out := make(map[TopicPartition]Code, len(req.Offsets))
		for tp := range req.Offsets {
			out[tp] = code
		}
		return out
	}
	if req.GroupID == "" {
		return all(CodeInvalidGroupID)
	}
	simple := req.Generation < 0 && req.MemberID == "" && req.InstanceID == ""
	var out map[TopicPartition]Code
	_, err := c.do(ctx, req.GroupID, simple, func(g *group) { out = g.commitOffsets(req) })
	switch {
	case errors.Is(err, errNoGroup) && req.Version >= 9:
		return all(CodeGroupIDNotFound) // Kafka: v9+ names the missing group
	case errors.Is(err, errNoGroup):
		return all(CodeIllegalGeneration)
	case err != nil:
		return all(CodeCoordinatorNotAvailable)
	}
	return out
}

// FetchOffsets handles OffsetFetch for one group: the committed offsets of
// partitions (all of the group's when partitions is nil). A partition with
// no committed offset is absent from the map; the wire handler answers -1
// for it. An unknown group has no offsets and CodeNone.
func (c *Coordinator) FetchOffsets(ctx context.Context, groupID string, partitions []TopicPartition) (map[TopicPartition]OffsetAndMetadata, Code) {
	return c.FetchMemberOffsets(ctx, groupID, nil, -1, partitions)
}

// FetchMemberOffsets is FetchOffsets for OffsetFetch v9+, which names the
// member asking and its epoch (nil and -1 for an admin fetch): in a
// consumer-protocol group the member must exist (UNKNOWN_MEMBER_ID) at that
// epoch (STALE_MEMBER_EPOCH). Classic groups ignore both, as Kafka does.
func (c *Coordinator) FetchMemberOffsets(ctx context.Context, groupID string, memberID *string, epoch int32, partitions []TopicPartition) (map[TopicPartition]OffsetAndMetadata, Code) {
	return c.fetchOffsets(ctx, groupID, memberID, epoch, partitions, nil)
}

// fetchOffsets is FetchMemberOffsets, running also (if set) on the
// group's actor in the same step.
func (c *Coordinator) fetchOffsets(ctx context.Context, groupID string, memberID *string, epoch int32, partitions []TopicPartition, also func(*group)) (map[TopicPartition]OffsetAndMetadata, Code) {
	if groupID == "" {
		return nil, CodeInvalidGroupID
	}
	out := map[TopicPartition]OffsetAndMetadata{}
	code := CodeNone
	_, err := c.do(ctx, groupID, false, func(g *group) {
		if g.cg != nil {
			if code = g.consumerFetchCheck(memberID, epoch); code != CodeNone {
				return
			}
		}
		if also != nil {
			also(g)
		}
		if partitions == nil {
			for tp, o := range g.offsets {
				out[tp] = o
			}
			return
		}
		for _, tp := range partitions {
			if o, ok := g.offsets[tp]; ok {
				out[tp] = o
			}
		}
	})
	switch {
	case errors.Is(err, errNoGroup):
		return out, CodeNone
	case err != nil:
		return nil, CodeCoordinatorNotAvailable
	case code != CodeNone:
		return nil, code
	}
	return out, CodeNone
}

// Rebalances is how many times a consumer group's target assignment has
// changed on this coordinator (strand_group_rebalances_total).
func (c *Coordinator) Rebalances() int64 { return c.rebalances.Load() }

// DeleteOffsets handles OffsetDelete. The top-level code is
// GROUP_ID_NOT_FOUND for an unknown group and NON_EMPTY_GROUP for a group
// with members that is not a "consumer" group; a partition of a topic that
// a member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, partitions []TopicPartition) (Code, map[TopicPartition]Code) {
	if groupID == "" {
		return CodeInvalidGroupID, nil
	}
	var (
		code Code
		out  map[TopicPartition]Code
	)
	_, err := c.do(ctx, groupID, false, func(g *group) { code, out = g.deleteOffsets(partitions) })
	switch {
	case errors.Is(err, errNoGroup):
		return CodeGroupIDNotFound, nil
	case err != nil:
		return CodeCoordinatorNotAvailable, nil
	}
	return code, out
}
