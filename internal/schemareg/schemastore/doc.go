// Package schemastore is the schema registry's storage: the internal topic
// _schemas and the schemareg.Store over it (issue 17).
//
// One compacted partition holds the registry's records, as Confluent's and
// Redpanda's registries keep theirs. Every node that has a replica tails
// it from its start up to the high watermark and folds each record into a
// schemareg.State, so every node serves the same schemas, in the same
// order. A write produces one record with acks=all (to the partition's
// leader, through the internal listener when that is another node) and
// returns once this node has read it back: the registry's state is never
// ahead of the log.
//
// Two nodes may decide a write on the same state at once (both give the
// next id to different schemas). Each record's key carries the offset its
// writer planned it for (schemareg.Key.Seq); a record read at another
// offset lost the race and is ignored by every reader, and its writer
// decides again (schemareg.ErrConflict). The alternative, forwarding every
// write to one elected registry leader as Confluent does, needs each
// node's registry address and a leader election; the log already orders
// writes, so the offset check is enough.
//
// Clients cannot produce to _schemas (it is internal: INVALID_TOPIC_EXCEPTION,
// as for __consumer_offsets), nor delete it or its records; only the
// registry writes there, through Partition.Append or another node's
// internal listener. They can read it (consume, as Confluent's tools do).
//
// The node (package broker) provides its replica of _schemas (created by
// the first write) and the way to the partition's leader (Node), and
// tails the partition with ReadFrom as it commits.
package schemastore
