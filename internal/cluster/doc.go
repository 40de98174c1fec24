// Package cluster owns cluster metadata: the image every node serves from
// (topics, their ids, partition counts and configs, and the tombstones of
// deleted topics), the records that change it, and the stores that keep
// it. A store applies records durably and publishes the next image; the
// broker reads the image and reacts to changes.
//
// FileStore keeps the metadata of a single node in meta.json, as Strand
// always has. The Raft-replicated store of a cluster (REPLICATION.md §1)
// takes the same records, so the broker does not change when it comes.
package cluster
