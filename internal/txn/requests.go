package txn

import (
	"slices"

	"github.com/strandmq/strand/internal/producer"
)

// InitRequest is InitProducerId with a transactional id. ProducerID and
// Epoch are the v3+ "expected" pair (KIP-360); both NoID/NoEpoch when absent.
type InitRequest struct {
	TransactionalID string
	TimeoutMs       int32
	ProducerID      producer.ID
	Epoch           producer.Epoch
}

// InitProducerID handles InitProducerId for a transactional id (a null id
// is the idempotent path and never reaches the coordinator). Checks, in
// Kafka's order (KafkaApis, then TransactionCoordinator.handleInitProducerId
// and prepareInitProducerIdTransit): empty id or half an expected pair →
// INVALID_REQUEST; timeout ≤ 0 or > max → INVALID_TRANSACTION_TIMEOUT; a new
// id gets a fresh producer id; a pending transition → CONCURRENT_TRANSACTIONS;
// an expected pair naming another producer → PRODUCER_FENCED; PrepareX →
// CONCURRENT_TRANSACTIONS; Ongoing → fence (bump the epoch and abort), answer
// CONCURRENT_TRANSACTIONS once the abort is durable; else bump the epoch, or
// roll to a new producer id when the epoch is exhausted.
func (c *Coordinator) InitProducerID(req InitRequest, nowMs int64) Output {
	expected := req.ProducerID != producer.NoID || req.Epoch != NoEpoch
	switch {
	case req.TransactionalID == "":
		return replyCode(CodeInvalidRequest)
	case expected && (req.ProducerID == producer.NoID || req.Epoch == NoEpoch):
		return replyCode(CodeInvalidRequest)
	case req.TimeoutMs <= 0 || req.TimeoutMs > c.cfg.MaxTimeoutMs:
		return replyCode(CodeInvalidTransactionTimeout)
	}
	e, ok := c.txns[req.TransactionalID]
	fresh := false
	if !ok {
		id, code := c.nextID()
		if code != CodeNone {
			return replyCode(code)
		}
		e = &entry{md: Metadata{
			TransactionalID: req.TransactionalID, ProducerID: id, PreviousProducerID: producer.NoID,
			NextProducerID: producer.NoID, Epoch: NoEpoch, LastEpoch: NoEpoch, TimeoutMs: req.TimeoutMs,
			State: Empty, StartMs: -1, LastUpdateMs: nowMs,
		}}
		c.txns[req.TransactionalID] = e
		fresh = true
	}
	out := c.init(e, req, expected, nowMs)
	if out.Append != nil {
		out.Append.fresh = fresh
	} else if fresh {
		delete(c.txns, req.TransactionalID) // nothing will be written for it
	}
	return out
}

func (c *Coordinator) init(e *entry, req InitRequest, expected bool, nowMs int64) Output {
	md := &e.md
	validID := md.Epoch == NoEpoch || req.ProducerID == md.ProducerID ||
		(req.ProducerID == md.PreviousProducerID && exhausted(req.Epoch))
	switch {
	case e.pending != nil:
		return replyCode(CodeConcurrentTransactions)
	case expected && !validID:
		return replyCode(CodeProducerFenced)
	}
	switch md.State {
	case PrepareCommit, PrepareAbort:
		return replyCode(CodeConcurrentTransactions)
	case Ongoing:
		return c.fenceAbort(e, afterFence, nowMs)
	case Empty, CompleteCommit, CompleteAbort:
	default:
		panic("txn: " + md.TransactionalID + " rests in state " + md.State.String())
	}
	target := md.clone()
	target.State, target.TimeoutMs, target.Partitions, target.StartMs, target.LastUpdateMs = Empty, req.TimeoutMs, nil, -1, nowMs
	target.PreviousProducerID = md.ProducerID
	if exhausted(md.Epoch) && (!expected || req.Epoch == md.Epoch) {
		id, code := c.nextID()
		if code != CodeNone {
			return replyCode(code)
		}
		target.ProducerID, target.Epoch, target.LastEpoch = id, 0, NoEpoch
		if expected {
			target.LastEpoch = md.Epoch
		}
		return c.prepare(e, &Transit{Target: target, then: afterInit})
	}
	switch {
	case !expected:
		target.Epoch, target.LastEpoch = md.Epoch+1, NoEpoch
	case md.Epoch == NoEpoch || req.Epoch == md.Epoch:
		target.Epoch, target.LastEpoch = md.Epoch+1, md.Epoch
	case req.Epoch == md.LastEpoch: // a retry of a bump the client never heard of
		target.Epoch, target.LastEpoch = md.Epoch, md.LastEpoch
	default:
		return replyCode(CodeProducerFenced)
	}
	return c.prepare(e, &Transit{Target: target, then: afterInit})
}

// fenceAbort is Kafka's prepareFenceProducerEpoch followed by the
// coordinator's own EndTxn(abort) at the cluster's transaction version: the
// epoch is bumped in memory at once (so the fenced producer's requests fail
// with PRODUCER_FENCED) and PrepareAbort is prepared.
//
// Deviation: at the cluster's TV2 the abort bumps the epoch again; when the
// fenced epoch is already Short.MaxValue, Kafka would overflow, Strand keeps
// Short.MaxValue (no client ever holds it) and rolls to a new producer id
// on completion as for any exhausted epoch.
func (c *Coordinator) fenceAbort(e *entry, then after, nowMs int64) Output {
	md := &e.md
	var next producer.ID = producer.NoID
	if c.cfg.Version.epochBump() && exhausted(md.Epoch) {
		id, code := c.nextID()
		if code != CodeNone {
			return replyCode(code)
		}
		next = id
	}
	if !e.failedFence && md.Epoch < maxEpoch {
		md.Epoch++
	}
	md.LastEpoch = NoEpoch
	target := c.prepareEnd(md, PrepareAbort, c.cfg.Version, next, false, nowMs)
	return c.prepare(e, &Transit{Target: target, then: then, fence: true})
}

// prepareEnd is Kafka's prepareAbortOrCommit: PrepareX, with the TV2 epoch
// bump (markers then carry epoch+1, so a late produce of this txn is
// rejected).
func (c *Coordinator) prepareEnd(md *Metadata, to State, v Version, next producer.ID, noPartitionAdded bool, nowMs int64) Metadata {
	target := md.clone()
	target.State, target.LastUpdateMs, target.Client = to, nowMs, v
	if v.epochBump() {
		target.LastEpoch = md.Epoch
		if md.Epoch < maxEpoch {
			target.Epoch = md.Epoch + 1
		}
		target.NextProducerID = next
	}
	if noPartitionAdded {
		target.StartMs = nowMs
	}
	return target
}

// AddRequest is AddPartitionsToTxn (v0–3, one transaction), the implicit
// add of a TV2 Produce (v12+) or TxnOffsetCommit v5, and AddOffsetsToTxn
// after mapping the group to its partition. Client is the transaction
// version of the request: Kafka takes TV2 for the implicit adds and for
// AddPartitionsToTxn above v3, TV0 otherwise
// (TransactionVersion.transactionVersionForAddPartitionsToTxn).
type AddRequest struct {
	TransactionalID string
	ProducerID      producer.ID
	Epoch           producer.Epoch
	Partitions      []Partition
	Client          Version
}

// AddPartitions adds partitions to the id's transaction. Checks, in Kafka's
// order (handleAddPartitionsToTransaction): empty id → INVALID_REQUEST;
// unknown id or other producer id → INVALID_PRODUCER_ID_MAPPING; other
// epoch → PRODUCER_FENCED; pending transition or PrepareX →
// CONCURRENT_TRANSACTIONS; Ongoing with every partition already in →
// NONE, nothing written. Checking that the partitions exist is the
// caller's (UNKNOWN_TOPIC_OR_PARTITION on those, OPERATION_NOT_ATTEMPTED on
// the rest, before calling).
func (c *Coordinator) AddPartitions(req AddRequest, nowMs int64) Output {
	if req.TransactionalID == "" {
		return replyCode(CodeInvalidRequest)
	}
	e, ok := c.txns[req.TransactionalID]
	switch {
	case !ok || e.md.ProducerID != req.ProducerID:
		return replyCode(CodeInvalidProducerIDMapping)
	case e.md.Epoch != req.Epoch:
		return replyCode(CodeProducerFenced)
	case e.pending != nil || e.md.State.prepared():
		return replyCode(CodeConcurrentTransactions)
	}
	md := &e.md
	add := slices.SortedFunc(slices.Values(req.Partitions), comparePartitions)
	if md.State == Ongoing && subset(add, md.Partitions) {
		return replyCode(CodeNone)
	}
	target := md.clone()
	if md.State == Empty || md.State == CompleteCommit || md.State == CompleteAbort {
		target.StartMs = nowMs
	}
	target.State, target.Partitions, target.LastUpdateMs = Ongoing, union(md.Partitions, add), nowMs
	if md.State != Ongoing {
		// The request that begins a transaction fixes its generation; a
		// broker's add to an ongoing one (a DLQ partition) keeps it.
		target.Client = req.Client
	}
	return c.prepare(e, &Transit{Target: target, then: afterAdd})
}

// AddOffsets is AddOffsetsToTxn: it adds the group's __consumer_offsets
// partition, as Kafka's handler does through AddPartitions.
func (c *Coordinator) AddOffsets(transactionalID string, pid producer.ID, epoch producer.Epoch, group string, client Version, nowMs int64) Output {
	p := Partition{Topic: OffsetsTopic, Partition: PartitionFor(group, c.cfg.OffsetsPartitions)}
	return c.AddPartitions(AddRequest{TransactionalID: transactionalID, ProducerID: pid, Epoch: epoch, Partitions: []Partition{p}, Client: client}, nowMs)
}

// Verify is KIP-890 part 1's verification for a transactional Produce ≤ v11
// (AddPartitionsToTxn v4+ VerifyOnly): the whole-request code, or per
// partition NONE when it is in the ongoing transaction and
// TRANSACTION_ABORTABLE when not. Nothing is written.
func (c *Coordinator) Verify(transactionalID string, pid producer.ID, epoch producer.Epoch, parts []Partition) (Code, map[Partition]Code) {
	if transactionalID == "" {
		return CodeInvalidRequest, nil
	}
	e, ok := c.txns[transactionalID]
	switch {
	case !ok || e.md.ProducerID != pid:
		return CodeInvalidProducerIDMapping, nil
	case e.md.Epoch != epoch:
		return CodeProducerFenced, nil
	case e.md.State.prepared():
		return CodeConcurrentTransactions, nil
	}
	out := make(map[Partition]Code, len(parts))
	for _, p := range parts {
		out[p] = CodeTransactionAbortable
		if _, in := slices.BinarySearchFunc(e.md.Partitions, p, comparePartitions); in {
			out[p] = CodeNone
		}
	}
	return CodeNone, out
}
