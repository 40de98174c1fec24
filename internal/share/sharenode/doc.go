// Package sharenode hosts share groups (KIP-932, package share) on a node:
// it gives package share's Manager, Coordinator and StateShards their
// storage and their routes, over a small interface the node offers
// (Broker: its topics, the partitions it leads, an internal topic's
// partition as a coordlog.Store, and appends to dead-letter topics).
//
// On a single node a share-partition's state and the groups' configs live
// in __share_group_state's one partition (host.go). On a cluster
// (cluster.go, store.go) __share_group_state has as many partitions as
// __consumer_offsets; the leader of the partition a share-partition's key
// hashes to is its share coordinator (a share.StateShard, loaded and
// dropped with the leadership through coordlog.Shards), the
// share-partition itself lives on its data partition's leader (the node's
// share.Manager), which reads and writes its state through the
// coordinator here or on another node (the share-coordinator RPCs,
// package wire), and group configs come from the cluster's metadata.
//
// It never imports internal/broker or internal/kafka: the node (package
// broker) implements Broker and calls the lifecycle (New, Sync, Close).
package sharenode
