package partition

// Transactions, partition side (KIP-98): transactional batches open a
// producer's transaction on the partition, a control batch (marker) written
// by the transaction coordinator ends it, and read_committed readers stop at
// the last stable offset and are told which transactions were aborted. The
// state itself is producer.State's (txn.go there); this file applies it to
// appends, markers, recovery and reads.

import (
	"context"
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/compact"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
)

// Errors of the transactional produce path.
var (
	// ErrInvalidTxnState: a producer with an open transaction wrote a
	// non-transactional batch, or a transactional batch arrived for a
	// partition its transaction has not added (INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("broker: invalid transaction state")
)

// observeLocked applies a batch read from the log or a leader to the
// producer state: sequences, and for a control batch the marker it holds.
func (p *Partition) observeLocked(s *producer.State, h record.Header, batch []byte) {
	if h.IsTransactional() {
		p.txnActive.Store(true)
	}
	if !h.IsControl() {
		s.Observe(h)
		return
	}
	m, err := record.DecodeMarker(batch)
	if err != nil {
		p.node.Logger.Warn("broker: unreadable control batch", "topic", p.topic, "partition", p.id, "offset", h.BaseOffset, "err", err)
		return
	}
	s.EndTxn(producer.ID(h.ProducerID), producer.Epoch(h.ProducerEpoch), h.BaseOffset, m.Commit)
}

// txnCheck is what an append knows of a transactional batch's
// transaction.
type txnCheck int

const (
	// txnUnverified: the batch may only join a transaction already open
	// here at its epoch.
	txnUnverified txnCheck = iota
	// txnVerified: the coordinator confirmed (or added) the partition in
	// the producer's ongoing transaction; the batch may open it here.
	txnVerified
	// txnBrokerWrite: the broker writes the batch into a transaction whose
	// coordinator added the partition (a DLQ quarantine).
	txnBrokerWrite
)

// checkTxnLocked applies the transaction rules to a producer's batch
// before it is appended. A transactional batch may open a transaction here
// only when verified (its coordinator confirmed the partition is in the
// producer's ongoing transaction), checked under the same lock as the
// append: a marker landing between a check and the append must not leave a
// transaction open that its coordinator does not know of (a hanging
// transaction, KIP-890). p.mu must be held.
func (p *Partition) checkTxnLocked(h record.Header, txn txnCheck) error {
	pid := producer.ID(h.ProducerID)
	if h.IsTransactional() {
		// The coordinators' own writes (internal topics) and a DLQ
		// quarantine the broker writes inside a producer's transaction
		// carry no sequence; they are checked where they are made.
		trusted := p.config.Load().Trusted || txn == txnBrokerWrite
		switch {
		case pid < 0 || h.BaseSequence < 0 && !trusted:
			return fmt.Errorf("%w: %s-%d: a transactional batch needs a producer id and sequence", ErrInvalidRecord, p.topic, p.id)
		case txn == txnUnverified && !trusted && !p.mu.producers.InTxnAt(pid, producer.Epoch(h.ProducerEpoch)):
			return fmt.Errorf("%w: %s-%d is not in producer %d's transaction at epoch %d", ErrInvalidTxnState, p.topic, p.id, pid, h.ProducerEpoch)
		}
		return nil
	}
	if pid >= 0 {
		if _, open := p.mu.producers.OpenTxn(pid); open {
			return fmt.Errorf("%w: %s-%d: producer %d wrote a non-transactional batch inside its transaction", ErrInvalidTxnState, p.topic, p.id, pid)
		}
	}
	return nil
}

// WriteMarker appends the control batch that ends producer (pid, epoch)'s
// transaction on this partition and waits until it is committed (on disk
// per the flush policy, and replicated to the ISR): only then may the
// coordinator move on to CompleteCommit/CompleteAbort. A marker for a
// producer with no open transaction here is still written, as Kafka does
// (the coordinator retries markers after a crash; a second one is
// harmless), unless its epoch is older than the producer's: that one is
// stale.
func (p *Partition) WriteMarker(ctx context.Context, pid producer.ID, epoch producer.Epoch, commit bool, coordinatorEpoch int32) error {
	if err := p.notLeader(); err != nil {
		return err
	}
	batch, err := record.EncodeMarker(int64(pid), int16(epoch), record.Marker{Commit: commit, CoordinatorEpoch: coordinatorEpoch}, p.node.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("broker: encode marker: %w", err)
	}
	state := p.state()
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return fmt.Errorf("%w: %s-%d was deleted", ErrUnknownTopicOrPartition, p.topic, p.id)
	}
	if cur, ok := p.mu.producers.Epoch(pid); ok && epoch < cur {
		p.mu.Unlock()
		return fmt.Errorf("%w: %s-%d: marker for producer %d at epoch %d, current epoch %d", producer.ErrInvalidProducerEpoch, p.topic, p.id, pid, epoch, cur)
	}
	base, pending, err := p.log.AppendAsync(batch)
	if err != nil {
		p.mu.Unlock()
		return storageError(p, err)
	}
	p.mu.producers.EndTxn(pid, epoch, base, commit)
	p.mu.Unlock()
	if p.node.Clustered {
		p.AdvanceHighWatermark()
	}
	res := AppendResult{BaseOffset: base, LogAppendTime: -1, last: base}
	c := Commit{p: p, res: res, pending: pending, acks: AcksAll, bytes: len(batch), records: 1, state: state}
	if err := c.Wait(ctx); err != nil {
		return err
	}
	// A coordinator whose records are here (offsets committed in the
	// transaction) acts on the outcome now that the marker is in the log.
	return p.node.Host.MarkerWritten(ctx, p, pid, commit)
}

// LastStableOffset is the offset below which every transaction's outcome
// is known and committed: a read_committed reader's limit (≤ the high
// watermark).
//
// Without a transaction it is the high watermark, read without the lock.
// The order matters: the high watermark is read before txnActive, and an
// append sets txnActive before its batch can move the high watermark, so a
// high watermark that already covers a new transaction's first batch is
// never returned as stable (an aborted read the ETL test caught once in
// ten runs).
func (p *Partition) LastStableOffset() record.Offset {
	if hw := p.log.HighWatermark(); !p.txnActive.Load() {
		return hw
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	lso := p.mu.producers.LastStable(p.log.HighWatermark())
	p.txnActive.Store(p.mu.producers.Unstable())
	return lso
}

// OpenTransactions returns how many transactions are open on the partition.
func (p *Partition) OpenTransactions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.producers.OpenTxns()
}

// ReadCommittedInto is ReadInto for a read_committed reader: batches below
// the last stable offset only, with the aborted transactions that overlap
// what was returned (the client drops their records).
func (p *Partition) ReadCommittedInto(buf []byte, from record.Offset, maxBytes int) (ReadResult, []producer.AbortedTxn, error) {
	return p.ConsumerReads(false).CommittedInto(buf, from, maxBytes)
}

// CommittedInto is ReadCommittedInto, served as r allows.
func (r Reads) CommittedInto(buf []byte, from record.Offset, maxBytes int) (ReadResult, []producer.AbortedTxn, error) {
	p := r.p
	if err := p.serving(r.anyReplica); err != nil {
		return ReadResult{}, nil, err
	}
	lso := p.LastStableOffset()
	b, err := p.log.ReadInto(buf, from, maxBytes, lso)
	b, err = p.remoteRead(buf, b, err, from, maxBytes)
	res := ReadResult{Batches: b, HighWatermark: p.log.HighWatermark(), LogStartOffset: p.logStart(), LastStable: lso}
	if err != nil {
		return res, nil, p.readError(from, err)
	}
	if len(b) == 0 {
		return res, nil, nil
	}
	last := from
	for sc := record.Batches(b); sc.Next(); {
		h := sc.Header()
		last = h.LastOffset()
	}
	// Every transaction with data below lso ended before lso was read, so
	// its abort (if it was one) is indexed now.
	p.mu.Lock()
	aborted := p.mu.producers.Aborted(from, last)
	p.mu.Unlock()
	return res, withData(aborted, b), nil
}

// withData keeps the aborted transactions that have a data batch in b. A
// client drops a producer's batches from the first offset of an aborted
// transaction until it meets the abort marker; once compaction has removed
// a transaction's records and then its marker, naming it would make the
// client drop the producer's later, committed batches.
func withData(aborted []producer.AbortedTxn, b []byte) []producer.AbortedTxn {
	if len(aborted) == 0 {
		return nil
	}
	keep := make([]bool, len(aborted))
	for sc := record.Batches(b); sc.Next(); {
		h := sc.Header()
		if h.IsControl() || !h.IsTransactional() {
			continue
		}
		for i, a := range aborted {
			if int64(a.ProducerID) == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset <= a.LastOffset {
				keep[i] = true
			}
		}
	}
	out := aborted[:0]
	for i, a := range aborted {
		if keep[i] {
			out = append(out, a)
		}
	}
	return out
}

// InTxn reports whether producer pid has a transaction open here, begun
// at epoch.
func (p *Partition) InTxn(pid producer.ID, epoch producer.Epoch) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.producers.InTxnAt(pid, epoch)
}

// CleanerTxnBounds returns what compaction needs of the transactions: the
// last stable offset and the aborted transactions.
func (p *Partition) CleanerTxnBounds() (record.Offset, []compact.AbortedTxn) {
	lso := p.LastStableOffset()
	p.mu.Lock()
	defer p.mu.Unlock()
	ab := p.mu.producers.Aborted(0, lso)
	out := make([]compact.AbortedTxn, len(ab))
	for i, a := range ab {
		out[i] = compact.AbortedTxn{ProducerID: int64(a.ProducerID), First: a.FirstOffset, Last: a.LastOffset}
	}
	return lso, out
}
