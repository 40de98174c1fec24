// Package fetcher is the follower side of replication (REPLICATION.md
// §2.2, §2.8): one fetcher per leader this node follows, on that leader's internal
// listener, with Kafka's own Fetch (ReplicaState) and
// OffsetForLeaderEpoch. A partition that starts following first asks its
// leader where its latest epoch ends and truncates what the leader does
// not have; then it fetches from its end offset, appends the leader's
// batches as they are (offsets, epochs), and takes the leader's high
// watermark. Each fetch is also what tells the leader how far it has
// come.
//
// It is the one part of a partition replica that speaks the Kafka wire
// protocol (through package wire), which is why it is not in package
// partition: it drives a follower partition only through that package's
// exported follower calls (TruncateAsFollower, AppendFromLeader, …).
package fetcher
