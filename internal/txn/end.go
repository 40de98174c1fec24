package txn

import (
	"slices"

	"github.com/strandmq/strand/internal/producer"
)

// EndRequest is EndTxn. Client is TV2 for EndTxn v5+, else TV0.
type EndRequest struct {
	TransactionalID string
	ProducerID      producer.ID
	Epoch           producer.Epoch
	Commit          bool
	Client          Version
}

// EndTxn commits or aborts the id's transaction. The reply comes from
// Appended once PrepareX is durable (then the caller writes the markers),
// or at once for a refusal or a retry Kafka answers with success.
//
// TV0/1 (Kafka's endTransactionWithTV1): empty id → INVALID_REQUEST;
// unknown or other producer id → INVALID_PRODUCER_ID_MAPPING; epoch ≠
// current → PRODUCER_FENCED; pending → CONCURRENT_TRANSACTIONS; then by
// state: Ongoing → PrepareX; CompleteX with the same outcome → NONE (a
// retry), with the other → INVALID_TXN_STATE; PrepareX with the same outcome
// → CONCURRENT_TRANSACTIONS, the other → INVALID_TXN_STATE; Empty →
// INVALID_TXN_STATE.
//
// TV2 (KIP-890): a retry is recognised by its epoch (the current epoch is
// the request's + 1, or the request's id is the previous one at epoch
// Short.MaxValue-1 after an overflow) and answered NONE only in the
// matching CompleteX; an abort from Empty or Complete* at the current epoch
// is an empty abort that bumps the epoch; a commit there is
// INVALID_TXN_STATE.
func (c *Coordinator) EndTxn(req EndRequest, nowMs int64) Output {
	if req.TransactionalID == "" {
		return replyCode(CodeInvalidRequest)
	}
	e, ok := c.txns[req.TransactionalID]
	if !ok {
		return replyCode(CodeInvalidProducerIDMapping)
	}
	if req.Client.epochBump() {
		return c.endV2(e, req, nowMs)
	}
	md := &e.md
	switch {
	case md.ProducerID != req.ProducerID:
		return replyCode(CodeInvalidProducerIDMapping)
	case req.Epoch != md.Epoch:
		return replyCode(CodeProducerFenced)
	case e.pending != nil:
		return replyCode(CodeConcurrentTransactions)
	}
	same := (md.State == CompleteCommit || md.State == PrepareCommit) == req.Commit
	switch md.State {
	case Ongoing:
		return c.prepare(e, &Transit{Target: c.prepareEnd(md, endState(req.Commit), req.Client, producer.NoID, false, nowMs), then: afterEnd})
	case CompleteCommit, CompleteAbort:
		if same {
			return Output{Reply: &Reply{Code: CodeNone, ProducerID: md.ProducerID, Epoch: md.Epoch}}
		}
	case PrepareCommit, PrepareAbort:
		if same {
			return replyCode(CodeConcurrentTransactions)
		}
	case Empty:
	default:
		panic("txn: " + md.TransactionalID + " rests in state " + md.State.String())
	}
	return replyCode(CodeInvalidTxnState)
}

func endState(commit bool) State {
	if commit {
		return PrepareCommit
	}
	return PrepareAbort
}

func (c *Coordinator) endV2(e *entry, req EndRequest, nowMs int64) Output {
	md := &e.md
	retryOverflow := md.PreviousProducerID == req.ProducerID && req.Epoch == maxEpoch-1 && md.Epoch == 0
	retryBump := md.Epoch == req.Epoch+1
	retry := retryOverflow || retryBump
	var validEpoch bool
	switch md.State {
	case PrepareCommit, PrepareAbort:
		// Kafka accepts only a retry here and fences the rest. Strand also
		// accepts the bumped epoch it has just answered: that producer's
		// next transaction (a TV2 client may end an empty one at once) is
		// no zombie, only early, and gets CONCURRENT_TRANSACTIONS below.
		validEpoch = retryBump || req.Epoch == md.Epoch
	case CompleteCommit, CompleteAbort:
		validEpoch = retry || req.Epoch == md.Epoch
	default:
		validEpoch = req.Epoch == md.Epoch
	}
	switch {
	case md.ProducerID != req.ProducerID && !retryOverflow:
		return replyCode(CodeInvalidProducerIDMapping)
	case !validEpoch:
		return replyCode(CodeProducerFenced)
	case e.pending != nil:
		return replyCode(CodeConcurrentTransactions)
	}
	switch md.State {
	case Ongoing:
		return c.completeV2(e, endState(req.Commit), req.Client, false, nowMs)
	case CompleteCommit, CompleteAbort:
		same := (md.State == CompleteCommit) == req.Commit
		switch {
		case same && retry:
			return Output{Reply: &Reply{Code: CodeNone, ProducerID: md.ProducerID, Epoch: md.Epoch}}
		case !req.Commit && !retry:
			return c.completeV2(e, PrepareAbort, req.Client, true, nowMs)
		}
	case PrepareCommit, PrepareAbort:
		if req.Epoch == md.Epoch || (md.State == PrepareCommit) == req.Commit {
			return replyCode(CodeConcurrentTransactions)
		}
	case Empty:
		if !req.Commit {
			return c.completeV2(e, PrepareAbort, req.Client, true, nowMs)
		}
	default:
		panic("txn: " + md.TransactionalID + " rests in state " + md.State.String())
	}
	return replyCode(CodeInvalidTxnState)
}

// completeV2 is Kafka's generateTxnTransitMetadataForTxnCompletion: roll to
// a new producer id when the epoch is exhausted, then PrepareX with a bump.
func (c *Coordinator) completeV2(e *entry, to State, v Version, noPartitionAdded bool, nowMs int64) Output {
	next := producer.NoID
	if exhausted(e.md.Epoch) {
		id, code := c.nextID()
		if code != CodeNone {
			return replyCode(code)
		}
		next = id
	}
	return c.prepare(e, &Transit{Target: c.prepareEnd(&e.md, to, v, next, noPartitionAdded, nowMs), then: afterEnd})
}

// Timeouts is the abort sweep (Kafka's abortTimedOutTransactions, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms): every Ongoing
// id with nothing pending whose start + timeout < now is fenced and aborted.
// The caller appends each Output's record in turn and reports each with
// Appended; nobody is answered. Ordered by transactional id.
func (c *Coordinator) Timeouts(nowMs int64) []Output {
	var outs []Output
	for _, id := range c.sortedIDs() {
		e := c.txns[id]
		if e.pending != nil || e.md.State != Ongoing || e.md.StartMs+int64(e.md.TimeoutMs) >= nowMs {
			continue
		}
		if out := c.fenceAbort(e, afterTimeout, nowMs); out.Append != nil {
			outs = append(outs, out)
		}
	}
	return outs
}

// Expire is the expiry sweep (Kafka's removeExpiredTransactionalIds): every
// id with nothing pending, in Empty or Complete*, last updated at least
// transactional.id.expiration.ms ago, gets a tombstone; Appended forgets it.
func (c *Coordinator) Expire(nowMs int64) []Output {
	var outs []Output
	for _, id := range c.sortedIDs() {
		e := c.txns[id]
		if e.pending != nil || !e.md.State.expirable() || e.md.LastUpdateMs > nowMs-c.cfg.ExpirationMs {
			continue
		}
		target := e.md.clone()
		target.State = Dead
		outs = append(outs, c.prepare(e, &Transit{Target: target, then: afterExpire}))
	}
	return outs
}

func (c *Coordinator) sortedIDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
