package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/record"
)

// This file is the in-process consumer-group API that mirrors the seed's
// ConsumerGroup (poll, commit_through, seek, lag) on top of the group
// coordinator: what the wire's OffsetCommit/OffsetFetch do, for the embed
// API and tests.

// PartitionLag is one partition's lag in a group.
type PartitionLag struct {
	Topic     string
	Partition PartitionID
	// Committed is the group's committed offset, or record.NoOffset (-1).
	Committed record.Offset
	// LogStart and End are the partition's log start offset and high
	// watermark.
	LogStart, End record.Offset
	// Lag is End − Committed, or End − LogStart without a commit; never
	// negative.
	Lag int64
	// TimeLag is how long the next record the group would read has been
	// waiting: now minus its timestamp (0 with no lag). Offsets say how
	// much is unread; this says how late the consumer is.
	TimeLag time.Duration
}

// GroupLag is a group's lag: every partition of every topic the group has
// committed offsets for (partitions of those topics without a commit count
// from their log start), sorted by topic and partition.
type GroupLag struct {
	Group      string
	Partitions []PartitionLag
	// Total is Σ Lag: the seed's lag().
	Total int64
	// MaxTimeLag is the largest partition TimeLag.
	MaxTimeLag time.Duration
}

// GroupLag computes a group's lag. Committed offsets of topics that no
// longer exist are left out. An unknown group has no partitions and lag 0.
func (b *Broker) GroupLag(ctx context.Context, groupID string) (GroupLag, error) {
	coord, err := b.localCoordinator(groupID)
	if err != nil {
		return GroupLag{}, err
	}
	offsets, code := coord.FetchOffsets(ctx, groupID, nil)
	if err := codeError("fetch offsets", groupID, code); err != nil {
		return GroupLag{}, err
	}
	topics := map[string]bool{}
	for tp := range offsets {
		topics[tp.Topic] = true
	}
	names := make([]string, 0, len(topics))
	for name := range topics {
		names = append(names, name)
	}
	slices.Sort(names)
	out := GroupLag{Group: groupID}
	for _, name := range names {
		t, err := b.Topic(name)
		if err != nil {
			continue
		}
		for i := range t.Partitions() {
			p, err := t.Partition(PartitionID(i))
			if err != nil {
				continue // on another node of the cluster
			}
			pl := PartitionLag{Topic: name, Partition: PartitionID(i), Committed: record.NoOffset,
				LogStart: p.LogStartOffset(), End: p.HighWatermark()}
			from := pl.LogStart
			if o, ok := offsets[group.TopicPartition{Topic: name, Partition: i}]; ok && o.Offset >= 0 {
				pl.Committed = record.Offset(o.Offset)
				from = pl.Committed
			}
			pl.Lag = max(int64(pl.End-from), 0)
			if pl.Lag > 0 {
				pl.TimeLag = waitingSince(p, from, b.cfg.Now())
			}
			out.Total += pl.Lag
			out.MaxTimeLag = max(out.MaxTimeLag, pl.TimeLag)
			out.Partitions = append(out.Partitions, pl)
		}
	}
	return out, nil
}

// ConsumerGroup is the seed's ConsumerGroup: a group's committed offsets,
// read and moved in-process. It is a handle (no state of its own); the
// coordinator owns the offsets, so consumers on the wire see the same ones.
type ConsumerGroup struct {
	b  *Broker
	id string
}

// Group returns a handle on a consumer group (it need not exist yet).
func (b *Broker) Group(id string) *ConsumerGroup { return &ConsumerGroup{b: b, id: id} }

// ID returns the group id.
func (g *ConsumerGroup) ID() string { return g.id }

// Committed returns the committed offset of a partition, or record.NoOffset.
func (g *ConsumerGroup) Committed(ctx context.Context, topic string, p PartitionID) (record.Offset, error) {
	tp := group.TopicPartition{Topic: topic, Partition: int32(p)}
	coord, err := g.b.localCoordinator(g.id)
	if err != nil {
		return record.NoOffset, err
	}
	offsets, code := coord.FetchOffsets(ctx, g.id, []group.TopicPartition{tp})
	if err := codeError("fetch offsets", g.id, code); err != nil {
		return record.NoOffset, err
	}
	if o, ok := offsets[tp]; ok {
		return record.Offset(o.Offset), nil
	}
	return record.NoOffset, nil
}

// Poll returns records of one partition from the group's position on (its
// committed offset; the log start offset without one), at most about
// maxBytes (at least one batch). It does not move the position: commit with
// CommitThrough.
func (g *ConsumerGroup) Poll(ctx context.Context, topic string, p PartitionID, maxBytes int) ([]record.Record, error) {
	pos, err := g.Committed(ctx, topic, p)
	if err != nil {
		return nil, err
	}
	part, err := g.b.Partition(topic, p)
	if err != nil {
		return nil, err
	}
	if pos < 0 {
		pos = part.LogStartOffset()
	}
	return g.b.Fetch(topic, p, pos, maxBytes)
}

// CommitThrough commits that the group has processed a partition through
// offset (inclusive): its committed offset, the next one to read, becomes
// offset+1. As a "simple" commit it is refused with ErrGroupNotEmpty while
// the group has live members.
func (g *ConsumerGroup) CommitThrough(ctx context.Context, topic string, p PartitionID, offset record.Offset) error {
	if offset < 0 {
		return fmt.Errorf("%w: commit through %d", ErrOffsetOutOfRange, offset)
	}
	return g.commit(ctx, "commit", topic, p, offset+1)
}

// Seek sets the group's committed offset of a partition to offset, the next
// one its consumers read: seeking back replays, and lag jumps back up. The
// offset may be anywhere up to the high watermark (below the log start
// offset, consumers' reset policy applies). It is refused with
// ErrGroupNotEmpty while the group has live members, which own their
// positions (as kafka-consumer-groups --reset-offsets refuses).
func (g *ConsumerGroup) Seek(ctx context.Context, topic string, p PartitionID, offset record.Offset) error {
	part, err := g.b.Partition(topic, p)
	if err != nil {
		return err
	}
	if hw := part.HighWatermark(); offset < 0 || offset > hw {
		return fmt.Errorf("%w: seek %s-%d to %d, high watermark %d", ErrOffsetOutOfRange, topic, p, offset, hw)
	}
	return g.commit(ctx, "seek", topic, p, offset)
}

func (g *ConsumerGroup) commit(ctx context.Context, op, topic string, p PartitionID, next record.Offset) error {
	if strings.TrimSpace(g.id) == "" {
		return fmt.Errorf("broker: %s: empty group id", op)
	}
	tp := group.TopicPartition{Topic: topic, Partition: int32(p)}
	coord, err := g.b.localCoordinator(g.id)
	if err != nil {
		return err
	}
	codes := coord.CommitOffsets(ctx, group.OffsetCommitRequest{
		Version:    9, // the newest semantics: a consumer group's members must be absent
		GroupID:    g.id,
		Generation: group.NoGeneration,
		Offsets:    map[group.TopicPartition]group.OffsetAndMetadata{tp: {Offset: int64(next), LeaderEpoch: -1}},
	})
	return codeError(fmt.Sprintf("%s %s-%d", op, topic, p), g.id, codes[tp])
}

// Lag returns the group's lag (Broker.GroupLag).
func (g *ConsumerGroup) Lag(ctx context.Context) (GroupLag, error) { return g.b.GroupLag(ctx, g.id) }

// waitingSince is now minus the timestamp of the first record at or after
// offset from (0 if there is none, it cannot be read, or its timestamp is
// in the future).
func waitingSince(p *Partition, from record.Offset, now time.Time) time.Duration {
	res, err := p.Read(from, 1) // at least the batch holding from
	if err != nil {
		return 0
	}
	s := record.Batches(res.Batches)
	for s.Next() {
		b, err := record.Decode(s.Batch())
		if err != nil {
			return 0
		}
		for _, r := range b.Records {
			if r.Offset >= from {
				return max(now.Sub(time.UnixMilli(r.Timestamp)), 0)
			}
		}
	}
	return 0
}
