package group

import (
	"cmp"
	"slices"
)

// This file is committed offsets: OffsetCommit and OffsetDelete (OffsetFetch
// is a read in Coordinator.FetchOffsets).

// commitOffsets handles an OffsetCommit on the actor, with the checks of
// Kafka's doCommitOffsets.
func (g *group) commitOffsets(req OffsetCommitRequest) map[TopicPartition]Code {
	out := make(map[TopicPartition]Code, len(req.Offsets))
	var (
		code  Code
		check func(TopicPartition) Code // per partition; nil: all pass
	)
	if g.cg != nil {
		code, check = g.consumerCommitCheck(req)
	} else {
		code = g.validateCommit(req)
	}
	if code != CodeNone {
		for tp := range req.Offsets {
			out[tp] = code
		}
		return out
	}
	return g.writeOffsets(req.Offsets, check, out, func(recs []StoreRecord) error {
		return g.c.cfg.Store.Append(g.c.ctx, recs)
	}, func(tp TopicPartition, o OffsetAndMetadata) { g.offsets[tp] = o })
}

// writeOffsets checks each offset (check, nil for none; the metadata size;
// that the partition exists), writes the accepted ones as one append with
// write, and on success hands each to keep. out gets every partition's
// code and is returned.
func (g *group) writeOffsets(offsets map[TopicPartition]OffsetAndMetadata, check func(TopicPartition) Code,
	out map[TopicPartition]Code, write func([]StoreRecord) error, keep func(TopicPartition, OffsetAndMetadata)) map[TopicPartition]Code {
	now := g.c.cfg.Clock.Now()
	var (
		recs    []StoreRecord
		written = map[TopicPartition]OffsetAndMetadata{}
	)
	for _, tp := range sortedPartitions(offsets) {
		o := offsets[tp]
		switch {
		case check != nil && check(tp) != CodeNone:
			out[tp] = check(tp)
		case len(o.Metadata) > g.c.cfg.MaxMetadataSize:
			out[tp] = CodeOffsetMetadataTooLarge
		case g.c.cfg.PartitionExists != nil && !g.c.cfg.PartitionExists(tp):
			out[tp] = CodeUnknownTopicOrPartition
		default:
			o.CommitTime = now
			recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp), Value: offsetValue(o)})
			written[tp] = o
		}
	}
	if len(recs) == 0 {
		return out
	}
	code := CodeNone
	if err := write(recs); err != nil {
		g.log.Warn("storing offsets failed", "err", err)
		code = CodeCoordinatorNotAvailable
	}
	for tp, o := range written {
		out[tp] = code
		if code == CodeNone {
			keep(tp, o)
		}
	}
	return out
}

// validateCommit is Kafka's order of checks for a commit: a simple commit
// (no generation, no member) only to an Empty group; otherwise the member
// must be current, and not mid-sync.
func (g *group) validateCommit(req OffsetCommitRequest) Code {
	if g.state == StateDead {
		return CodeCoordinatorNotAvailable
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == "" && g.state == StateEmpty {
		return CodeNone
	}
	var m *member
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		var code Code
		if m, code = g.validateMember(req.MemberID, req.InstanceID); code != CodeNone {
			return code
		}
	}
	if req.Generation != g.generation {
		return CodeIllegalGeneration
	}
	if g.state == StateCompletingRebalance {
		// The member has its generation but not yet its assignment.
		return CodeRebalanceInProgress
	}
	if m != nil {
		g.resetSession(m) // a commit is as good as a heartbeat
	}
	return CodeNone
}

// deleteOffsets handles an OffsetDelete on the actor.
func (g *group) deleteOffsets(partitions []TopicPartition) (Code, map[TopicPartition]Code) {
	var subscribed map[string]bool
	switch {
	case g.state == StateDead:
		return CodeGroupIDNotFound, nil
	case g.cg != nil:
		if len(g.cg.Members) > 0 {
			subscribed = g.consumerSubscribed()
		}
	case g.state == StateEmpty:
	default:
		topics, ok := g.subscribedTopics()
		if !ok && g.protocolType != "consumer" {
			return CodeNonEmptyGroup, nil
		}
		subscribed = topics // nil (unknown) for unparseable metadata: no check
	}
	out := make(map[TopicPartition]Code, len(partitions))
	var (
		recs    []StoreRecord
		deleted []TopicPartition
	)
	for _, tp := range partitions {
		if subscribed[tp.Topic] {
			out[tp] = CodeGroupSubscribedToTopic
			continue
		}
		out[tp] = CodeNone
		if _, ok := g.offsets[tp]; ok {
			recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp)})
			deleted = append(deleted, tp)
		}
	}
	if len(recs) > 0 {
		if err := g.c.cfg.Store.Append(g.c.ctx, recs); err != nil {
			g.log.Warn("deleting offsets failed", "err", err)
			for _, tp := range deleted {
				out[tp] = CodeCoordinatorNotAvailable
			}
			return CodeNone, out
		}
	}
	for _, tp := range deleted {
		delete(g.offsets, tp)
	}
	return CodeNone, out
}

func sortedPartitions[V any](m map[TopicPartition]V) []TopicPartition {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return tps
}
