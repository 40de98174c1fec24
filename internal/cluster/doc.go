// Package cluster owns cluster metadata: the image every node serves from
// (topics, their ids, partition counts and configs, and the tombstones of
// deleted topics), the records that change it, and the stores that keep
// it. A store applies records durably and publishes the next image; the
// broker reads the image and reacts to changes.
//
// FileStore keeps the metadata of a single node in meta.json, as Strand
// always has. The Raft-replicated store of a cluster (REPLICATION.md §1,
// internal/cluster/quorum) takes the same records, so the broker does not
// change when it comes. A node's roles (roles.go, KRaft's process.roles)
// say whether it votes in that quorum, hosts partitions, or both.
//
// The controller's decisions are here too, as pure functions of an image
// that return records: where partitions go (placement.go), ISR and leader
// changes (isr.go, change.go, elect.go), reassignments, the partition
// balancer's plan (balancer.go) and the throttled-replica lists a finished
// reassignment drops (throttle.go). Package quorum runs them on the raft
// leader; tests here drive them without a quorum (sim_test.go).
package cluster

import "context"

// Store keeps cluster metadata: FileStore on a single node, quorum's
// RaftStore in a quorum. Apply makes recs durable (committed) before it
// returns the image after them; Subscribe sees every image applied from
// then on.
type Store interface {
	Image() *Image
	Apply(recs ...Record) (*Image, error)
	Subscribe(fn func(*Image)) (cancel func())
	// CatchUp returns once the image holds every change committed before
	// the call (a restarted raft node replays its log asynchronously): a
	// reader deciding from the image calls it first.
	CatchUp(ctx context.Context) error
}

var _ Store = (*FileStore)(nil)
