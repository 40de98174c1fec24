// Package txncoord runs the transaction coordinator on a node: package txn
// is the pure state machine; this package gives it its log (a
// __transaction_state partition, through package coordlog), performs the
// effects each call returns — append the record, answer, write the
// markers (through the node's WriteMarker), append the completion — and
// runs the timeout and expiry sweeps. One Coordinator runs per
// __transaction_state partition the node leads; the node (package broker)
// decides which, loads them when it gains leadership and stops them when
// it loses it, so the coordinator of a transactional id moves with its
// partition, as Kafka's does.
package txncoord
