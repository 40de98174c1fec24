package group

import (
	"context"
	"errors"
	"fmt"
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
	case g.cg != nil && len(g.cg.Members) > 0:
		subscribed = g.consumerSubscribed()
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
	var expired []TopicPartition
	for _, tp := range sortedPartitions(g.offsets) {
		if subscribed[tp.Topic] {
			continue
		}
		since := g.offsets[tp].CommitTime
		if g.state == StateEmpty && g.stateSince.After(since) {
			since = g.stateSince
		}
		if now.Sub(since) >= retention {
			expired = append(expired, tp)
		}
	}
	n, err := g.dropOffsets(expired)
	if err != nil {
		g.log.Warn("expiring offsets failed", "err", err)
		return 0
	}
	if n > 0 {
		g.log.Info("committed offsets expired", "partitions", n, "retention", retention, "group_removed", g.state == StateDead)
	}
	return n
}

// dropOffsets tombstones the offsets of tps in the store, then forgets
// them; an Empty group left with nothing is tombstoned too and dies. It
// runs on the actor.
func (g *group) dropOffsets(tps []TopicPartition) (int, error) {
	if len(tps) == 0 {
		return 0, nil
	}
	recs := make([]StoreRecord, 0, len(tps)+1)
	for _, tp := range tps {
		recs = append(recs, StoreRecord{Key: offsetKey(g.id, tp)})
	}
	// A consumer group keeps its records (and so its id) until deleted.
	dies := g.state == StateEmpty && len(tps) == len(g.offsets) && len(g.pending) == 0 && g.cg == nil
	if dies {
		recs = append(recs, StoreRecord{Key: groupKey(g.id)})
	}
	if err := g.c.cfg.Store.Append(g.c.ctx, recs); err != nil {
		return 0, err
	}
	for _, tp := range tps {
		delete(g.offsets, tp)
	}
	if dies {
		g.setState(StateDead)
	}
	return len(tps), nil
}

// RemoveTopicOffsets tombstones, in every group, the committed offsets of
// the topics gone reports, as Kafka does when partitions are deleted: a
// topic re-created under the same name must start from no commit. It
// returns how many offsets it removed.
func (c *Coordinator) RemoveTopicOffsets(ctx context.Context, gone func(topic string) bool) (int, error) {
	n := 0
	var errs []error
	for _, id := range c.groupIDs() {
		_, err := c.do(ctx, id, false, func(g *group) {
			var tps []TopicPartition
			for _, tp := range sortedPartitions(g.offsets) {
				if gone(tp.Topic) {
					tps = append(tps, tp)
				}
			}
			removed, err := g.dropOffsets(tps)
			if err != nil {
				errs = append(errs, fmt.Errorf("group %q: %w", g.id, err))
				return
			}
			if removed > 0 {
				g.log.Info("committed offsets of deleted topics removed", "partitions", removed, "group_removed", g.state == StateDead)
			}
			n += removed
		})
		if err != nil && !errors.Is(err, errNoGroup) {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
