// Package quorum owns the Raft-replicated metadata store of a cluster
// (REPLICATION.md §1): RaftStore applies internal/cluster's records
// through a hashicorp/raft quorum — its FSM, snapshots, bootstrap, voters
// and observers — and, on the raft leader, runs the controller: broker
// registrations, heartbeats and session watches, fencing, and the rounds
// that commit the elections, reassignments and balancer moves which
// package cluster plans as pure functions of an image. Brokers reach the
// controller through the RPCs this package serves on the raft port.
//
// It is apart from package cluster so that what the metadata is and how
// it may change (cluster) is read and tested without a quorum, and the
// machinery that agrees on it (here) is one job.
package quorum

import "github.com/strandmq/strand/internal/cluster"

// RaftStore keeps cluster metadata in a quorum, as FileStore does on a
// single node.
var _ cluster.Store = (*RaftStore)(nil)
