package group

// This file is the rest of membership: SyncGroup, Heartbeat, LeaveGroup.

// sync handles a SyncGroup on the actor. The leader's request carries the
// assignments; once they are stored, every member parked here gets its own
// and the group is Stable.
func (g *group) sync(req SyncRequest, reply chan<- SyncResponse) {
	fail := func(code Code) { reply <- SyncResponse{Code: code} }
	if g.state == StateDead {
		fail(CodeCoordinatorNotAvailable)
		return
	}
	if g.cg != nil {
		reply <- g.classicSyncConsumer(req)
		return
	}
	m, code := g.validateMember(req.MemberID, req.InstanceID)
	switch {
	case code != CodeNone:
		fail(code)
		return
	case req.Generation != g.generation:
		fail(CodeIllegalGeneration)
		return
	case req.ProtocolType != "" && req.ProtocolType != g.protocolType,
		req.Protocol != "" && req.Protocol != g.protocol:
		fail(CodeInconsistentGroupProtocol)
		return
	}
	switch g.state {
	case StatePreparingRebalance:
		fail(CodeRebalanceInProgress)
	case StateCompletingRebalance:
		if m.syncReply != nil {
			m.syncReply <- SyncResponse{Code: CodeRebalanceInProgress} // superseded
		}
		m.syncReply, m.synced = reply, true
		g.resetSession(m)
		if m.id == g.leader {
			g.completeSync(req.Assignments)
		}
	case StateStable:
		g.resetSession(m)
		reply <- g.syncResult(m)
	default:
		fail(CodeUnknownMemberID)
	}
}

func (g *group) syncResult(m *member) SyncResponse {
	return SyncResponse{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
}

// completeSync stores the leader's assignments (a member it left out gets
// an empty one) and hands them out. If the store fails, the generation is
// abandoned: members get COORDINATOR_NOT_AVAILABLE and the group rebalances.
func (g *group) completeSync(assignments []MemberAssignment) {
	assign := make(map[string][]byte, len(g.members))
	for id := range g.members {
		assign[id] = []byte{}
	}
	for _, a := range assignments {
		if _, ok := g.members[a.MemberID]; ok {
			assign[a.MemberID] = a.Assignment
		}
	}
	if err := g.storeMetadata(assign); err != nil {
		for _, m := range g.members {
			if m.syncReply != nil {
				m.syncReply <- SyncResponse{Code: CodeCoordinatorNotAvailable}
				m.syncReply = nil
			}
		}
		g.prepareRebalance("storing the assignment failed")
		return
	}
	g.stopPhase()
	g.setState(StateStable)
	g.log.Info("group stable", "generation", g.generation, "members", len(g.members))
	for id, m := range g.members {
		m.assignment = assign[id]
		if m.syncReply != nil {
			m.syncReply <- g.syncResult(m)
			m.syncReply = nil
			g.resetSession(m)
		}
	}
}

// heartbeat handles a Heartbeat on the actor.
func (g *group) heartbeat(req HeartbeatRequest) Code {
	if g.state == StateDead {
		return CodeCoordinatorNotAvailable
	}
	if g.cg != nil {
		return g.classicHeartbeatConsumer(req)
	}
	m, code := g.validateMember(req.MemberID, req.InstanceID)
	switch {
	case code != CodeNone:
		return code
	case req.Generation != g.generation:
		return CodeIllegalGeneration
	}
	switch g.state {
	case StatePreparingRebalance:
		g.resetSession(m)
		return CodeRebalanceInProgress // rejoin
	case StateCompletingRebalance, StateStable:
		// A member may heartbeat between its join and sync responses.
		g.resetSession(m)
		return CodeNone
	}
	return CodeUnknownMemberID
}

// leave handles a LeaveGroup batch on the actor.
func (g *group) leave(req LeaveRequest) LeaveResponse {
	if g.state == StateDead {
		return LeaveResponse{Code: CodeCoordinatorNotAvailable}
	}
	var resp LeaveResponse
	for _, lm := range req.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		if g.cg != nil {
			r.Code = g.classicLeaveConsumer(lm)
		} else {
			r.Code = g.leaveOne(lm)
		}
		resp.Members = append(resp.Members, r)
	}
	return resp
}

func (g *group) leaveOne(lm LeaveMember) Code {
	if lm.InstanceID == "" {
		if t, ok := g.pending[lm.MemberID]; ok {
			t.Stop()
			delete(g.pending, lm.MemberID)
			g.tryCompleteJoin()
			return CodeNone
		}
	}
	id := lm.MemberID
	if lm.InstanceID != "" {
		known, ok := g.static[lm.InstanceID]
		switch {
		case !ok:
			return CodeUnknownMemberID
		case id != "" && id != known:
			return CodeFencedInstanceID
		}
		id = known
	}
	m, ok := g.members[id]
	if !ok {
		return CodeUnknownMemberID
	}
	g.log.Info("member left", "member", id, "instance", lm.InstanceID, "reason", lm.Reason)
	g.removeMemberAndUpdate(m, "member "+id+" left")
	return CodeNone
}
