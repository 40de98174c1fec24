package sharenode

import (
	"context"
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
	"github.com/strandmq/strand/internal/topicconfig"
)

// host is share.Host over the node's partitions. On a single node
// __share_group_state has one partition, compacted like
// __consumer_offsets: there is nothing to spread on one node.
type host struct{ n *Node }

func (h *host) broker() Broker { return h.n.cfg.Broker }

func (h *host) Topics() map[string]share.TopicInfo { return h.broker().Topics() }

func (h *host) partition(tp share.TopicPartition) (*partition.Partition, error) {
	return h.broker().Partition(tp.Topic, tp.TopicID, tp.Partition)
}

func (h *host) Bounds(tp share.TopicPartition) (share.Offset, share.Offset, error) {
	p, err := h.partition(tp)
	if err != nil {
		return 0, 0, err
	}
	if err := p.CheckLeader(); err != nil {
		return 0, 0, err
	}
	return share.Offset(p.LogStartOffset()), share.Offset(p.HighWatermark()), nil
}

func (h *host) ReadLog(buf []byte, tp share.TopicPartition, from share.Offset, maxBytes int) (share.LogRead, error) {
	p, err := h.partition(tp)
	if err != nil {
		return share.LogRead{}, err
	}
	res, err := p.ReadInto(buf, record.Offset(from), maxBytes)
	if err != nil {
		return share.LogRead{}, err
	}
	return logRead(res, from), nil
}

// logRead is a read's batches as share sees them, Next past the last.
func logRead(res partition.ReadResult, from share.Offset) share.LogRead {
	rd := share.LogRead{Batches: res.Batches, Next: from, LogStart: share.Offset(res.LogStartOffset), HighWatermark: share.Offset(res.HighWatermark)}
	for s := record.Batches(res.Batches); s.Next(); {
		hd := s.Header()
		rd.Next = max(rd.Next, share.Offset(hd.NextOffset()))
	}
	return rd
}

// ReadCommitted is share.CommittedReader: a read_committed share group's
// read of a partition this node leads, below the last stable offset, with
// the aborted transactions it overlaps.
func (h *host) ReadCommitted(buf []byte, tp share.TopicPartition, from share.Offset, maxBytes int) (share.LogRead, share.Offset, []share.AbortedTxn, error) {
	p, err := h.partition(tp)
	if err != nil {
		return share.LogRead{}, 0, nil, err
	}
	res, aborted, err := p.ReadCommittedInto(buf, record.Offset(from), maxBytes)
	if err != nil {
		return share.LogRead{}, 0, nil, err
	}
	out := make([]share.AbortedTxn, len(aborted))
	for i, a := range aborted {
		out[i] = share.AbortedTxn{ProducerID: int64(a.ProducerID), First: share.Offset(a.FirstOffset), Last: share.Offset(a.LastOffset)}
	}
	return logRead(res, from), share.Offset(res.LastStable), out, nil
}

// NotifyHighWatermark is share.LogWatcher: a waiting share fetch wakes at
// the next append to one of its partitions.
func (h *host) NotifyHighWatermark(tp share.TopicPartition, c chan<- struct{}) {
	if p, err := h.partition(tp); err == nil {
		p.NotifyHighWatermark(c)
	}
}

// StopNotify forgets c (NotifyHighWatermark).
func (h *host) StopNotify(tp share.TopicPartition, c chan<- struct{}) {
	if p, err := h.partition(tp); err == nil {
		p.StopNotify(c)
	}
}

// statePartition returns __share_group_state's partition, creating the
// topic first when create is set and it is missing.
func (h *host) statePartition(create bool) (*partition.Partition, error) {
	p, err := h.broker().Partition(share.StateTopic, [16]byte{}, 0)
	if err == nil || !create {
		return p, err
	}
	if err := h.broker().CreateInternalTopic(share.StateTopic, 1, 0, stateConfigs()); err != nil {
		return nil, fmt.Errorf("sharenode: create %s: %w", share.StateTopic, err)
	}
	return h.broker().Partition(share.StateTopic, [16]byte{}, 0)
}

// AppendState writes share-partition state records to
// __share_group_state with acks=all.
func (h *host) AppendState(ctx context.Context, recs []share.StateRecord) error {
	p, err := h.statePartition(true)
	if err != nil {
		return err
	}
	return stateLog{h.broker().Store(p)}.AppendState(ctx, recs)
}

// ReplayState passes every record of __share_group_state to fn, in
// order; nothing if it was never written.
func (h *host) ReplayState(fn func(key, value []byte)) error {
	p, err := h.statePartition(false)
	if errors.Is(err, partition.ErrUnknownTopicOrPartition) {
		return nil // never written
	} else if err != nil {
		return err
	}
	return stateLog{h.broker().Store(p)}.ReplayState(fn)
}

func (h *host) AppendDeadLetters(ctx context.Context, topic string, src share.TopicPartition, recs []record.Record) error {
	if topicconfig.IsInternalTopic(topic) || topic == src.Topic {
		return fmt.Errorf("%w: %q cannot be the dead-letter topic of %s", topicconfig.ErrInvalidConfig, topic, src.Topic)
	}
	return h.broker().ProduceDeadLetters(ctx, topic, src.Topic, src.Partition, recs)
}

// stateLog is a __share_group_state partition as share's StateLog (the
// topic holds no transactions: markers are skipped).
type stateLog struct{ s *coordlog.Store }

func (l stateLog) AppendState(ctx context.Context, recs []share.StateRecord) error {
	rs := make([]coordlog.Record, len(recs))
	for i, r := range recs {
		rs[i] = coordlog.Record{Key: r.Key, Value: r.Value}
	}
	return l.s.Append(ctx, rs)
}

func (l stateLog) ReplayState(fn func(key, value []byte)) error {
	return l.s.Replay(func(r coordlog.Record) error {
		if r.Txn == nil || !r.Txn.Marker {
			fn(r.Key, r.Value)
		}
		return nil
	})
}
