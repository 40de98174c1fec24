package group

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/strandmq/strand/internal/coordlog"
)

// Transactional offset commits (KIP-98, KIP-447). A TxnOffsetCommit writes
// the group's offsets to __consumer_offsets as records of the producer's
// transaction, and the group holds them as pending, per producer, until
// the transaction's marker reaches the partition: a commit makes them the
// group's committed offsets, an abort drops them. Replay does the same
// from the records and markers in the log, so a coordinator that loads
// between the commit and the marker still holds them pending.

// TxnTag marks a StoreRecord of a transaction: a record written under
// ProducerID, or (Marker) the control record ending its transaction.
type TxnTag = coordlog.TxnTag

// TxnStore is a Store that can append a transaction's records.
type TxnStore interface {
	AppendTxn(ctx context.Context, producerID int64, epoch int16, recs []StoreRecord) error
}

// TxnOffsetCommitRequest is TxnOffsetCommit: an OffsetCommitRequest made
// inside a producer's transaction. Generation −1 with no member id (v0–2)
// skips the member checks, as Kafka does.
type TxnOffsetCommitRequest struct {
	OffsetCommitRequest
	ProducerID int64
	Epoch      int16
}

// TxnCommitOffsets handles TxnOffsetCommit: checks as OffsetCommit (KIP-447
// zombie fencing by generation and member), then the records are appended
// under the producer's id and held pending until CompleteTxn.
func (c *Coordinator) TxnCommitOffsets(ctx context.Context, req TxnOffsetCommitRequest) map[TopicPartition]Code {
	all := func(code Code) map[TopicPartition]Code {
		out := make(map[TopicPartition]Code, len(req.Offsets))
		for tp := range req.Offsets {
			out[tp] = code
		}
		return out
	}
	store, ok := c.cfg.Store.(TxnStore)
	switch {
	case req.GroupID == "":
		return all(CodeInvalidGroupID)
	case !ok:
		return all(CodeCoordinatorNotAvailable)
	}
	var out map[TopicPartition]Code
	_, err := c.do(ctx, req.GroupID, true, func(g *group) { out = g.txnCommitOffsets(store, req) })
	if err != nil {
		return all(CodeCoordinatorNotAvailable)
	}
	return out
}

func (g *group) txnCommitOffsets(store TxnStore, req TxnOffsetCommitRequest) map[TopicPartition]Code {
	out := make(map[TopicPartition]Code, len(req.Offsets))
	var check func(TopicPartition) Code // per partition (consumer groups); nil: all pass
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		code := CodeNone
		if g.cg != nil {
			// A KIP-848 group: the generation is the member epoch, checked
			// as OffsetCommit v9+ does; TxnOffsetCommit below v6 knows no
			// STALE_MEMBER_EPOCH and gets ILLEGAL_GENERATION instead.
			oc := req.OffsetCommitRequest
			oc.Version = 9
			code, check = g.consumerCommitCheck(oc)
			if code == CodeStaleMemberEpoch {
				code = CodeIllegalGeneration
			}
		} else {
			code = g.validateCommit(req.OffsetCommitRequest)
		}
		if code != CodeNone {
			for tp := range req.Offsets {
				out[tp] = code
			}
			return out
		}
	}
	if check != nil {
		held := check
		check = func(tp TopicPartition) Code {
			if held(tp) != CodeNone {
				return CodeIllegalGeneration // a partition the member no longer holds
			}
			return CodeNone
		}
	}
	return g.writeOffsets(req.Offsets, check, out, func(recs []StoreRecord) error {
		return store.AppendTxn(g.c.ctx, req.ProducerID, req.Epoch, recs)
	}, func(tp TopicPartition, o OffsetAndMetadata) { g.holdTxnOffset(req.ProducerID, tp, o) })
}

func (g *group) holdTxnOffset(pid int64, tp TopicPartition, o OffsetAndMetadata) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[TopicPartition]OffsetAndMetadata{}
	}
	if g.txnOffsets[pid] == nil {
		g.txnOffsets[pid] = map[TopicPartition]OffsetAndMetadata{}
	}
	g.txnOffsets[pid][tp] = o
}

// endTxn applies producer pid's marker to the group's pending offsets.
func (g *group) endTxn(pid int64, commit bool) {
	pending, ok := g.txnOffsets[pid]
	if !ok {
		return
	}
	delete(g.txnOffsets, pid)
	if commit {
		maps.Copy(g.offsets, pending)
	}
}

// CompleteTxn applies the marker of producer pid's transaction, written
// to this coordinator's partition, to every group holding offsets of it.
func (c *Coordinator) CompleteTxn(ctx context.Context, pid int64, commit bool) error {
	c.mu.Lock()
	ids := make([]string, 0, len(c.mu.groups))
	for id := range c.mu.groups {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		_, err := c.do(ctx, id, false, func(g *group) { g.endTxn(pid, commit) })
		if err != nil && !errors.Is(err, errNoGroup) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// FetchStableOffsets is FetchMemberOffsets with RequireStable (KIP-447): it also
// returns the partitions whose offsets are pending in an open transaction,
// which OffsetFetch answers UNSTABLE_OFFSET_COMMIT. Both come from one look
// at the group, so a transaction's marker landing in between cannot pass an
// old offset off as stable.
func (c *Coordinator) FetchStableOffsets(ctx context.Context, groupID string, memberID *string, epoch int32, partitions []TopicPartition) (map[TopicPartition]OffsetAndMetadata, map[TopicPartition]bool, Code) {
	var unstable map[TopicPartition]bool
	offsets, code := c.fetchOffsets(ctx, groupID, memberID, epoch, partitions, func(g *group) {
		unstable = map[TopicPartition]bool{}
		for _, pending := range g.txnOffsets {
			for tp := range pending {
				unstable[tp] = true
			}
		}
	})
	return offsets, unstable, code
}

// replayTxn applies a replayed transactional record or marker; it reports
// whether r was one.
func (c *Coordinator) replayTxn(r StoreRecord, d decodedRecord) bool {
	if r.Txn == nil {
		return false
	}
	if r.Txn.Marker {
		for _, g := range c.mu.groups {
			g.endTxn(r.Txn.ProducerID, r.Txn.Commit)
		}
		return true
	}
	if d.offset == nil || d.delete {
		return false // only offsets are written in transactions
	}
	g := c.mu.groups[d.group]
	if g == nil {
		g = newGroup(c, d.group)
		c.mu.groups[d.group] = g
	}
	g.holdTxnOffset(r.Txn.ProducerID, d.offset.tp, d.offset.value)
	return true
}
