package broker

import (
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/share"
)

// ReadCommitted is share.CommittedReader over this broker: a
// read_committed share group's read of a partition it leads, below the
// last stable offset, with the aborted transactions it overlaps.
func (h *shareHost) ReadCommitted(tp share.TopicPartition, from share.Offset, maxBytes int) (share.LogRead, share.Offset, []share.AbortedTxn, error) {
	p, err := h.partition(tp)
	if err != nil {
		return share.LogRead{}, 0, nil, err
	}
	res, aborted, err := p.ReadCommittedInto(nil, record.Offset(from), maxBytes)
	if err != nil {
		return share.LogRead{}, 0, nil, err
	}
	rd := share.LogRead{Batches: res.Batches, Next: from, LogStart: share.Offset(res.LogStartOffset), HighWatermark: share.Offset(res.HighWatermark)}
	for s := record.Batches(res.Batches); s.Next(); {
		hd := s.Header()
		rd.Next = max(rd.Next, share.Offset(hd.NextOffset()))
	}
	out := make([]share.AbortedTxn, len(aborted))
	for i, a := range aborted {
		out[i] = share.AbortedTxn{ProducerID: int64(a.ProducerID), First: share.Offset(a.FirstOffset), Last: share.Offset(a.LastOffset)}
	}
	return rd, share.Offset(res.LastStable), out, nil
}

// NotifyHighWatermark is share.LogWatcher over this broker: a waiting
// share fetch wakes at the next append to one of its partitions.
func (h *shareHost) NotifyHighWatermark(tp share.TopicPartition, c chan<- struct{}) {
	if p, err := h.partition(tp); err == nil {
		p.NotifyHighWatermark(c)
	}
}

// StopNotify forgets c (NotifyHighWatermark).
func (h *shareHost) StopNotify(tp share.TopicPartition, c chan<- struct{}) {
	if p, err := h.partition(tp); err == nil {
		p.StopNotify(c)
	}
}
