package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
)

// This file hosts share groups (KIP-932, internal/share) on a single node:
// the internal topic __share_group_state and the share.Host over this
// node's partitions. share_cluster.go hosts them on a cluster.
//
// __share_group_state has one partition here, compacted like
// __consumer_offsets (a cluster spreads it over as many partitions as
// __consumer_offsets, as Kafka spreads it over share.coordinator.state.
// topic.num.partitions: there is nothing to spread on one node).

// ShareNode is share groups on this node.
type ShareNode struct {
	Coordinator *share.Coordinator
	Manager     *share.Manager
	Sessions    *share.Sessions
	// states are a cluster member's share coordinators, one per
	// __share_group_state partition it leads; nil on a single node.
	states *coordlog.Shards[*Partition, *share.StateShard]
}

// Share returns the node's share groups.
func (b *Broker) Share() *ShareNode { return b.share }

// shareStateMaxBatch bounds one __share_group_state record: a snapshot of
// a window of 2,000 offsets in the worst case of one run each.
const shareStateMaxBatch = 16 << 20

func shareStateTopicSpec() TopicSpec {
	spec := offsetsTopicSpec(1)
	spec.Name = share.StateTopic
	spec.Configs[ConfigMaxMessageBytes] = strconv.Itoa(shareStateMaxBatch)
	return spec
}

// openShare starts the share coordinator and manager, which replay
// __share_group_state first. The topic is created on the first write, so
// a broker whose clients never use share groups lists no new topic.
func (b *Broker) openShare() error {
	if b.clustered() {
		return nil // openMember opens a member's (share_cluster.go)
	}
	h := &shareHost{b: b}
	coord, err := share.NewCoordinator(h, b.cfg.Now, share.GroupDefaults{Partition: share.Defaults})
	if err != nil {
		return err
	}
	mgr, err := share.NewManager(share.ManagerConfig{Host: h, Logger: b.logger, Now: b.cfg.Now, Config: coord.GroupConfig})
	if err != nil {
		return err
	}
	coord.SetManager(mgr)
	b.share = &ShareNode{Coordinator: coord, Manager: mgr, Sessions: share.NewSessions()}
	return nil
}

// closeShare stops the share-partition manager's lock expiry, before the
// partitions it writes to close.
func (b *Broker) closeShare() {
	if b.share != nil {
		b.share.Manager.Close()
		if b.share.states != nil {
			b.share.states.StopAll()
		}
	}
}

// shareHost is share.Host over this broker.
type shareHost struct{ b *Broker }

func (h *shareHost) Topics() map[string]share.TopicInfo {
	out := map[string]share.TopicInfo{}
	for _, t := range h.b.Topics() {
		out[t.Name] = share.TopicInfo{ID: t.ID, Partitions: t.Partitions()}
	}
	return out
}

func (h *shareHost) partition(tp share.TopicPartition) (*Partition, error) {
	t, err := h.b.TopicByID(TopicID(tp.TopicID))
	if err != nil {
		return nil, err
	}
	return t.Partition(PartitionID(tp.Partition))
}

func (h *shareHost) Bounds(tp share.TopicPartition) (share.Offset, share.Offset, error) {
	p, err := h.partition(tp)
	if err != nil {
		return 0, 0, err
	}
	if err := p.CheckLeader(); err != nil {
		return 0, 0, err
	}
	return share.Offset(p.LogStartOffset()), share.Offset(p.HighWatermark()), nil
}

func (h *shareHost) ReadLog(tp share.TopicPartition, from share.Offset, maxBytes int) (share.LogRead, error) {
	p, err := h.partition(tp)
	if err != nil {
		return share.LogRead{}, err
	}
	res, err := p.Read(record.Offset(from), maxBytes)
	if err != nil {
		return share.LogRead{}, err
	}
	rd := share.LogRead{Batches: res.Batches, Next: from, LogStart: share.Offset(res.LogStartOffset), HighWatermark: share.Offset(res.HighWatermark)}
	s := record.Batches(res.Batches)
	for s.Next() {
		hd := s.Header()
		rd.Next = max(rd.Next, share.Offset(hd.NextOffset()))
	}
	return rd, nil
}

// statePartition returns __share_group_state's partition, creating the
// topic first when create is set and it is missing.
func (h *shareHost) statePartition(create bool) (*Partition, error) {
	if _, err := h.b.Topic(share.StateTopic); err != nil && create {
		if _, err := h.b.CreateTopic(shareStateTopicSpec()); err != nil && !errors.Is(err, ErrTopicExists) {
			return nil, fmt.Errorf("broker: create %s: %w", share.StateTopic, err)
		}
	}
	return h.b.Partition(share.StateTopic, 0)
}

// AppendState writes share-partition state records to
// __share_group_state with acks=all (coordlog.Store).
func (h *shareHost) AppendState(ctx context.Context, recs []share.StateRecord) error {
	p, err := h.statePartition(true)
	if err != nil {
		return err
	}
	rs := make([]coordlog.Record, len(recs))
	for i, r := range recs {
		rs[i] = coordlog.Record{Key: r.Key, Value: r.Value}
	}
	return h.b.coordStore(p).Append(ctx, rs)
}

// ReplayState passes every record of __share_group_state to fn, in
// order (coordlog.Store; the topic holds no transactions).
func (h *shareHost) ReplayState(fn func(key, value []byte)) error {
	if _, err := h.b.Topic(share.StateTopic); err != nil {
		return nil // never written
	}
	p, err := h.statePartition(false)
	if err != nil {
		return err
	}
	return h.b.coordStore(p).Replay(func(r coordlog.Record) error {
		if r.Txn == nil || !r.Txn.Marker {
			fn(r.Key, r.Value)
		}
		return nil
	})
}

func (h *shareHost) AppendDeadLetters(ctx context.Context, topic string, src share.TopicPartition, recs []record.Record) error {
	t, err := h.b.Topic(topic)
	if errors.Is(err, ErrUnknownTopicOrPartition) {
		st, serr := h.b.Topic(src.Topic)
		if serr != nil {
			return serr
		}
		t, err = h.b.CreateTopic(h.b.dlqSpec(topic, st))
		if errors.Is(err, ErrTopicExists) {
			t, err = h.b.Topic(topic)
		}
	}
	if err != nil {
		return fmt.Errorf("broker: dead-letter topic %q: %w", topic, err)
	}
	if IsInternalTopic(topic) || topic == src.Topic {
		return fmt.Errorf("%w: %q cannot be the dead-letter topic of %s", ErrInvalidConfig, topic, src.Topic)
	}
	_, err = h.b.ProduceRecords(ctx, topic, PartitionID(int(src.Partition)%int(t.Partitions())), recs)
	return err
}
