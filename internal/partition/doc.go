// Package partition is one replica of one partition on this node: its log
// (a partlog.Log the node opened), the append path — batch checks,
// idempotent-producer and transactional state, the acks and the commit
// wait — the high watermark and the ISR-dependent commit, the leader and
// follower roles and what each serves, the follower's appends and its
// truncation by leader epoch, producer-state snapshots and their recovery,
// and the topic traffic counters a partition adds to.
//
// Files are named for what they do: partition.go (open, append, commit,
// read, list offsets, truncation), role.go (the replica state: role,
// leader, ISR, epochs), leader.go (followers' progress, the high watermark,
// ISR changes), follower.go (a follower's appends and truncations from its
// leader), txn.go (transactions: markers, the last stable offset, aborted
// ranges), producers.go (producer-state snapshots and recovery), reads.go
// (who may serve a consumer's read; the rack-aware preferred replica),
// tiered.go (the remote tier), tiered_replica.go (a follower that starts
// from the remote tier, the producer snapshots uploaded with segments),
// remote_deletes.go (the journal of deleted partitions' remote objects),
// dirname.go (partition directory names),
// traffic.go (counters) and node.go (what the node provides: Node, Host,
// Config).
//
// # What it must never do
//
// A partition knows no topic registry, no coordinator and no Kafka wire
// type: the node (package broker) derives its Config from the topic's
// configs, fetches from the leader for it (the follower fetcher speaks the
// wire protocol), and answers its Host calls — the metadata image, fencing,
// AlterPartition, transaction markers a coordinator must see. Validation
// with a dead-letter queue reaches it only as a Screener. It never
// re-encodes a producer's batch: it validates the header and CRC and hands
// the bytes to partlog, which assigns offsets in place.
//
// # Thread-safety
//
// A Partition is safe for concurrent use. Its lock (the append path:
// idempotence check, append, state update) is below the node's registry
// locks; a quarantine writes its DLQ partition under the source
// partition's lock (source → DLQ, never the reverse). The replica state is
// replaced whole through an atomic pointer, so reads take no lock.
package partition
