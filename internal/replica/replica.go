// Package replica holds the leader side of partition replication as pure
// rules: what the leader knows of each follower, the high watermark, and
// when a follower leaves or rejoins the in-sync replica set — Kafka's
// exact conditions (REPLICATION.md §2.1, §2.3, §2.4), decided here from
// values passed in, so they are table-tested without a cluster. The
// broker applies them.
package replica

import (
	"time"

	"github.com/strandmq/strand/internal/record"
)

// Follower is what a partition's leader knows of one follower replica.
type Follower struct {
	ID int32
	// LEO is the follower's log end offset, from the offset of its last
	// fetch.
	LEO record.Offset
	// LastCaughtUp is the last time the follower was known to hold
	// everything the leader had (Kafka's lastCaughtUpTimeMs).
	LastCaughtUp time.Time
	// lastFetch and lastFetchLeaderLEO are the previous fetch's time and
	// the leader's end offset then (Replica.lastFetchTimeMs and
	// lastFetchLeaderLogEndOffset).
	lastFetch          time.Time
	lastFetchLeaderLEO record.Offset
	// InISR: a member of the ISR the controller committed; PendingJoin: the
	// leader has asked to add it (counted for the high watermark at once:
	// stricter, safe); PendingLeave: asked to remove it (still counted
	// until the removal commits).
	InISR, PendingJoin, PendingLeave bool
	// Eligible: registered, unfenced, not shutting down, broker epoch
	// current — a replica that may be in the ISR. The leader re-reads it
	// from its metadata before each use (Kafka's isReplicaIsrEligible),
	// so a follower fenced since its last fetch stops counting at once.
	Eligible bool
	// BrokerEpoch is the broker epoch the follower's last fetch carried.
	BrokerEpoch int64
}

// Fetched records a follower fetch from offset at now, while the
// leader's log ended at leaderLEO. A fetch at the leader's end makes the
// follower caught up now; one that reaches what the leader had at the
// previous fetch makes it caught up as of that fetch (Kafka's
// Replica.updateFetchStateOrThrow), so a follower that keeps up with a
// busy leader is never seen as lagging.
func (f *Follower) Fetched(offset, leaderLEO record.Offset, now time.Time) {
	switch {
	case offset >= leaderLEO:
		f.LastCaughtUp = later(f.LastCaughtUp, now)
	case offset >= f.lastFetchLeaderLEO:
		f.LastCaughtUp = later(f.LastCaughtUp, f.lastFetch)
	}
	f.LEO = offset
	f.lastFetch, f.lastFetchLeaderLEO = now, leaderLEO
}

// CaughtUp reports whether f is within lag of the leader: at its end, or
// caught up less than lag ago (replica.lag.time.max.ms).
func (f *Follower) CaughtUp(leaderLEO record.Offset, now time.Time, lag time.Duration) bool {
	return f.LEO >= leaderLEO || now.Sub(f.LastCaughtUp) <= lag
}

// inMaximalISR reports whether f counts as an ISR member for the high
// watermark: committed and not yet removed, or being added.
func (f *Follower) inMaximalISR() bool { return f.InISR || f.PendingJoin || f.PendingLeave }

// HighWatermarkInput is what the leader knows when it recomputes the
// high watermark.
type HighWatermarkInput struct {
	Current   record.Offset // the high watermark now
	LeaderLEO record.Offset
	Followers []Follower
	// CommittedISR is the size of the ISR the controller committed,
	// leader included; Replicas the size of the replica set.
	CommittedISR, Replicas int
	MinISR                 int // min.insync.replicas
	Now                    time.Time
	Lag                    time.Duration // replica.lag.time.max.ms
}

// HighWatermark is the leader's high watermark (Partition.
// maybeIncrementLeaderHW): the least end offset of the leader and every
// follower in the maximal ISR or caught up and eligible — counting a
// caught-up follower outside the ISR keeps a rejoining one from chasing a
// moving mark forever. It never moves backwards, and does not move at all
// while the committed ISR is smaller than min.insync.replicas (capped by
// the replica count; KIP-966).
func HighWatermark(in HighWatermarkInput) record.Offset {
	if in.CommittedISR < min(in.MinISR, in.Replicas) {
		return in.Current
	}
	hw := in.LeaderLEO
	for i := range in.Followers {
		f := &in.Followers[i]
		if f.LEO < hw && (f.inMaximalISR() || (f.Eligible && f.CaughtUp(in.LeaderLEO, in.Now, in.Lag))) {
			hw = f.LEO
		}
	}
	return max(in.Current, hw)
}

// ShouldLeave reports whether an ISR member is to be removed: in the
// committed ISR, no change for it in flight, and not caught up within
// lag. A dead follower whose end equals the leader's (no traffic) stays:
// fencing by session removes it.
func ShouldLeave(f Follower, leaderLEO record.Offset, now time.Time, lag time.Duration) bool {
	return f.InISR && !f.PendingJoin && !f.PendingLeave && !f.CaughtUp(leaderLEO, now, lag)
}

// ShouldJoin reports whether a follower outside the ISR is to be added:
// nothing in flight for it, eligible, and caught up to the high watermark
// and into the current leader epoch (its end at or past the epoch's start
// offset) — else a replica missing committed data between the high
// watermark and the epoch start could be elected and lose it
// (Partition.maybeExpandIsr).
func ShouldJoin(f Follower, hw, epochStart record.Offset) bool {
	return !f.InISR && !f.PendingJoin && !f.PendingLeave && f.Eligible && f.LEO >= hw && f.LEO >= epochStart
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// EpochEnd is a leader epoch and the offset where it ends: where the
// next epoch starts, or the log end for the latest (OffsetForLeaderEpoch's
// answer). NoEpoch and NoOffset when the log knows no such epoch.
type EpochEnd struct {
	Epoch record.Epoch
	End   record.Offset
}

// Truncation is where a follower cuts its log after a leader change
// (KIP-101, KIP-279; AbstractFetcherThread.getOffsetTruncationState).
// leader is the leader's answer for the follower's latest epoch (or a
// fetch's DivergingEpoch); local is the follower's own end for the epoch
// the leader named; leo and hw are the follower's. When the follower's
// log has no entry for the leader's epoch, it cuts to the end of its own
// largest epoch below it and asks again (again set) with its new latest
// epoch, so two logs that diverged over several failovers converge.
// A leader that knows no epoch that old leaves only the high watermark
// as a safe point, Kafka's fallback.
func Truncation(leader, local EpochEnd, leo, hw record.Offset) (to record.Offset, again bool) {
	switch {
	case leader.End == record.NoOffset:
		return min(hw, leo), false
	case local.Epoch == record.NoEpoch:
		return min(leader.End, leo), false
	case local.Epoch != leader.Epoch:
		return min(local.End, leo), true
	}
	return min(local.End, leader.End, leo), false
}
