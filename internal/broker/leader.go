package broker

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
	now := p.b.cfg.Now()
	for _, r := range s.replicas {
		if r == p.b.cfg.NodeID {
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

// advanceHighWatermark recomputes the leader's high watermark from what
// it knows of its followers (replica.HighWatermark) and publishes it;
// parked acks=all produces it passes complete.
func (p *Partition) advanceHighWatermark() { p.advanceHighWatermarkAt(p.b.cfg.Now()) }

// advanceHighWatermarkAt is advanceHighWatermark with the time already
// read: a follower's fetch reads it once for both of its uses.
func (p *Partition) advanceHighWatermarkAt(now time.Time) {
	ls, s := p.leading()
	if ls == nil {
		return
	}
	in := replica.HighWatermarkInput{
		Current: p.log.HighWatermark(), LeaderLEO: p.log.LogEndOffset(),
		CommittedISR: len(s.isr), Replicas: len(s.replicas), MinISR: p.config.Load().MinInsyncReplicas(),
		Now: now, Lag: p.b.cfg.ReplicaLagTime,
	}
	img := p.b.meta.Image()
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

// waitEpochCommitted waits until the high watermark of the partition this
// node leads reaches the start of its epoch — everything the previous
// leader committed is then below it — and reports false if leadership
// moves or stop closes first. A group coordinator loads only then: a new
// leader's high watermark lags its followers' by a fetch, and offsets
// committed just before the failover sit in that gap.
func (p *Partition) waitEpochCommitted(stop <-chan struct{}) bool {
	for {
		ls, _ := p.leading()
		if ls == nil || p.isClosed() {
			return !p.b.clustered() && !p.isClosed() // a single node has no epochs to wait for
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
	if p.b.fenced() {
		return FollowerRead{}, p.b.errFenced()
	}
	ls, s := p.leading()
	if ls == nil {
		return FollowerRead{}, fmt.Errorf("%w: %s-%d is led by node %d (epoch %d)", ErrNotLeader, p.topic, p.id, s.leader, s.epoch)
	}
	if b, ok := p.b.meta.Image().Broker(cluster.NodeID(f.Replica)); !ok || b.Epoch > f.BrokerEpoch {
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
	now := p.b.cfg.Now()
	b, _ := p.b.meta.Image().Broker(cluster.NodeID(f.Replica))
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
		p.b.logger.Info("broker: a follower caught up; asking to add it to the ISR", "topic", p.topic, "partition", p.id, "follower", f.Replica, "isr", isr)
		p.b.goAlterISR(p, ls, isr)
	}
}

// shrinkISR asks to take out of the ISR every follower that has not
// caught up within replica.lag.time.max.ms (run every half of it).
func (p *Partition) shrinkISR() {
	ls, s := p.leading()
	if ls == nil {
		return
	}
	now, leo := p.b.cfg.Now(), p.log.LogEndOffset()
	ls.mu.Lock()
	if ls.altering || now.Before(ls.retryAt) {
		ls.mu.Unlock()
		return
	}
	if isr, ok := ls.unresolved(s.isr); ok { // an earlier change's outcome is unknown: ask again
		ls.altering = true
		ls.mu.Unlock()
		p.b.goAlterISR(p, ls, isr)
		return
	}
	isr := slices.Clone(s.isr)
	var out []NodeID
	for id, f := range ls.followers {
		if replica.ShouldLeave(*f, leo, now, p.b.cfg.ReplicaLagTime) {
			f.PendingLeave = true
			out = append(out, id)
			isr = slices.DeleteFunc(isr, func(x NodeID) bool { return x == id })
		}
	}
	ls.altering = len(out) > 0
	ls.mu.Unlock()
	if len(out) > 0 {
		p.b.logger.Warn("broker: followers fell behind; asking to shrink the ISR", "topic", p.topic, "partition", p.id,
			"lagging", out, "isr", isr, "replica_lag_time_max", p.b.cfg.ReplicaLagTime)
		p.b.goAlterISR(p, ls, isr)
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
func (b *Broker) goAlterISR(p *Partition, ls *leaderState, isr []NodeID) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		p.alterISR(ls, isr)
	}()
}

// alterISR sends the AlterPartition and applies its answer. Only a
// refusal that says the change was not applied (INELIGIBLE_REPLICA)
// reverts it; after any other failure — a lost answer, a stale partition
// epoch, a deposed leader — the controller may have committed it, so the
// pending members keep counting for the high watermark (Kafka's maximal
// ISR) until the metadata shows the outcome, and shrinkISR asks again if
// it never does. Reverting a join early would let the high watermark pass
// records a new ISR member lacks.
func (p *Partition) alterISR(ls *leaderState, isr []NodeID) {
	s := p.state()
	req := cluster.AlterPartition{
		Broker: cluster.NodeID(p.b.cfg.NodeID), BrokerEpoch: p.b.member.epoch.Load(),
		TopicID: cluster.TopicID(p.topicID), PartitionID: int32(p.id),
		LeaderEpoch: int32(s.epoch), PartitionEpoch: s.partitionEpoch, ISR: clusterIDs(isr),
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
	reg, err := p.b.member.m.AlterPartition(req, 5*time.Second)
	ls.mu.Lock()
	ls.altering = false
	if err != nil {
		if errors.Is(err, cluster.ErrIneligibleReplica) {
			for _, f := range ls.followers {
				f.PendingJoin, f.PendingLeave = false, false
			}
		}
		ls.retryAt = p.b.cfg.Now().Add(time.Second)
	}
	ls.mu.Unlock()
	if err != nil {
		p.b.logger.Warn("broker: the controller did not change the ISR", "topic", p.topic, "partition", p.id, "isr", isr, "err", err)
		return
	}
	if len(reg.ISR) < len(s.isr) {
		p.b.isrShrinks.Add(1)
	} else {
		p.b.isrExpands.Add(1)
	}
	p.updateRegistration(reg)
}

// updateRegistration applies a newer registration of the same leader
// epoch (an ISR or replica change) without changing the role.
func (p *Partition) updateRegistration(reg cluster.PartitionReg) {
	p.mu.Lock()
	cur := p.state()
	if record.Epoch(reg.LeaderEpoch) != cur.epoch || reg.PartitionEpoch <= cur.partitionEpoch {
		p.mu.Unlock()
		return
	}
	s := *cur
	s.replicas, s.isr, s.partitionEpoch = nodeIDs(reg.Replicas), nodeIDs(reg.ISR), reg.PartitionEpoch
	p.setState(&s)
	if ls := p.lead.Load(); ls != nil && ls.epoch == s.epoch {
		ls.mu.Lock()
		ls.syncISR(&s, p.b.cfg.NodeID)
		ls.mu.Unlock()
	}
	p.mu.Unlock()
	p.advanceHighWatermark()
}

func clusterIDs(ids []NodeID) []cluster.NodeID {
	out := make([]cluster.NodeID, len(ids))
	for i, id := range ids {
		out[i] = cluster.NodeID(id)
	}
	return out
}

// checkEnoughReplicas is the test of a parked acks=all produce when the
// high watermark passes it (Partition.checkEnoughReplicasReachOffset):
// the ISR it reached must still be as large as min.insync.replicas.
func (p *Partition) checkEnoughReplicas() error {
	s := p.state()
	if minISR := p.config.Load().MinInsyncReplicas(); len(s.isr) < minISR {
		return fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d",
			ErrNotEnoughReplicasAfterAppend, p.topic, p.id, len(s.isr), minISR)
	}
	return nil
}

// runISRChecks shrinks the ISR of the partitions this node leads every
// half replica.lag.time.max.ms, and checkpoints their high watermarks.
func (b *Broker) runISRChecks() {
	tick := time.NewTicker(b.cfg.ReplicaLagTime / 2)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		for _, t := range b.Topics() {
			for _, p := range t.local() {
				p.shrinkISR()
				if err := p.log.CheckpointHighWatermark(); err != nil && !errors.Is(err, partlog.ErrClosed) {
					b.logger.Warn("broker: checkpointing a high watermark", "topic", p.topic, "partition", p.id, "err", err)
				}
			}
		}
	}
}

// ReplicationStats is what this node's leaders know of replication: the
// first things to watch on a cluster.
type ReplicationStats struct {
	// UnderReplicated counts led partitions with fewer in-sync replicas
	// than replicas; UnderMinISR those below min.insync.replicas, where
	// acks=all produces fail.
	UnderReplicated, UnderMinISR int
	// ISRShrinks and ISRExpands count the ISR changes this node's leaders
	// committed since it started.
	ISRShrinks, ISRExpands int64
	// Parked counts acks=all produces waiting for the high watermark.
	Parked int64
	// Followers is each follower of each led partition.
	Followers []FollowerLag
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

// ReplicationStats reports replication as this node's leaders see it.
func (b *Broker) ReplicationStats() ReplicationStats {
	st := ReplicationStats{ISRShrinks: b.isrShrinks.Load(), ISRExpands: b.isrExpands.Load(), Parked: b.parked.Load()}
	now := b.cfg.Now()
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			ls, s := p.leading()
			if ls == nil {
				continue
			}
			if len(s.isr) < len(s.replicas) {
				st.UnderReplicated++
			}
			if len(s.isr) < p.config.Load().MinInsyncReplicas() {
				st.UnderMinISR++
			}
			leo := p.log.LogEndOffset()
			ls.mu.Lock()
			for id, f := range ls.followers {
				fl := FollowerLag{Topic: p.topic, Partition: p.id, Follower: id, Records: int64(leo - max(f.LEO, 0)), InSync: f.InISR}
				if !f.CaughtUp(leo, now, 0) {
					since := f.LastCaughtUp
					if since.IsZero() {
						since = p.b.started
					}
					fl.Time = now.Sub(since)
				}
				st.Followers = append(st.Followers, fl)
			}
			ls.mu.Unlock()
		}
	}
	return st
}
