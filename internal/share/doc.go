// Package share owns share groups (KIP-932, "queues for Kafka"): the
// share-partition state machine, its persisted form in __share_group_state,
// share-group membership with a server-side assignor, and dead-letter
// routing with reasons (KIP-1191).
//
// The state machine (Partition) is pure: no goroutines, no I/O, time is a
// parameter. It keeps, for one (group, topic, partition), the in-flight
// window [start, end): every offset in it is Available, Acquired (by one
// member, under a lock with a deadline), Acknowledged or Archived, with a
// delivery count. Offsets below start are done (acknowledged or archived);
// offsets at or past end have never been acquired. The window's start
// advances over a done prefix; its length is bounded by the max record locks.
//
// Invariants (checked by the model test, property_test.go):
//   - every offset in [start, end) has exactly one state; start ≤ end;
//   - an Acquired offset has an owner and a deadline; no other state has one;
//   - a delivery count is ≥ 1 for an offset that was ever acquired and
//     never decreases; an Available offset has been delivered fewer times
//     than the delivery-count limit (at the limit it is archived instead);
//   - the offset at start, if any, is neither Acknowledged nor Archived;
//   - an Acknowledged or Archived offset never changes state again.
//
// The Manager and the Coordinator hold Partitions and Groups behind their
// own locks; they reach storage only through the Host interface, which
// package sharenode implements over the node, so this package never
// imports internal/broker or internal/kafka.
package share
