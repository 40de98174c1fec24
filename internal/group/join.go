package group

import "time"

// This file is the join phase: JoinGroup, and the transitions into and out
// of PreparingRebalance.

// join handles a JoinGroup on the actor. It answers on reply now (an error,
// or a member whose rejoin changes nothing) or when the join phase ends.
func (g *group) join(req JoinRequest, reply chan<- JoinResponse) {
	fail := func(code Code) {
		reply <- JoinResponse{Code: code, MemberID: req.MemberID, Generation: NoGeneration}
	}
	if g.state == StateDead {
		fail(CodeCoordinatorNotAvailable)
		return
	}
	if g.cg != nil {
		// A consumer-protocol group: an empty one becomes classic; one
		// with members takes the joiner as a classic member of the
		// consumer group (migrate.go), unless the migration policy is
		// disabled or its protocol is not "consumer".
		if len(g.cg.Members) > 0 {
			g.classicJoinConsumer(req, reply)
			return
		}
		if err := g.dropConsumer(); err != nil {
			fail(CodeCoordinatorNotAvailable)
			return
		}
		g.log.Info("empty consumer group converted to a classic group")
	}
	if !g.supportsProtocols(req.MemberID, req.ProtocolType, req.Protocols) {
		fail(CodeInconsistentGroupProtocol)
		return
	}
	if req.MemberID == "" {
		g.joinNew(req, reply)
		return
	}
	if _, ok := g.pending[req.MemberID]; ok {
		// The second half of the KIP-394 handshake.
		g.pending[req.MemberID].Stop()
		delete(g.pending, req.MemberID)
		g.addMemberAndRebalance(req.MemberID, req, reply)
		return
	}
	m, code := g.validateMember(req.MemberID, req.InstanceID)
	if code != CodeNone {
		fail(code)
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		g.updateMemberAndRebalance(m, req, reply)
	case StateCompletingRebalance:
		if m.matches(req.Protocols) {
			// A retried join of the generation just formed: answer again.
			reply <- g.joinResult(m)
			return
		}
		g.updateMemberAndRebalance(m, req, reply)
	case StateStable:
		if m.id == g.leader || !m.matches(req.Protocols) {
			// The leader rejoining is how a client asks for a rebalance
			// (say, its metadata changed); so is new member metadata.
			g.updateMemberAndRebalance(m, req, reply)
			return
		}
		reply <- g.joinResult(m)
	default:
		fail(CodeUnknownMemberID)
	}
}

// validateMember checks a request's member id (and instance id) against the
// group, as Kafka's validateMember does.
func (g *group) validateMember(memberID, instanceID string) (*member, Code) {
	if instanceID != "" {
		id, ok := g.static[instanceID]
		switch {
		case !ok:
			return nil, CodeUnknownMemberID
		case id != memberID:
			return nil, CodeFencedInstanceID
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, CodeUnknownMemberID
	}
	return m, CodeNone
}

func (g *group) joinNew(req JoinRequest, reply chan<- JoinResponse) {
	if req.InstanceID != "" {
		if old, ok := g.static[req.InstanceID]; ok {
			g.replaceStatic(g.members[old], req, reply)
			return
		}
		// Static members skip the KIP-394 handshake: the instance id
		// already identifies them.
		g.addMemberAndRebalance(newMemberID(req.InstanceID), req, reply)
		return
	}
	id := newMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		g.addPending(id, req.SessionTimeout)
		reply <- JoinResponse{Code: CodeMemberIDRequired, MemberID: id, Generation: NoGeneration}
		return
	}
	g.addMemberAndRebalance(id, req, reply)
}

func (g *group) addMemberAndRebalance(id string, req JoinRequest, reply chan<- JoinResponse) {
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	m := &member{id: id, instanceID: req.InstanceID, seq: g.nextSeq}
	g.nextSeq++
	g.updateMember(m, req, reply)
	g.members[id] = m
	if m.instanceID != "" {
		g.static[m.instanceID] = id
	}
	if g.leader == "" {
		g.leader = id
	}
	g.log.Info("member joined", "member", id, "instance", req.InstanceID, "client", req.ClientID)
	if g.state == StatePreparingRebalance && g.initialDelay {
		g.newMemberAdded = true
	}
	g.maybePrepareRebalance("member " + id + " joined")
	g.tryCompleteJoin()
}

// updateMember takes the request's protocols, timeouts and client details,
// and parks reply until the join phase ends.
func (g *group) updateMember(m *member, req JoinRequest, reply chan<- JoinResponse) {
	m.clientID, m.host = req.ClientID, req.ClientHost
	m.protocols = req.Protocols
	m.session, m.rebalance = req.SessionTimeout, req.RebalanceTimeout
	if m.joinReply != nil {
		// A join superseded by a newer one from the same member: its
		// client no longer waits for it, but answer anyway.
		m.joinReply <- JoinResponse{Code: CodeRebalanceInProgress, MemberID: m.id, Generation: NoGeneration}
	}
	m.joinReply = reply
}

func (g *group) updateMemberAndRebalance(m *member, req JoinRequest, reply chan<- JoinResponse) {
	g.updateMember(m, req, reply)
	g.maybePrepareRebalance("member " + m.id + " rejoined")
	g.tryCompleteJoin()
}

// replaceStatic handles a known group.instance.id joining with no member id
// (KIP-345): the instance gets a new member id and the old one is fenced.
// A Stable group whose chosen protocol would not change keeps its
// assignment and does not rebalance; the member syncs to get it back.
func (g *group) replaceStatic(old *member, req JoinRequest, reply chan<- JoinResponse) {
	oldID, oldProtocols := old.id, old.protocols
	newID := newMemberID(req.InstanceID)
	g.renameMember(old, newID)
	g.log.Info("static member replaced", "instance", req.InstanceID, "old", oldID, "member", newID)
	if g.state != StateStable {
		g.updateMemberAndRebalance(old, req, reply)
		return
	}
	old.protocols = req.Protocols
	if g.selectProtocol() != g.protocol {
		old.protocols = oldProtocols
		g.updateMemberAndRebalance(old, req, reply)
		return
	}
	if err := g.storeMetadata(nil); err != nil {
		old.protocols = oldProtocols
		g.renameMember(old, oldID)
		reply <- JoinResponse{Code: CodeCoordinatorNotAvailable, Generation: NoGeneration}
		return
	}
	old.clientID, old.host = req.ClientID, req.ClientHost
	old.session, old.rebalance = req.SessionTimeout, req.RebalanceTimeout
	g.resetSession(old)
	reply <- g.joinResult(old)
}

// renameMember gives m a new id; requests parked under the old id are
// answered FENCED_INSTANCE_ID.
func (g *group) renameMember(m *member, id string) {
	if m.joinReply != nil {
		m.joinReply <- JoinResponse{Code: CodeFencedInstanceID, MemberID: m.id, Generation: NoGeneration}
		m.joinReply = nil
	}
	if m.syncReply != nil {
		m.syncReply <- SyncResponse{Code: CodeFencedInstanceID}
		m.syncReply = nil
	}
	delete(g.members, m.id)
	if g.leader == m.id {
		g.leader = id
	}
	m.id = id
	g.members[id] = m
	g.static[m.instanceID] = id
}

// joinResult is the JoinResponse of the current generation for m; only the
// leader gets the member list.
func (g *group) joinResult(m *member) JoinResponse {
	r := JoinResponse{
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Leader:       g.leader,
		MemberID:     m.id,
	}
	if m.id == g.leader {
		for _, o := range g.sortedMembers() {
			r.Members = append(r.Members, JoinMember{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadata(g.protocol)})
		}
	}
	return r
}

func (g *group) maybePrepareRebalance(reason string) {
	switch g.state {
	case StateEmpty, StateStable, StateCompletingRebalance:
		g.prepareRebalance(reason)
	}
}

// prepareRebalance starts a join phase: every member must rejoin before
// the largest rebalance timeout among them, or be dropped.
func (g *group) prepareRebalance(reason string) {
	if g.state == StateCompletingRebalance {
		// The generation being formed is abandoned: members waiting for
		// their assignment must rejoin.
		for _, m := range g.members {
			m.assignment = nil
			if m.syncReply != nil {
				m.syncReply <- SyncResponse{Code: CodeRebalanceInProgress}
				m.syncReply = nil
			}
		}
	}
	wasEmpty := g.state == StateEmpty
	g.setState(StatePreparingRebalance)
	g.log.Info("preparing rebalance", "reason", reason, "generation", g.generation)
	timeout := g.maxRebalanceTimeout()
	if wasEmpty && g.c.cfg.InitialRebalanceDelay > 0 {
		delay := min(g.c.cfg.InitialRebalanceDelay, timeout)
		g.initialDelay, g.newMemberAdded = true, false
		g.initialRemaining = max(timeout-delay, 0)
		g.armPhase(delay, g.initialDelayExpired)
		return
	}
	g.initialDelay = false
	g.armPhase(timeout, g.completeJoin)
}

func (g *group) maxRebalanceTimeout() (d time.Duration) {
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// armPhase replaces the phase timer with one calling fn after d, unless the
// phase has changed by then.
func (g *group) armPhase(d time.Duration, fn func()) {
	g.stopPhase()
	seq := g.phaseSeq
	g.phaseTimer = g.after(d, func() {
		if g.phaseSeq == seq {
			fn()
		}
	})
}

func (g *group) stopPhase() {
	if g.phaseTimer != nil {
		g.phaseTimer.Stop()
		g.phaseTimer = nil
	}
	g.phaseSeq++
}

// initialDelayExpired extends a new group's first join phase while members
// keep arriving, up to the rebalance timeout (Kafka's InitialDelayedJoin).
func (g *group) initialDelayExpired() {
	if g.newMemberAdded && g.initialRemaining > 0 {
		delay := min(g.c.cfg.InitialRebalanceDelay, g.initialRemaining)
		g.newMemberAdded = false
		g.initialRemaining -= delay
		g.armPhase(delay, g.initialDelayExpired)
		return
	}
	g.initialDelay = false
	g.completeJoin()
}

// tryCompleteJoin ends the join phase early once every member has rejoined
// and no KIP-394 member is still expected.
func (g *group) tryCompleteJoin() {
	if g.state != StatePreparingRebalance || g.initialDelay || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.joinReply == nil {
			return
		}
	}
	g.completeJoin()
}

// completeJoin ends the join phase: members that did not rejoin are dropped
// (static ones are kept, as Kafka keeps them until their session expires),
// the next generation starts, and every joined member gets its response.
func (g *group) completeJoin() {
	if g.state != StatePreparingRebalance {
		return
	}
	joined := 0
	for _, m := range g.sortedMembers() {
		switch {
		case m.joinReply != nil:
			joined++
		case m.instanceID == "":
			g.log.Info("member did not rejoin in time", "member", m.id)
			g.removeMember(m, CodeUnknownMemberID)
		}
	}
	if joined == 0 && len(g.members) > 0 {
		// Only static members that have not rejoined are left: wait for
		// them another rebalance timeout (Kafka does the same).
		g.armPhase(g.maxRebalanceTimeout(), g.completeJoin)
		return
	}
	g.stopPhase()
	g.initialDelay = false
	if l, ok := g.members[g.leader]; !ok || l.joinReply == nil {
		for _, m := range g.sortedMembers() {
			if m.joinReply != nil {
				g.leader = m.id
				break
			}
		}
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.setState(StateEmpty)
		g.log.Info("group is empty", "generation", g.generation)
		_ = g.storeMetadata(nil) // an error leaves the old record: harmless
		return
	}
	g.protocol = g.selectProtocol()
	g.setState(StateCompletingRebalance)
	g.log.Info("join phase complete", "generation", g.generation, "protocol", g.protocol,
		"leader", g.leader, "members", len(g.members))
	for _, m := range g.members {
		m.synced = false
		m.assignment = nil
		if m.joinReply != nil {
			m.joinReply <- g.joinResult(m)
			m.joinReply = nil
		}
		g.resetSession(m)
	}
	g.armPhase(g.maxRebalanceTimeout(), g.syncExpired)
}

// syncExpired ends a sync phase the leader never completed: members that
// did not sync are dropped and the group rebalances (Kafka's pending-sync
// timeout).
func (g *group) syncExpired() {
	if g.state != StateCompletingRebalance {
		return
	}
	for _, m := range g.sortedMembers() {
		if !m.synced {
			g.log.Info("member did not sync in time", "member", m.id)
			g.removeMember(m, CodeUnknownMemberID)
		}
	}
	g.prepareRebalance("members did not sync in time")
	g.tryCompleteJoin() // no member left: straight to Empty
}
