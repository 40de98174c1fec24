package group

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/assign"
	"github.com/strandmq/strand/internal/group/consumer"
)

// group is one consumer group's actor. Everything after the first block of
// fields is owned by the actor goroutine (run) and touched nowhere else,
// except by Coordinator.replay before the actor starts.
type group struct {
	c     *Coordinator
	id    string
	log   *slog.Logger
	inbox chan func()   // unbuffered: a sent func is run at once
	dead  chan struct{} // closed when the actor has exited

	state        State
	stateSince   time.Time // when state was entered; zero if never changed (offsets-only group)
	generation   Generation
	protocolType string
	protocol     string // chosen at the end of each join phase
	leader       string
	members      map[string]*member
	pending      map[string]Timer  // KIP-394 member ids handed out, not yet joined
	static       map[string]string // group.instance.id → member id
	offsets      map[TopicPartition]OffsetAndMetadata
	// txnOffsets are offsets committed in open transactions, by
	// producer id (txnoffsets.go).
	txnOffsets map[int64]map[TopicPartition]OffsetAndMetadata
	nextSeq    uint64

	// The join phase (PreparingRebalance) and the sync phase
	// (CompletingRebalance) each have one deadline timer. phaseSeq grows
	// whenever a phase starts or ends, so a stale timer finds it changed and
	// does nothing.
	phaseTimer Timer
	phaseSeq   uint64
	// initialDelay is set during an Empty group's first join phase;
	// newMemberAdded and initialRemaining extend it as Kafka's
	// InitialDelayedJoin does.
	initialDelay     bool
	newMemberAdded   bool
	initialRemaining time.Duration

	// The KIP-848 side (kip848.go): cg is set while this is a
	// consumer-protocol group. cgTimer fires at its next session or
	// rebalance deadline; cgSeq invalidates a timer re-armed since.
	// assignedAt is the member epoch at which each held partition was
	// given to its owner; history the last target changes.
	cg         *consumer.Group
	cgTimer    Timer
	cgSeq      uint64
	assignedAt map[assign.Partition]int32
	history    []Rebalance
	// lastTarget is the target the last history entry ended with;
	// pendingReason why the next target will be computed, when an input
	// changed without computing it (a leave, an expiry).
	lastTarget    assign.Assignment
	pendingReason string
	// unownedSince is when each released partition lost its owner.
	unownedSince map[assign.Partition]time.Time
	// rebalances and moved count every target change and the partitions
	// it moved since this coordinator loaded the group (the history keeps
	// only the last ones).
	rebalances, moved int64
}

// member is one member of the group.
type member struct {
	id, instanceID     string
	clientID, host     string
	protocols          []Protocol
	session, rebalance time.Duration
	assignment         []byte
	seq                uint64 // join order: leader choice and listing order

	joinReply chan<- JoinResponse // set while awaiting the join's end
	syncReply chan<- SyncResponse // set while awaiting the leader's sync
	synced    bool                // sent SyncGroup in this sync phase

	timer    Timer // session expiry
	timerSeq uint64
}

func newGroup(c *Coordinator, id string) *group {
	return &group{
		c:       c,
		id:      id,
		log:     c.cfg.Logger.With("group", id),
		inbox:   make(chan func()),
		dead:    make(chan struct{}),
		state:   StateEmpty,
		members: map[string]*member{},
		pending: map[string]Timer{},
		static:  map[string]string{},
		offsets: map[TopicPartition]OffsetAndMetadata{},
	}
}

// run is the actor loop. It exits on Close, or once the group is Dead or
// holds nothing worth keeping.
func (g *group) run() {
	defer close(g.dead)
	defer g.stopTimers()
	// Members recovered from the store get a fresh session, as in Kafka.
	for _, m := range g.members {
		g.resetSession(m)
	}
	g.scheduleConsumer()
	for {
		select {
		case f := <-g.inbox:
			f()
			if g.state == StateDead || g.disposable() {
				g.c.forget(g)
				return
			}
		case <-g.c.closing:
			return
		}
	}
}

// disposable reports whether the group holds nothing: never rebalanced, no
// members, no pending members, no offsets. Such a group (say, created by a
// join that failed validation) is dropped rather than listed forever.
func (g *group) disposable() bool {
	return g.state == StateEmpty && g.generation == 0 && len(g.members) == 0 &&
		len(g.pending) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 && g.cg == nil
}

// post hands fn to the actor from a timer; it gives up if the actor exited.
func (g *group) post(fn func()) {
	select {
	case g.inbox <- fn:
	case <-g.dead:
	case <-g.c.closing:
	}
}

func (g *group) after(d time.Duration, fn func()) Timer {
	return g.c.cfg.Clock.AfterFunc(d, func() { g.post(fn) })
}

func (g *group) stopTimers() {
	if g.cgTimer != nil {
		g.cgTimer.Stop()
	}
	if g.phaseTimer != nil {
		g.phaseTimer.Stop()
	}
	for _, m := range g.members {
		if m.timer != nil {
			m.timer.Stop()
		}
	}
	for _, t := range g.pending {
		t.Stop()
	}
}

func (g *group) setState(s State) {
	if g.state != s {
		g.log.Debug("group state", "from", g.state, "to", s, "generation", g.generation)
		g.stateSince = g.c.cfg.Clock.Now()
	}
	g.state = s
}

// newMemberID is Kafka's shape: the client (or instance) id, a dash, a UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// sortedMembers returns the members in join order.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// metadata returns the member's metadata for protocol.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols are exactly the member's, names,
// order and metadata: then a rejoin changes nothing.
func (m *member) matches(protocols []Protocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// candidates returns the protocols every member supports, skipping the
// member named except (a rejoining member's old protocols must not veto
// its new ones; Kafka counts them, which we consider a quirk).
func (g *group) candidates(except string) map[string]bool {
	var out map[string]bool
	for _, m := range g.members {
		if m.id == except {
			continue
		}
		mine := map[string]bool{}
		for _, p := range m.protocols {
			if out == nil || out[p.Name] {
				mine[p.Name] = true
			}
		}
		out = mine
	}
	return out // nil when there is no other member
}

// supportsProtocols reports whether a member joining with protocolType and
// protocols can be in the group (else INCONSISTENT_GROUP_PROTOCOL).
func (g *group) supportsProtocols(memberID, protocolType string, protocols []Protocol) bool {
	if protocolType == "" || len(protocols) == 0 {
		return false
	}
	others := g.candidates(memberID)
	if others == nil {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if others[p.Name] {
			return true
		}
	}
	return false
}

// selectProtocol picks the group's protocol as Kafka does: among the
// protocols all members support, each member votes for the first one in its
// preference order, and the most votes win. Kafka breaks a tie arbitrarily;
// we break it by the earliest-joined member's preference, so the choice is
// deterministic.
func (g *group) selectProtocol() string {
	cands := g.candidates("")
	votes := map[string]int{}
	ms := g.sortedMembers()
	for _, m := range ms {
		for _, p := range m.protocols {
			if cands[p.Name] {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	if len(ms) == 0 {
		return ""
	}
	for _, p := range ms[0].protocols {
		if cands[p.Name] && votes[p.Name] > bestVotes {
			best, bestVotes = p.Name, votes[p.Name]
		}
	}
	return best
}

// subscribedTopics returns the topics the members subscribe to under the
// chosen protocol, and false if that cannot be known (not a consumer group,
// or metadata that does not parse as ConsumerMemberMetadata).
func (g *group) subscribedTopics() (map[string]bool, bool) {
	if g.protocolType != "consumer" || g.protocol == "" {
		return nil, false
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadata(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out, true
}

// resetSession restarts the member's session timer.
func (g *group) resetSession(m *member) {
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
	seq := m.timerSeq
	m.timer = g.after(m.session, func() { g.sessionExpired(m, seq) })
}

func (g *group) sessionExpired(m *member, seq uint64) {
	if g.members[m.id] != m || m.timerSeq != seq {
		return // stale timer
	}
	if m.joinReply != nil || m.syncReply != nil {
		// A member parked in a join or sync is alive: it is waiting on us.
		g.resetSession(m)
		return
	}
	g.log.Info("member session expired", "member", m.id, "generation", g.generation)
	g.removeMemberAndUpdate(m, "session timeout")
}

// addPending records a KIP-394 member id handed out with MEMBER_ID_REQUIRED;
// it expires if the member does not rejoin within its session timeout.
func (g *group) addPending(id string, session time.Duration) {
	g.pending[id] = g.after(session, func() {
		if _, ok := g.pending[id]; !ok {
			return
		}
		delete(g.pending, id)
		g.tryCompleteJoin()
	})
}

// removeMember drops m from the group, answering any request it has parked
// with code.
func (g *group) removeMember(m *member, code Code) {
	delete(g.members, m.id)
	if m.instanceID != "" && g.static[m.instanceID] == m.id {
		delete(g.static, m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
	if m.joinReply != nil {
		m.joinReply <- JoinResponse{Code: code, MemberID: m.id, Generation: NoGeneration}
		m.joinReply = nil
	}
	if m.syncReply != nil {
		m.syncReply <- SyncResponse{Code: code}
		m.syncReply = nil
	}
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// removeMemberAndUpdate removes a member that left or expired and moves the
// group on: a rebalance if it was settled, or perhaps the join's end.
func (g *group) removeMemberAndUpdate(m *member, reason string) {
	g.removeMember(m, CodeUnknownMemberID)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		g.prepareRebalance(reason)
		g.tryCompleteJoin() // the last member left: straight to Empty
	case StatePreparingRebalance:
		g.tryCompleteJoin()
	}
}

// resetMetadata forgets everything but the offsets (a group tombstone).
func (g *group) resetMetadata() {
	g.state, g.generation = StateEmpty, 0
	g.protocolType, g.protocol, g.leader = "", "", ""
	g.members = map[string]*member{}
	g.static = map[string]string{}
}

// loadMetadata restores the group from a replayed GroupMetadataValue: with
// members it is Stable in its generation, without them Empty.
func (g *group) loadMetadata(v *kmsg.GroupMetadataValue) {
	g.resetMetadata()
	g.generation = Generation(v.Generation)
	g.protocolType = v.ProtocolType
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for _, vm := range v.Members {
		m := &member{
			id:         vm.MemberID,
			clientID:   vm.ClientID,
			host:       vm.ClientHost,
			protocols:  []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
			session:    time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalance:  time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			assignment: vm.Assignment,
			seq:        g.nextSeq,
		}
		g.nextSeq++
		if m.rebalance <= 0 {
			m.rebalance = m.session // a v0 record has no rebalance timeout
		}
		if vm.InstanceID != nil {
			m.instanceID = *vm.InstanceID
			g.static[m.instanceID] = m.id
		}
		g.members[m.id] = m
	}
	if len(g.members) > 0 {
		g.state = StateStable
	}
	if v.CurrentStateTimestamp > 0 {
		g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
	}
}

// metadataRecord encodes the group as a GroupMetadataValue record, with
// assignments taken from assign when it is non-nil.
func (g *group) metadataRecord(assign map[string][]byte) StoreRecord {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = int32(g.generation)
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.c.cfg.Clock.Now().UnixMilli()
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		if m.instanceID != "" {
			inst := m.instanceID
			vm.InstanceID = &inst
		}
		vm.ClientID, vm.ClientHost = m.clientID, m.host
		vm.RebalanceTimeoutMillis = int32(m.rebalance / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.session / time.Millisecond)
		vm.Subscription = m.metadata(g.protocol)
		vm.Assignment = m.assignment
		if assign != nil {
			vm.Assignment = assign[m.id]
		}
		v.Members = append(v.Members, vm)
	}
	return StoreRecord{Key: groupKey(g.id), Value: v.AppendTo(nil)}
}

// storeMetadata durably writes the group's metadata. The actor waits: no
// other request of this group is served meanwhile, which is what makes the
// write and the state change it records one step.
func (g *group) storeMetadata(assign map[string][]byte) error {
	err := g.c.cfg.Store.Append(g.c.ctx, []StoreRecord{g.metadataRecord(assign)})
	if err != nil {
		g.log.Warn("storing group metadata failed", "generation", g.generation, "err", err)
	}
	return err
}
