package partition

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/replica"
)

// The leader side of replication (REPLICATION.md §2.1–§2.4): followers
// fetch from the leader on the internal listener; each fetch tells the
// leader how far that follower has come, which moves the high watermark
// (the least end offset of the in-sync replicas) and may bring the
// follower back into the ISR. A follower that stops keeping up is taken
// out by a periodic check. The ISR itself changes only through the
// controller (AlterPartition): the leader asks, and acts on what was
// committed.

// leaderState is what a partition's leader knows of its followers during
// one leader epoch.
type leaderState struct {
	epoch record.Epoch
	// epochStart is the log end offset when this node took the epoch: a
	// follower rejoins the ISR only once it has reached it, and "latest"
	// is not answered while the high watermark is below it (KIP-207).
	epochStart record.Offset

	mu        sync.Mutex
	followers map[NodeID]*replica.Follower
	altering  bool      // an AlterPartition is in flight
	retryAt   time.Time // after a failed one
}

func newLeaderState(p *Partition, s *replicaState) *leaderState {
	ls := &leaderState{epoch: s.epoch, epochStart: p.log.LogEndOffset(), followers: map[NodeID]*replica.Follower{}}
	now := p.node.Now()
	for _, r := range s.replicas {
		if r == p.node.ID {
			continue
		}
		f := &replica.Follower{ID: int32(r), LEO: record.NoOffset, InISR: slices.Contains(s.isr, r)}
		if f.InISR {
			f.LastCaughtUp = now // one lag of grace (Kafka's resetReplicaState)
		}
		ls.followers[r] = f
	}
	return ls
}

// syncISR makes the followers' flags what the committed state s says.
// ls.mu must be held.
func (ls *leaderState) syncISR(s *replicaState, self NodeID) {
	for _, r := range s.replicas {
		if _, ok := ls.followers[r]; !ok && r != self {
			ls.followers[r] = &replica.Follower{ID: int32(r), LEO: record.NoOffset}
		}
	}
	for id, f := range ls.followers {
		if !slices.Contains(s.replicas, id) {
			delete(ls.followers, id)
			continue
		}
		f.InISR, f.PendingJoin, f.PendingLeave = slices.Contains(s.isr, id), false, false
	}
}

// leading returns the partition's leader state if this node leads it in
// the state s, else nil.
func (p *Partition) leading() (*leaderState, *replicaState) {
	s, ls := p.state(), p.lead.Load()
	if s.role != RoleLeader || ls == nil || ls.epoch != s.epoch {
		return nil, s
	}
	return ls, s
}

// AdvanceHighWatermark recomputes the leader's high watermark from what
// it knows of its followers (replica.HighWatermark) and publishes it;
// parked acks=all produces it passes complete.
func (p *Partition) AdvanceHighWatermark() { p.advanceHighWatermarkAt(p.node.Now()) }

// advanceHighWatermarkAt is AdvanceHighWatermark with the time already
// read: a follower's fetch reads it once for both of its uses.
func (p *Partition) advanceHighWatermarkAt(now time.Time) {
	ls, s := p.leading()
	if ls == nil {
		return
	}
	in := replica.HighWatermarkInput{
		Current: p.log.HighWatermark(), LeaderLEO: p.log.LogEndOffset(),
		CommittedISR: len(s.isr), Replicas: len(s.replicas), MinISR: p.config.Load().MinInsyncReplicas,
		Now: now, Lag: p.node.ReplicaLagTime,
	}
	img := p.node.Host.Image()
	var buf [8]replica.Follower // on the stack: this runs after every follower fetch
	in.Followers = buf[:0]
	ls.mu.Lock()
	for _, f := range ls.followers {
		// A follower fenced or replaced since its last fetch no longer
		// counts: else a dead, caught-up replica outside the ISR would
		// hold the high watermark for replica.lag.time.max.ms.
		b, ok := img.Broker(cluster.NodeID(f.ID))
		f.Eligible = f.Eligible && ok && !b.Fenced && !b.InControlledShutdown && b.Epoch == f.BrokerEpoch
		in.Followers = append(in.Followers, *f)
	}
	ls.mu.Unlock()
	if hw := replica.HighWatermark(in); hw > in.Current {
		p.log.SetHighWatermark(hw)
	}
}

// WaitEpochCommitted waits until the high watermark of the partition this
// node leads reaches the start of its epoch — everything the previous
// leader committed is then below it — and reports false if leadership
// moves or stop closes first. A group coordinator loads only then: a new
// leader's high watermark lags its followers' by a fetch, and offsets
// committed just before the failover sit in that gap.
func (p *Partition) WaitEpochCommitted(stop <-chan struct{}) bool {
	for {
		ls, _ := p.leading()
		if ls == nil || p.Closed() {
			return !p.node.Clustered && !p.Closed() // a single node has no epochs to wait for
		}
		ch := p.log.Wait()
		if p.log.HighWatermark() >= ls.epochStart {
			return true
		}
		select {
		case <-ch:
		case <-stop:
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FollowerFetch is one partition of a follower's Fetch.
type FollowerFetch struct {
	Replica     NodeID
	BrokerEpoch int64
	FetchOffset record.Offset
	// LastFetchedEpoch is the epoch of the follower's last batch (NoEpoch:
	// not sent); a leader whose log diverged from it there says where.
	LastFetchedEpoch record.Epoch
	MaxBytes         int
}

// FollowerRead is the leader's answer to one partition of a follower's
// Fetch.
type FollowerRead struct {
	Batches                                     []byte
	HighWatermark, LogStartOffset, LogEndOffset record.Offset
	// Diverging, when set, is where the leader's log ends for the
	// follower's last epoch: the follower truncates there and no records
	// come with it.
	Diverging *replica.EpochEnd
}

// ReadForFollower serves a follower's fetch: batches up to the log end
// (not the high watermark: followers are what moves it), then records how
// far the follower has come, which may move the high watermark and bring
// the follower back into the ISR. buf is reused when large enough.
func (p *Partition) ReadForFollower(buf []byte, f FollowerFetch) (FollowerRead, error) {
	if err := p.node.Host.Fenced(); err != nil {
		return FollowerRead{}, err
	}
	ls, s := p.leading()
	if ls == nil {
		return FollowerRead{}, fmt.Errorf("%w: %s-%d is led by node %d (epoch %d)", ErrNotLeader, p.topic, p.id, s.leader, s.epoch)
	}
	if b, ok := p.node.Host.Image().Broker(cluster.NodeID(f.Replica)); !ok || b.Epoch > f.BrokerEpoch {
		return FollowerRead{}, fmt.Errorf("%w: node %d fetches with broker epoch %d, a process the controller has replaced", ErrNotLeader, f.Replica, f.BrokerEpoch)
	}
	ls.mu.Lock()
	_, known := ls.followers[f.Replica]
	ls.mu.Unlock()
	if !known {
		return FollowerRead{}, fmt.Errorf("%w: node %d is not a replica of %s-%d", ErrNotLeader, f.Replica, p.topic, p.id)
	}
	hw, leo := p.log.HighWatermark(), p.log.LogEndOffset() // before the read, as Kafka
	res := FollowerRead{HighWatermark: hw, LogStartOffset: p.log.LogStartOffset(), LogEndOffset: leo}
	if f.LastFetchedEpoch >= 0 {
		if e, end := p.EndOffsetForEpoch(f.LastFetchedEpoch); e < f.LastFetchedEpoch || end < f.FetchOffset {
			res.Diverging = &replica.EpochEnd{Epoch: e, End: end}
			return res, nil
		}
	}
	b, err := p.log.ReadInto(buf, f.FetchOffset, f.MaxBytes, leo)
	switch {
	case errors.Is(err, partlog.ErrOffsetOutOfRange) && f.FetchOffset < res.LogStartOffset && p.isTiered():
		return res, fmt.Errorf("%w: %s-%d: offset %d is below the local log start %d", ErrOffsetMovedToTiered, p.topic, p.id, f.FetchOffset, res.LogStartOffset)
	case errors.Is(err, partlog.ErrOffsetOutOfRange):
		return res, fmt.Errorf("%w: %s-%d: %w", ErrOffsetOutOfRange, p.topic, p.id, err)
	case errors.Is(err, partlog.ErrDamaged):
		return res, fmt.Errorf("%w: %s-%d is offline: %w", ErrStorage, p.topic, p.id, err)
	case err != nil:
		return res, fmt.Errorf("broker: read %s-%d for node %d at %d: %w", p.topic, p.id, f.Replica, f.FetchOffset, err)
	}
	res.Batches = b
	p.followerFetched(ls, f, leo)
	return res, nil
}

// followerFetched updates what the leader knows of f's replica after its
// fetch, and asks for it to rejoin the ISR if it may.
func (p *Partition) followerFetched(ls *leaderState, f FollowerFetch, leo record.Offset) {
	now := p.node.Now()
	b, _ := p.node.Host.Image().Broker(cluster.NodeID(f.Replica))
	ls.mu.Lock()
	fs := ls.followers[f.Replica]
	if fs == nil {
		ls.mu.Unlock()
		return
	}
	fs.Fetched(f.FetchOffset, leo, now)
	fs.BrokerEpoch = f.BrokerEpoch
	fs.Eligible = !b.Fenced && !b.InControlledShutdown && b.Epoch == f.BrokerEpoch
	var isr []NodeID
	if !ls.altering && !now.Before(ls.retryAt) && replica.ShouldJoin(*fs, p.log.HighWatermark(), ls.epochStart) {
		fs.PendingJoin, ls.altering = true, true
		isr = append(p.ISR(), f.Replica)
	}
	ls.mu.Unlock()
	// The high watermark never passes the log end: when it is there no
	// fetch can move it, and most fetches of a follower waiting for
	// records (each partition of each long poll, twice) find it so.
	if p.log.HighWatermark() < p.log.LogEndOffset() {
		p.advanceHighWatermarkAt(now)
	}
	if isr != nil {
		p.node.Logger.Info("broker: a follower caught up; asking to add it to the ISR", "topic", p.topic, "partition", p.id, "follower", f.Replica, "isr", isr)
		p.goAlterISR(ls, isr)
	}
}

// ShrinkISR asks to take out of the ISR every follower that has not
// caught up within replica.lag.time.max.ms (run every half of it).
func (p *Partition) ShrinkISR() {
	ls, s := p.leading()
	if ls == nil {
		return
	}
	now, leo := p.node.Now(), p.log.LogEndOffset()
	ls.mu.Lock()
	if ls.altering || now.Before(ls.retryAt) {
		ls.mu.Unlock()
		return
	}
	if isr, ok := ls.unresolved(s.isr); ok { // an earlier change's outcome is unknown: ask again
		ls.altering = true
		ls.mu.Unlock()
		p.goAlterISR(ls, isr)
		return
	}
	isr := slices.Clone(s.isr)
	var out []NodeID
	for id, f := range ls.followers {
		if replica.ShouldLeave(*f, leo, now, p.node.ReplicaLagTime) {
			f.PendingLeave = true
			out = append(out, id)
			isr = slices.DeleteFunc(isr, func(x NodeID) bool { return x == id })
		}
	}
	ls.altering = len(out) > 0
	ls.mu.Unlock()
	if len(out) > 0 {
		p.node.Logger.Warn("broker: followers fell behind; asking to shrink the ISR", "topic", p.topic, "partition", p.id,
			"lagging", out, "isr", isr, "replica_lag_time_max", p.node.ReplicaLagTime)
		p.goAlterISR(ls, isr)
	}
}

// unresolved returns the ISR an earlier AlterPartition asked for, when its
// outcome is still unknown (pending members the metadata has not settled).
func (ls *leaderState) unresolved(committed []NodeID) ([]NodeID, bool) {
	isr, pending := slices.Clone(committed), false
	for id, f := range ls.followers {
		switch {
		case f.PendingJoin:
			isr, pending = append(isr, id), true
		case f.PendingLeave:
			isr, pending = slices.DeleteFunc(isr, func(x NodeID) bool { return x == id }), true
		}
	}
	return isr, pending
}

// goAlterISR asks the controller for the ISR isr in the background.
func (p *Partition) goAlterISR(ls *leaderState, isr []NodeID) {
	p.node.Host.Go(func() { p.alterISR(ls, isr) })
}

// alterISR sends the AlterPartition and applies its answer. Only a
// refusal that says the change was not applied (INELIGIBLE_REPLICA)
// reverts it; after any other failure — a lost answer, a stale partition
// epoch, a deposed leader — the controller may have committed it, so the
// pending members keep counting for the high watermark (Kafka's maximal
// ISR) until the metadata shows the outcome, and ShrinkISR asks again if
// it never does. Reverting a join early would let the high watermark pass
// records a new ISR member lacks.
func (p *Partition) alterISR(ls *leaderState, isr []NodeID) {
	s := p.state()
	req := cluster.AlterPartition{
		Broker: cluster.NodeID(p.node.ID), BrokerEpoch: p.node.Host.BrokerEpoch(),
		TopicID: cluster.TopicID(p.topicID), PartitionID: int32(p.id),
		LeaderEpoch: int32(s.epoch), PartitionEpoch: s.partitionEpoch, ISR: ClusterIDs(isr),
	}
	ls.mu.Lock()
	for _, id := range isr { // KIP-903: the epochs the members fetched with
		e := req.BrokerEpoch
		if f := ls.followers[id]; f != nil {
			e = f.BrokerEpoch
		}
		req.ISREpochs = append(req.ISREpochs, e)
	}
	ls.mu.Unlock()
	reg, err := p.node.Host.AlterPartition(req)
	ls.mu.Lock()
	ls.altering = false
	if err != nil {
		if errors.Is(err, cluster.ErrIneligibleReplica) {
			for _, f := range ls.followers {
				f.PendingJoin, f.PendingLeave = false, false
			}
		}
		ls.retryAt = p.node.Now().Add(time.Second)
	}
	ls.mu.Unlock()
	if err != nil {
		p.node.Logger.Warn("broker: the controller did not change the ISR", "topic", p.topic, "partition", p.id, "isr", isr, "err", err)
		return
	}
	if len(reg.ISR) < len(s.isr) {
		p.node.ISRShrinks.Add(1)
	} else {
		p.node.ISRExpands.Add(1)
	}
	p.UpdateRegistration(reg)
}

// UpdateRegistration applies a newer registration of the same leader
// epoch (an ISR or replica change) without changing the role.
func (p *Partition) UpdateRegistration(reg cluster.PartitionReg) {
	p.mu.Lock()
	cur := p.state()
	if record.Epoch(reg.LeaderEpoch) != cur.epoch || reg.PartitionEpoch <= cur.partitionEpoch {
		p.mu.Unlock()
		return
	}
	s := *cur
	s.replicas, s.isr, s.partitionEpoch = NodeIDs(reg.Replicas), NodeIDs(reg.ISR), reg.PartitionEpoch
	p.setState(&s)
	if ls := p.lead.Load(); ls != nil && ls.epoch == s.epoch {
		ls.mu.Lock()
		ls.syncISR(&s, p.node.ID)
		ls.mu.Unlock()
	}
	p.mu.Unlock()
	p.AdvanceHighWatermark()
}

// ClusterIDs converts node ids to the metadata's.
func ClusterIDs(ids []NodeID) []cluster.NodeID {
	out := make([]cluster.NodeID, len(ids))
	for i, id := range ids {
		out[i] = cluster.NodeID(id)
	}
	return out
}

// ClusterIDLists is ClusterIDs of each of a's replica lists.
func ClusterIDLists(a [][]NodeID) [][]cluster.NodeID {
	out := make([][]cluster.NodeID, len(a))
	for i, r := range a {
		out[i] = ClusterIDs(r)
	}
	return out
}

// checkEnoughReplicas is the test of a parked acks=all produce when the
// high watermark passes it (Partition.checkEnoughReplicasReachOffset):
// the ISR it reached must still be as large as min.insync.replicas.
func (p *Partition) checkEnoughReplicas() error {
	s := p.state()
	if minISR := p.config.Load().MinInsyncReplicas; len(s.isr) < minISR {
		return fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d",
			ErrNotEnoughReplicasAfterAppend, p.topic, p.id, len(s.isr), minISR)
	}
	return nil
}

// FollowerLag is how far one follower is behind its leader.
type FollowerLag struct {
	Topic     string
	Partition PartitionID
	Follower  NodeID
	// Records is the leader's end offset minus the follower's (the whole
	// log while it has not fetched in this leader epoch); Time how long
	// it has not been caught up (zero when it is).
	Records int64
	Time    time.Duration
	InSync  bool
}

// Replication is what the leader of a partition knows of its followers.
type Replication struct {
	// UnderReplicated: fewer in-sync replicas than replicas;
	// UnderMinISR: fewer than min.insync.replicas, where acks=all
	// produces fail.
	UnderReplicated, UnderMinISR bool
	Followers                    []FollowerLag
}

// Replication reports the partition's replication as its leader sees it
// at now; false when this node does not lead it.
func (p *Partition) Replication(now time.Time) (Replication, bool) {
	ls, s := p.leading()
	if ls == nil {
		return Replication{}, false
	}
	r := Replication{
		UnderReplicated: len(s.isr) < len(s.replicas),
		UnderMinISR:     len(s.isr) < p.config.Load().MinInsyncReplicas,
	}
	leo := p.log.LogEndOffset()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for id, f := range ls.followers {
		fl := FollowerLag{Topic: p.topic, Partition: p.id, Follower: id, Records: int64(leo - max(f.LEO, 0)), InSync: f.InISR}
		if !f.CaughtUp(leo, now, 0) {
			since := f.LastCaughtUp
			if since.IsZero() {
				since = p.node.Started
			}
			fl.Time = now.Sub(since)
		}
		r.Followers = append(r.Followers, fl)
	}
	return r, true
}
