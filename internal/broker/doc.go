// Package broker is Strand's composition root below the wire protocol: the
// registry of topics and their partitions (one partlog.Log each), topic
// configs with Kafka's names, defaults and validation, persistence of both
// across restarts, idempotent-producer bookkeeping on the produce path, and
// the in-process API that mirrors the seed's mini broker (Produce, Fetch,
// ListOffsets, CreateTopic, …, and Group(g).Poll/CommitThrough/Seek/Lag)
// for the embed API and tests. It owns the consumer-group coordinator
// (package group) and its storage: the internal topic __consumer_offsets
// (offsets.go), created at open with one partition (a single node has
// nothing to spread), cleanup.policy=compact and no time or size retention;
// it is listed as internal and cannot be deleted.
//
// # Layout on disk
//
//	<dir>/meta.json                     cluster id, topics (name, id, partition count, config overrides)
//	<dir>/producer-ids.json             producer id block reservations (package producer)
//	<dir>/producer-state/<t>-<p>.json   producer state snapshot, written at clean close
//	<dir>/<topic>-<partition>/          the partition's segments (package partlog)
//
// Topic changes are applied in an order that makes a crash at any point
// recoverable: CreateTopic and CreatePartitions open the new partition
// directories first and then rewrite meta.json; DeleteTopic rewrites
// meta.json first and then deletes the directories. On open, partition
// directories that meta.json does not list are leftovers of such a crash
// and are removed.
//
// # Single node, cluster-shaped
//
// A broker has a node id and describes every partition with a leader (itself),
// replicas and ISR ({itself}) and a leader epoch (0), so that the wire layer
// can answer as a cluster of one; replication (internal/cluster) will change
// who the leader is, not this shape.
//
// # What it must never do
//
// broker never speaks the Kafka wire protocol (no kmsg/kerr types: the wire
// layer maps the sentinel errors here to error codes), and never re-encodes a
// producer's batch: it validates the header and CRC and hands the bytes to
// partlog, which assigns offsets in place. The one exception is a batch of a
// validated topic (strand.validation) holding invalid records: those go to
// the DLQ, and the valid ones are re-encoded into a batch that keeps the
// producer's offset range, producer id, sequence and codec (ingest.go).
//
// # Thread-safety
//
// Broker, Topic and Partition are safe for concurrent use. Lock order:
// Broker.admin (topic changes, meta.json) → Broker.mu (the registry) →
// Partition.mu (append path: idempotence check, append, state update).
// A *Topic is an immutable snapshot; a topic change installs a new one that
// shares the unchanged partitions. Reads take no partition lock.
package broker
