// Package broker is a Strand node below the wire protocol: the registry of
// topics and their partitions, the data directory, the node's lifecycle,
// its place in a cluster, and the in-process API that mirrors the seed's
// mini broker (Produce, Fetch, ListOffsets, CreateTopic, …, and
// Group(g).Poll/CommitThrough/Seek/Lag) for the embed API and tests.
//
// What it owns, by file:
//
//   - the registry: broker.go (Open, Close, the topics map, Topic
//     snapshots), admin.go (create, delete, alter configs, add
//     partitions), topicconfig.go (package topicconfig's names), internal.go
//     (internal topics and their pinned configs), stats.go, acls.go;
//   - the data directory: meta.go, dirs.go (partition directories and
//     their claims), shutdown_marker.go (the files themselves are package
//     datadir's), scrub.go, cleaner.go;
//   - the partitions it hosts: partitions.go opens each one (package
//     partition) and is its partition.Host; the follower fetchers are
//     package fetcher's;
//   - the cluster: member.go (registration, heartbeats, fencing), roles.go
//     (--roles kept in meta.properties; the quorum's controllers),
//     reconcile.go (this node's partitions made to match the metadata
//     image), clusterview.go, placement.go (topics created through the
//     controller; where replicas go is cluster.Place), elect.go,
//     remote.go (writes to partitions led elsewhere, through wire.Peers);
//   - coordinator hosting: offsets.go (group coordinators over
//     __consumer_offsets), txncoord.go (which transaction coordinators of
//     package txncoord run here, their markers, routing), schemas.go
//     (_schemas for package schemastore), share.go (the node as package
//     sharenode's Broker, which hosts share groups), ingest.go (validation
//     configs, DLQ topics for package dlq); each coordinator's storage is
//     beside its state machine, and the shards that follow leadership are
//     coordlog.Shards;
//   - tiered storage: tiered.go (the object store, the upload loop over
//     the partitions this node leads; a partition's tier is package
//     partition's, the tier itself package tiered's);
//   - the in-process API: api.go, groups.go.
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
// meta.json first and then deletes the directories. On open (dirs.go), a
// partition directory the metadata does not list is removed only when it
// is explained: a deleted topic's (its id is tombstoned) or an
// interrupted create's (it holds no records). One that holds records no
// topic explains stops the open with an error that names it (or, with
// Config.RecoverTopics, is registered again), so no data is deleted on a
// guess.
//
// # One node or a cluster member
//
// Every partition has a leader, replicas, an ISR and a leader epoch. A
// single node leads all of them at epoch 0 with itself as the only replica;
// a cluster member's partitions take their roles from the metadata image
// (reconcile.go), and the controller (package cluster) decides leaders and
// ISRs.
//
// # What it must never do
//
// broker never speaks the Kafka wire protocol (no kmsg/kerr types: the wire
// layer maps the sentinel errors here to error codes, and calls to other
// nodes are package wire's), and never re-encodes a producer's batch:
// partitions hand the bytes to partlog, which assigns offsets in place (the
// one exception, a validated topic's batch with invalid records, is package
// dlq's).
//
// # Thread-safety
//
// Broker and Topic are safe for concurrent use. Lock order: Broker.admin
// (topic changes, meta.json) → Broker.mu (the registry) → a partition's
// lock (package partition). A *Topic is an immutable snapshot; a topic
// change installs a new one that shares the unchanged partitions. Reads
// take no partition lock.
package broker
