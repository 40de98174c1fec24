package group

// This file holds the group-wide admin operations: DescribeGroups and
// DeleteGroups.

// describe reports the group as DescribeGroups does. As in Kafka, the
// protocol and each member's metadata and assignment are reported only
// while the group is Stable.
func (g *group) describe() GroupDescription {
	if g.cg != nil {
		// Kafka 4: DescribeGroups describes classic groups only.
		return GroupDescription{GroupID: g.id, State: StateDead, Code: CodeGroupIDNotFound,
			Message: "Group " + g.id + " is not a classic group."}
	}
	d := GroupDescription{GroupID: g.id, State: g.state, ProtocolType: g.protocolType}
	stable := g.state == StateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.host}
		if stable {
			md.Metadata, md.Assignment = m.metadata(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// delete deletes an Empty group: tombstones for its offsets and metadata,
// then Dead (the actor exits after this).
func (g *group) delete() Code {
	if g.cg != nil {
		return g.deleteConsumer()
	}
	switch g.state {
	case StateDead:
		return CodeGroupIDNotFound
	case StateEmpty:
	default:
		return CodeNonEmptyGroup
	}
	recs := make([]StoreRecord, 0, len(g.offsets)+1)
	for _, tp := range sortedPartitions(g.offsets) {
		recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp)})
	}
	recs = append(recs, StoreRecord{Key: groupKey(g.id)})
	if err := g.c.cfg.Store.Append(g.c.ctx, recs); err != nil {
		g.log.Warn("deleting group failed", "err", err)
		return CodeCoordinatorNotAvailable
	}
	for _, t := range g.pending {
		t.Stop()
	}
	g.pending = map[string]Timer{}
	g.offsets = map[TopicPartition]OffsetAndMetadata{}
	g.setState(StateDead)
	g.log.Info("group deleted")
	return CodeNone
}

// deleteConsumer deletes an empty consumer-protocol group: its offsets and
// its group records (members have none left), then Dead.
func (g *group) deleteConsumer() Code {
	if len(g.cg.Members) > 0 {
		return CodeNonEmptyGroup
	}
	recs := make([]StoreRecord, 0, len(g.offsets)+3)
	for _, tp := range sortedPartitions(g.offsets) {
		recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp)})
	}
	recs = append(recs, consumerTombstones(g.id)...)
	if err := g.c.cfg.Store.Append(g.c.ctx, recs); err != nil {
		g.log.Warn("deleting group failed", "err", err)
		return CodeCoordinatorNotAvailable
	}
	g.forgetConsumer()
	g.offsets = map[TopicPartition]OffsetAndMetadata{}
	g.setState(StateDead)
	g.log.Info("consumer group deleted")
	return CodeNone
}
