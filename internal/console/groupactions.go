package console

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/record"
)

// This file is the group actions: reset offsets (earliest, latest,
// timestamp, offset) — first a preview of every partition's move, then
// the same form with apply=1 — and delete a group. The broker refuses
// both while the group has live members (they own their positions), as
// kafka-consumer-groups does.

func (c *Console) groupActions() {
	c.action("/actions/groups/{group}/reset", c.resetOffsets)
	c.action("/actions/groups/{group}/delete", c.deleteGroup)
}

// ResetPlan is a reset's preview: each partition's committed offset now
// and the one it would get.
type ResetPlan struct {
	Group string `json:"group"`
	Topic string `json:"topic"` // "": every topic the group has committed
	Mode  string `json:"mode"`  // earliest, latest, timestamp, offset
	Value string `json:"value"` // the timestamp or offset
	Rows  []ResetRow
}

// ResetRow is one partition's move.
type ResetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current"` // -1: none
	Target    int64  `json:"target"`
	End       int64  `json:"high_watermark"`
	LagAfter  int64  `json:"lag_after"`
}

// Form is the plan's fields for the apply form.
func (p ResetPlan) Form() url.Values {
	return url.Values{"topic": {p.Topic}, "mode": {p.Mode}, "value": {p.Value}}
}

func (c *Console) resetOffsets(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("group")
	plan, err := planReset(r.Context(), c.b, id, r.PostForm.Get("topic"), r.PostForm.Get("mode"), strings.TrimSpace(r.PostForm.Get("value")))
	if err != nil {
		return err
	}
	if r.PostForm.Get("apply") != "1" {
		c.render(w, r, http.StatusOK, "reset", plan)
		return nil
	}
	g := c.b.Group(id)
	for _, row := range plan.Rows {
		if err := g.Seek(r.Context(), row.Topic, broker.PartitionID(row.Partition), record.Offset(row.Target)); err != nil {
			return brokerError(err)
		}
	}
	c.logger.Info("console: group offsets reset", "group", id, "topic", plan.Topic, "mode", plan.Mode, "value", plan.Value, "client", r.RemoteAddr)
	http.Redirect(w, r, "/groups/"+url.PathEscape(id), http.StatusSeeOther)
	return nil
}

// planReset computes a reset's moves for the partitions of topic (every
// partition of it), or of every topic the group has committed offsets for.
func planReset(ctx context.Context, b *broker.Broker, id, topic, mode, value string) (ResetPlan, error) {
	plan := ResetPlan{Group: id, Topic: topic, Mode: mode, Value: value}
	var ts, off int64
	var err error
	switch mode {
	case "earliest", "latest":
	case "timestamp":
		ts, err = parseTimestamp(value)
	case "offset":
		off, err = strconv.ParseInt(value, 10, 64)
		if err != nil || off < 0 {
			err = fmt.Errorf("%w: offset %q: want an offset >= 0", errBadRequest, value)
		}
	default:
		err = fmt.Errorf("%w: mode %q: want earliest, latest, timestamp or offset", errBadRequest, mode)
	}
	if err != nil {
		return plan, err
	}
	lag, err := b.GroupLag(ctx, id)
	if err != nil {
		return plan, err
	}
	current := map[string]int64{}
	topics := map[string]bool{}
	for _, p := range lag.Partitions {
		current[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = int64(p.Committed)
		topics[p.Topic] = true
	}
	if topic != "" {
		topics = map[string]bool{topic: true}
	}
	if len(topics) == 0 {
		return plan, fmt.Errorf("%w: group %q has no committed offsets: name the topic to reset", errBadRequest, id)
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		bt, err := b.Topic(t)
		if err != nil {
			return plan, brokerError(err)
		}
		for i := range bt.Partitions() {
			p, err := bt.Partition(broker.PartitionID(i))
			if err != nil {
				return plan, fmt.Errorf("%s-%d is led by another node: reset from its console: %w", t, i, err)
			}
			row := ResetRow{Topic: t, Partition: i, Current: -1, End: int64(p.HighWatermark())}
			if c, ok := current[fmt.Sprintf("%s-%d", t, i)]; ok {
				row.Current = c
			}
			if row.Target, err = resetTarget(p, mode, ts, off); err != nil {
				return plan, err
			}
			row.LagAfter = row.End - row.Target
			plan.Rows = append(plan.Rows, row)
		}
	}
	return plan, nil
}

// resetTarget is where a partition's committed offset goes: the log start,
// the high watermark, the first offset at or after ts (the high watermark
// when none is), or off clamped to the log's range (as Kafka's tool does).
func resetTarget(p *broker.Partition, mode string, ts, off int64) (int64, error) {
	start, end := int64(p.LogStartOffset()), int64(p.HighWatermark())
	switch mode {
	case "earliest":
		return start, nil
	case "latest":
		return end, nil
	case "timestamp":
		s, err := seek(p, ts)
		if err != nil {
			return 0, err
		}
		return s.Offset, nil
	}
	return min(max(off, start), end), nil
}

func (c *Console) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("group")
	if got := r.PostForm.Get("confirm"); got != id {
		return fmt.Errorf("%w: to delete group %q, type its id exactly (got %q)", errBadRequest, id, got)
	}
	g, err := c.b.GroupCoordinator(id)
	if err != nil {
		return fmt.Errorf("%w: group %q: %v", errNotFound, id, err)
	}
	switch code := g.Delete(r.Context(), []string{id})[id]; code {
	case group.CodeNone:
	case group.CodeNonEmptyGroup:
		return fmt.Errorf("%w: group %q has live members: stop its consumers first", errConflict, id)
	case group.CodeGroupIDNotFound:
		return fmt.Errorf("%w: group %q", errNotFound, id)
	default:
		return fmt.Errorf("delete group %q: %s", id, code)
	}
	c.logger.Info("console: group deleted", "group", id, "client", r.RemoteAddr)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
