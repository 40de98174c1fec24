// Package txn is the transaction coordinator of KIP-98/447/890 as a pure
// state machine, with the record codec of its log, __transaction_state.
//
// # What it owns
//
// For each transactional id, Metadata in one of Kafka's eight states
// (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
// CompleteAbort, Dead, PrepareEpochFence) and the rules that move it:
// InitProducerId with a transactional id (epoch bump fences the previous
// instance, exhausted epochs roll to a new producer id, KIP-360 retries),
// AddPartitionsToTxn (TV1 explicit, TV2 implicit), AddOffsetsToTxn, EndTxn
// (TV1, and TV2's epoch bump per transaction, overflow and empty abort),
// timeouts and id expiry as sweeps called with a clock value, and the error
// codes in the order Kafka checks them (TransactionCoordinator.scala,
// TransactionMetadata.scala of Kafka 4.0).
//
// # Shape: inputs, effects, pending transitions
//
// Every request method takes the request and now (ms) and returns an
// Output: a Reply to send now, or a Transit whose Record the caller appends
// to __transaction_state, or Markers to write. Nothing changes state until
// the caller reports the append with Appended (Kafka's prepareTransitionTo →
// append → completeTransitionTo); meanwhile the id answers
// CONCURRENT_TRANSACTIONS. The life of a commit:
//
//	EndTxn ─► Append(PrepareCommit) ─► Appended ─► Reply + Markers
//	       ─► (markers written) ─► Append(CompleteCommit) ─► Appended
//
// The one exception, as in Kafka: a fencing abort bumps the epoch in memory
// before its record is durable, so the fenced producer is refused at once;
// if that append fails the next fence does not bump again.
//
// Replay rebuilds every id from the records, as a new coordinator does on
// load; Load also returns the markers still owed by ids in PrepareX.
// LastEpoch is not in Kafka's log and is NoEpoch after a load.
//
// # Not yet (A3 and later)
//
// No goroutines, timers, I/O or wire types: the broker owns the
// __transaction_state partitions, appends the records, sends markers,
// runs the sweeps, finds the coordinator (PartitionFor) and maps kmsg
// requests. TxnOffsetCommit is the group coordinator's; partition existence
// checks are the caller's. DescribeTransactions and ListTransactions are
// here (Describe, List) for the ids of one coordinator; merging the lists
// of several __transaction_state partitions is the caller's.
//
// # Thread-safety
//
// A Coordinator is not safe for concurrent use: drive it from one
// goroutine or under one lock. Returned Metadata are copies.
package txn
