// Package producer owns idempotent-producer state: producer id allocation
// (InitProducerId) and, per partition, what each producer last wrote, so that
// a retried batch is acknowledged with its original offset instead of being
// written twice.
//
// # What it tracks, and why five batches
//
// A Kafka producer with idempotence enabled stamps every batch with
// (producer id, producer epoch, base sequence); the batch covers sequences
// base .. base+records-1. It keeps at most five requests in flight per
// partition, so a retry can only ever be for one of the last five batches
// the partition accepted. For each (producer id, partition) State therefore
// keeps the producer's epoch and the last five batches' (first sequence,
// last sequence, base offset, last offset), as Apache Kafka's
// ProducerStateManager does:
//
//	producer id ─► epoch, [ {firstSeq lastSeq baseOffset lastOffset ts} × ≤5 ]
//
// Check classifies an incoming batch:
//
//   - same epoch, same (first, last) sequence as a cached batch: a duplicate;
//     the caller answers with the cached base offset and writes nothing
//     (Kafka's DUPLICATE_SEQUENCE_NUMBER semantics: success, original offset);
//   - same epoch, first sequence = last sequence + 1 (wrapping at MaxInt32):
//     in order, append it;
//   - same epoch, any other sequence: ErrOutOfOrderSequence;
//   - older epoch: ErrInvalidProducerEpoch (the producer was fenced);
//   - newer epoch: accepted only at sequence 0;
//   - unknown producer id: accepted at any sequence (Kafka ≥ 2.5, KIP-360:
//     the state may have expired or been removed with the log prefix).
//
// # Recovery
//
// Every v2 batch header carries the producer id, epoch and base sequence, so
// the state of a partition is a pure function of its batch headers in log
// order (Observe). Snapshots (SaveSnapshot/DecodeSnapshot) only bound how
// many headers a rebuild reads: the broker writes one at clean close (used
// when the log still ends at its offset) and one at every segment roll, and
// after a crash loads the newest roll snapshot at or below the recovered log
// end and observes only the headers after it, as Kafka does.
//
// Producer ids are allocated in blocks whose upper bound is persisted before
// any id of the block is handed out (Allocator), so no id is ever reused
// after a restart, crash or not; a crash wastes the rest of a block.
//
// # Thread-safety
//
// Allocator is safe for concurrent use. State is not: the partition that owns
// it serialises Check and Update under its append lock (Check, then append,
// then Update must be atomic with respect to other producers' batches).
//
// producer must never know about the wire protocol or do I/O other than its
// own id and snapshot files.
package producer
