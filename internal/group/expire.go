package group

import (
	"context"
	"time"
)

// Offset expiration (offsets.retention.minutes), as Kafka does it since
// KIP-211: an offset expires once it has gone OffsetsRetention without a
// consumer that could still need it.
//
//   - Empty group: every offset, counted from when the group became Empty,
//     or from the offset's own commit when that is later (a commit to an
//     Empty group restarts its clock; Kafka counts from the state change
//     alone). An offsets-only group (simple consumers, never a member)
//     counts from each commit.
//   - Stable "consumer" group: only offsets of topics no member subscribes
//     to, counted from their commit. Subscribed topics never expire.
//   - Any other group (rebalancing, or another protocol type): nothing.
//
// Expired offsets are tombstoned in the store; an Empty group left with no
// offsets is tombstoned too and becomes Dead.

// ExpireOffsets expires committed offsets in every group and returns how
// many it removed. The broker calls it periodically; it does nothing when
// OffsetsRetention is negative.
func (c *Coordinator) ExpireOffsets(ctx context.Context) int {
	if c.cfg.OffsetsRetention < 0 {
		return 0
	}
	ids := c.groupIDs()
	n := 0
	for _, id := range ids {
		_, _ = c.do(ctx, id, false, func(g *group) { n += g.expireOffsets(c.cfg.Clock.Now(), c.cfg.OffsetsRetention) })
	}
	return n
}

// expireOffsets runs on the actor.
func (g *group) expireOffsets(now time.Time, retention time.Duration) int {
	var subscribed map[string]bool
	switch {
	case g.state == StateEmpty:
	case g.state == StateStable && g.protocolType == "consumer":
		topics, ok := g.subscribedTopics()
		if !ok {
			return 0
		}
		subscribed = topics
	default:
		return 0
	}
	var (
		recs    []StoreRecord
		expired []TopicPartition
	)
	for _, tp := range sortedPartitions(g.offsets) {
		if subscribed[tp.Topic] {
			continue
		}
		since := g.offsets[tp].CommitTime
		if g.state == StateEmpty && g.stateSince.After(since) {
			since = g.stateSince
		}
		if now.Sub(since) >= retention {
			recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp)})
			expired = append(expired, tp)
		}
	}
	if len(expired) == 0 {
		return 0
	}
	dies := g.state == StateEmpty && len(expired) == len(g.offsets) && len(g.pending) == 0
	if dies {
		recs = append(recs, StoreRecord{Key: groupKey(g.id)})
	}
	if err := g.c.cfg.Store.Append(g.c.ctx, recs); err != nil {
		g.log.Warn("expiring offsets failed", "err", err)
		return 0
	}
	for _, tp := range expired {
		delete(g.offsets, tp)
	}
	g.log.Info("committed offsets expired", "partitions", len(expired), "retention", retention, "group_removed", dies)
	if dies {
		g.setState(StateDead)
	}
	return len(expired)
}
