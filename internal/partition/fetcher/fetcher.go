package fetcher

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/partition"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/replica"
	"github.com/strandmq/strand/internal/wire"
)

// Replica fetch tuning, as Kafka's defaults (replica.fetch.*), except the
// backoff, which is short: a cluster on one machine recovers in tenths of
// a second.
const (
	// FetchWait is how long a leader may hold a replica fetch that finds
	// nothing new (replica.fetch.wait.max.ms).
	FetchWait            = 500 * time.Millisecond
	replicaFetchMaxBytes = 10 << 20
	replicaPartitionMax  = 1 << 20
	replicaFetchBackoff  = 200 * time.Millisecond
	// replicaFetchTimeout is how long a fetch may go unanswered past
	// FetchWait before the fetcher drops the connection and dials again.
	// Short on purpose: after a network cut heals, a request sent during
	// it is only resent at TCP's next retransmission, which backs off to
	// seconds — a fresh connection gets through within a second, and
	// every ISR the follower is in waits for it (issue 39's cuts).
	replicaFetchTimeout  = 2 * time.Second
	replicaFetchVersion  = 15 // ReplicaState, topic ids
	replicaEpochsVersion = 4  // OffsetForLeaderEpoch with ReplicaID
)

// followPart is one partition a fetcher fetches.
type followPart struct {
	p          *Partition
	epoch      record.Epoch // the leader epoch it follows
	truncating bool         // ask where the epoch ends before fetching
	until      time.Time    // backing off after an error until then
	// inSync: the last answer left this replica at the leader's high
	// watermark. An in-sync replica is never throttled (Kafka's
	// follower-side rule): throttling it could push it out of the ISR.
	inSync bool
	// throttle is the rate this fetch was throttled at (0: not), set on
	// the copy a fetch asks with.
	throttle int64
}

// fetcher fetches every partition this node follows from one leader.
type fetcher struct {
	fs     *Fetchers
	leader NodeID
	mu     sync.Mutex
	parts  map[*Partition]*followPart
	wake   chan struct{}
	done   chan struct{}
	// conn is the fetcher goroutine's; connMu lets a stop close it under
	// a request in flight.
	connMu sync.Mutex
	conn   *wire.Conn
	// scratch is reused from round trip to round trip by the fetcher's
	// goroutine, its only user: allocating and growing it afresh for
	// every fetch was about a fifth of the fetcher's CPU in the peer
	// benchmark.
	scratch struct {
		truncate, fetch []followPart
		asked           map[partKey]followPart
		partitions      []kmsg.FetchRequestTopicPartition
	}
}

// partKey names a partition in a fetch's answer.
type partKey struct {
	topic     partition.TopicID
	partition int32
}

// Config is what the fetchers need of the node.
type Config struct {
	// NodeID is this node's id, which its fetches carry.
	NodeID NodeID
	// BrokerEpoch is the node's registration epoch (KIP-903: a leader
	// counts a fetch only from the registration it knows).
	BrokerEpoch func() int64
	// Addr returns a node's internal listener address.
	Addr   func(NodeID) (string, error)
	Dialer wire.Dialer
	Logger *slog.Logger
	// Throttle returns the follower-side replication throttle of p in
	// bytes per second (0: none; cluster.Image.FollowerThrottle); nil:
	// nothing is throttled.
	Throttle func(p *Partition) int64
}

// Fetchers are a node's fetchers, one per leader it follows.
type Fetchers struct {
	cfg  Config
	stop chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	byLeader map[NodeID]*fetcher

	// follower is the node's one follower replication quota, shared by
	// every throttled replica it fetches for, as Kafka's is; leader is
	// its leader-side quota, which the internal listener's fetch
	// handler charges.
	follower, leader Quota
}

// Quota is one of a node's replication quotas (replica.Throttle) with the
// bytes it has let through; safe for concurrent use.
type Quota struct {
	mu    sync.Mutex
	t     replica.Throttle
	bytes atomic.Int64
}

// Exceeded reports whether a replica throttled at rate must sit out a
// fetch now, and for how long.
func (q *Quota) Exceeded(rate int64) (bool, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.t.Exceeded(time.Now(), rate)
}

// Charge records n bytes moved for a replica throttled at rate.
func (q *Quota) Charge(rate int64, n int) {
	q.mu.Lock()
	q.t.Record(time.Now(), rate, n)
	q.mu.Unlock()
	q.bytes.Add(int64(n))
}

// Bytes returns the bytes moved so far for throttled replicas.
func (q *Quota) Bytes() int64 { return q.bytes.Load() }

// FollowerQuota is the node's follower-side replication quota.
func (fs *Fetchers) FollowerQuota() *Quota { return &fs.follower }

// LeaderQuota is the node's leader-side replication quota (charged by
// the fetch handler serving followers).
func (fs *Fetchers) LeaderQuota() *Quota { return &fs.leader }

// throttled returns the throttle rate of fp when it applies (the replica
// is out of sync and listed), and whether it must sit this fetch out and
// for how long.
func (fs *Fetchers) throttled(fp followPart) (rate int64, skip bool, wait time.Duration) {
	if fp.inSync || fs.cfg.Throttle == nil {
		return 0, false, 0
	}
	if rate = fs.cfg.Throttle(fp.p); rate <= 0 {
		return 0, false, 0
	}
	skip, wait = fs.follower.Exceeded(rate)
	return rate, skip, wait
}

// New returns a node's fetchers; Close stops them.
func New(cfg Config) *Fetchers {
	return &Fetchers{cfg: cfg, stop: make(chan struct{}), byLeader: map[NodeID]*fetcher{}}
}

// Follow makes p fetch from leader at epoch, starting with truncation.
// After Close it does nothing: a node's reconciler may still apply a
// registration while the node stops, and a fetcher started then would
// outlive Close (its WaitGroup Add racing Close's Wait; the race detector
// caught it in TestClusterTxnETL).
func (fs *Fetchers) Follow(p *Partition, leader NodeID, epoch record.Epoch) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	select {
	case <-fs.stop:
		return
	default:
	}
	fs.unfollowLocked(p)
	f := fs.byLeader[leader]
	if f == nil {
		f = &fetcher{fs: fs, leader: leader, parts: map[*Partition]*followPart{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
		fs.byLeader[leader] = f
		fs.wg.Add(1)
		go func() {
			defer fs.wg.Done()
			f.run()
		}()
	}
	f.mu.Lock()
	f.parts[p] = &followPart{p: p, epoch: epoch, truncating: true}
	f.mu.Unlock()
	f.poke()
}

// Unfollow stops fetching p (it leads now, or is gone).
func (fs *Fetchers) Unfollow(p *Partition) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.unfollowLocked(p)
}

func (fs *Fetchers) unfollowLocked(p *Partition) {
	for id, f := range fs.byLeader {
		f.mu.Lock()
		delete(f.parts, p)
		empty := len(f.parts) == 0
		f.mu.Unlock()
		if empty {
			close(f.done)
			delete(fs.byLeader, id)
		}
	}
}

// Close ends every fetcher and waits for them.
func (fs *Fetchers) Close() {
	fs.mu.Lock()
	select {
	case <-fs.stop:
	default:
		close(fs.stop)
	}
	for id, f := range fs.byLeader {
		close(f.done)
		delete(fs.byLeader, id)
	}
	fs.mu.Unlock()
	fs.wg.Wait()
}

func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// ready returns the partitions not backing off, split by what they do
// next, and how long until the next one is ready.
func (f *fetcher) ready(now time.Time) (truncate, fetch []followPart, wait time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	truncate, fetch = f.scratch.truncate[:0], f.scratch.fetch[:0]
	defer func() { f.scratch.truncate, f.scratch.fetch = truncate, fetch }()
	wait = time.Second
	for _, fp := range f.parts {
		switch {
		case now.Before(fp.until):
			wait = min(wait, fp.until.Sub(now))
		case fp.truncating:
			truncate = append(truncate, *fp)
		default:
			fetch = append(fetch, *fp)
		}
	}
	return truncate, fetch, wait
}

// update changes the state of p's entry, if it still follows at epoch.
func (f *fetcher) update(p *Partition, epoch record.Epoch, fn func(fp *followPart)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp := f.parts[p]; fp != nil && fp.epoch == epoch {
		fn(fp)
	}
}

func (f *fetcher) backoff(p *Partition, epoch record.Epoch, d time.Duration) {
	until := time.Now().Add(d)
	f.update(p, epoch, func(fp *followPart) { fp.until = until })
}

func (f *fetcher) run() {
	defer f.closeConn()
	go func() { // a stop interrupts a fetch in flight
		select {
		case <-f.done:
		case <-f.fs.stop:
		}
		f.closeConn()
	}()
	for {
		select {
		case <-f.done:
			return
		case <-f.fs.stop:
			return
		default:
		}
		truncate, fetch, wait := f.ready(time.Now())
		if len(truncate) == 0 && len(fetch) == 0 {
			f.sleep(wait)
			continue
		}
		var err error
		if len(truncate) > 0 {
			err = f.truncate(truncate)
		} else {
			err = f.fetch(fetch)
		}
		if err != nil {
			f.closeConn()
			f.fs.cfg.Logger.Debug("fetcher: replica fetch from the leader failed", "leader", f.leader, "err", err)
			f.sleep(replicaFetchBackoff)
		}
	}
}

func (f *fetcher) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.done:
	case <-f.fs.stop:
	case <-f.wake:
	case <-t.C:
	}
}

// roundTrip sends req to the leader's internal listener, dialling it
// when there is no connection. The response aliases a buffer the next
// round trip reuses (wire.Conn.RoundTripBorrowed): the fetcher applies
// each answer before it asks again.
func (f *fetcher) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	f.connMu.Lock()
	c := f.conn
	f.connMu.Unlock()
	if c == nil {
		addr, err := f.fs.cfg.Addr(f.leader)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err = f.fs.cfg.Dialer.DialNode(ctx, int32(f.leader), addr, "strand-replica-"+strconv.Itoa(int(f.fs.cfg.NodeID)))
		cancel()
		if err != nil {
			return nil, err
		}
		f.connMu.Lock()
		f.conn = c
		f.connMu.Unlock()
		select { // stopped while dialling: the closer has run already
		case <-f.done:
			f.closeConn()
		case <-f.fs.stop:
			f.closeConn()
		default:
		}
	}
	return c.RoundTripBorrowed(req, time.Now().Add(timeout))
}

func (f *fetcher) closeConn() {
	f.connMu.Lock()
	defer f.connMu.Unlock()
	if f.conn != nil {
		_ = f.conn.Close()
		f.conn = nil
	}
}

// truncate asks the leader where each partition's latest epoch ends and
// cuts what the leader does not have (OffsetForLeaderEpoch, KIP-279).
func (f *fetcher) truncate(parts []followPart) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(replicaEpochsVersion)
	req.ReplicaID = int32(f.fs.cfg.NodeID)
	index := map[string]int{}
	asked := map[string]map[int32]followPart{}
	for _, fp := range parts {
		latest := fp.p.Log().LatestEpoch()
		if latest == record.NoEpoch { // nothing written in any epoch: nothing to cut
			f.update(fp.p, fp.epoch, func(x *followPart) { x.truncating = false })
			continue
		}
		i, ok := index[fp.p.Topic()]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = fp.p.Topic()
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			index[fp.p.Topic()] = i
			asked[fp.p.Topic()] = map[int32]followPart{}
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = int32(fp.p.ID()), int32(fp.epoch), int32(latest)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[fp.p.Topic()][int32(fp.p.ID())] = fp
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kresp, err := f.roundTrip(req, 10*time.Second)
	if err != nil {
		return err
	}
	for _, t := range kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range t.Partitions {
			fp, ok := asked[t.Topic][rp.Partition]
			if !ok {
				continue
			}
			if rp.ErrorCode != 0 {
				f.partitionError(fp, rp.ErrorCode)
				continue
			}
			leader := replica.EpochEnd{Epoch: record.Epoch(rp.LeaderEpoch), End: record.Offset(rp.EndOffset)}
			f.truncateTo(fp, leader)
		}
	}
	return nil
}

// truncateTo cuts fp's log where the leader's answer says it diverges.
func (f *fetcher) truncateTo(fp followPart, leader replica.EpochEnd) {
	p := fp.p
	le, lend := p.Log().EndOffsetForEpoch(leader.Epoch)
	to, again := replica.Truncation(leader, replica.EpochEnd{Epoch: le, End: lend}, p.Log().LogEndOffset(), p.Log().HighWatermark())
	if err := p.TruncateAsFollower(fp.epoch, to); err != nil {
		f.fs.cfg.Logger.Warn("fetcher: a follower could not truncate its log", "topic", p.Topic(), "partition", p.ID(), "to", to, "err", err)
		f.backoff(p, fp.epoch, time.Second)
		return
	}
	f.update(p, fp.epoch, func(x *followPart) { x.truncating = again })
}

// partitionError backs a partition off after its leader refused it.
func (f *fetcher) partitionError(fp followPart, code int16) {
	d := replicaFetchBackoff
	if code == kerr.FencedLeaderEpoch.Code {
		d = time.Second // the leader is newer: wait for the metadata to say so
	}
	f.backoff(fp.p, fp.epoch, d)
}

// fetch fetches once for every partition ready and applies the answer.
func (f *fetcher) fetch(parts []followPart) error {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = int32(f.fs.cfg.NodeID), f.fs.cfg.BrokerEpoch()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(FetchWait/time.Millisecond), 1, replicaFetchMaxBytes
	req.SessionEpoch = -1
	// Grouped by topic, into slices and a map the fetcher reuses.
	if f.scratch.asked == nil {
		f.scratch.asked = map[partKey]followPart{}
	}
	asked := f.scratch.asked
	clear(asked)
	slices.SortFunc(parts, func(a, b followPart) int {
		at, bt := a.p.TopicID(), b.p.TopicID()
		return bytes.Compare(at[:], bt[:])
	})
	all := slices.Grow(f.scratch.partitions[:0], len(parts)) // never grows below: the topics' slices stay in it
	start := 0
	hold := time.Duration(0)
	var last partition.TopicID
	for _, fp := range parts {
		rate, skip, wait := f.fs.throttled(fp)
		if skip { // over the quota: this replica sits the fetch out
			hold = max(hold, wait)
			continue
		}
		fp.throttle = rate
		if len(req.Topics) == 0 || last != fp.p.TopicID() {
			last = fp.p.TopicID()
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = fp.p.Topic(), fp.p.TopicID()
			req.Topics = append(req.Topics, t)
			start = len(all)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = int32(fp.p.ID()), int32(fp.epoch)
		rp.FetchOffset, rp.LogStartOffset = int64(fp.p.Log().LogEndOffset()), int64(fp.p.Log().LogStartOffset())
		rp.LastFetchedEpoch = int32(fp.p.Log().LatestEpoch())
		rp.PartitionMaxBytes = replicaPartitionMax
		all = append(all, rp)
		req.Topics[len(req.Topics)-1].Partitions = all[start:len(all):len(all)]
		asked[partKey{fp.p.TopicID(), int32(fp.p.ID())}] = fp
	}
	f.scratch.partitions = all
	if len(req.Topics) == 0 { // every replica throttled: wait for the quota
		f.sleep(min(max(hold, 10*time.Millisecond), time.Second))
		return nil
	}
	kresp, err := f.roundTrip(req, FetchWait+replicaFetchTimeout)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return fmt.Errorf("leader %d: %w", f.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if fp, ok := asked[partKey{partition.TopicID(t.TopicID), rp.Partition}]; ok {
				f.apply(fp, &rp)
			}
		}
	}
	return nil
}

// apply takes one partition of the leader's answer.
func (f *fetcher) apply(fp followPart, rp *kmsg.FetchResponseTopicPartition) {
	p := fp.p
	switch {
	case rp.ErrorCode == kerr.OffsetMovedToTieredStorage.Code:
		f.fromTier(fp, record.Offset(rp.LogStartOffset))
	case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
		f.outOfRange(fp, record.Offset(rp.HighWatermark), record.Offset(rp.LogStartOffset))
	case rp.ErrorCode != 0:
		f.partitionError(fp, rp.ErrorCode)
	case rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0:
		f.truncateTo(fp, replica.EpochEnd{Epoch: record.Epoch(rp.DivergingEpoch.Epoch), End: record.Offset(rp.DivergingEpoch.EndOffset)})
	default:
		if err := p.AppendFromLeader(fp.epoch, rp.RecordBatches, record.Offset(rp.HighWatermark), record.Offset(rp.LogStartOffset)); err != nil {
			f.fs.cfg.Logger.Warn("fetcher: a follower could not append its leader's batches", "topic", p.Topic(), "partition", p.ID(), "err", err)
			f.backoff(p, fp.epoch, time.Second)
			return
		}
		if fp.throttle > 0 {
			f.fs.follower.Charge(fp.throttle, len(rp.RecordBatches))
		}
		if inSync := p.Log().LogEndOffset() >= record.Offset(rp.HighWatermark); inSync != fp.inSync {
			f.update(p, fp.epoch, func(x *followPart) { x.inSync = inSync })
		}
	}
}

// outOfRange handles a fetch offset the leader does not have: below its
// log start (this replica was away while retention ran), start over
// there; past its records, cut back to its high watermark.
func (f *fetcher) outOfRange(fp followPart, leaderHW, leaderStart record.Offset) {
	p := fp.p
	var err error
	switch leo := p.Log().LogEndOffset(); {
	case leo < leaderStart:
		f.fs.cfg.Logger.Warn("fetcher: a follower's log ends before its leader's log start; starting over there",
			"topic", p.Topic(), "partition", p.ID(), "end", leo, "leader_log_start", leaderStart)
		err = p.ResetAsFollower(fp.epoch, leaderStart)
	case leo > leaderHW:
		err = p.TruncateAsFollower(fp.epoch, leaderHW)
	}
	if err != nil {
		f.fs.cfg.Logger.Warn("fetcher: a follower could not realign with its leader", "topic", p.Topic(), "partition", p.ID(), "err", err)
	}
	f.backoff(p, fp.epoch, replicaFetchBackoff)
}

// fromTier starts fp's log from the remote tier (KIP-405's follower path,
// Partition.StartFromTier) in the background: reading the store must not
// hold up the other partitions fetched from this leader. The partition
// does not fetch meanwhile.
func (f *fetcher) fromTier(fp followPart, leaderStart record.Offset) {
	f.update(fp.p, fp.epoch, func(x *followPart) { x.until = time.Now().Add(time.Hour) })
	f.fs.wg.Add(1)
	go func() {
		defer f.fs.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		go func() {
			select {
			case <-f.fs.stop:
				cancel()
			case <-f.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var wait time.Duration
		if _, err := fp.p.StartFromTier(ctx, fp.epoch, leaderStart); err != nil {
			f.fs.cfg.Logger.Warn("fetcher: a follower could not start from the remote tier", "topic", fp.p.Topic(), "partition", fp.p.ID(), "leader_local_start", leaderStart, "err", err)
			wait = time.Second
		}
		f.backoff(fp.p, fp.epoch, wait)
		f.poke()
	}()
}

type (
	// NodeID and Partition are package partition's.
	NodeID    = partition.NodeID
	Partition = partition.Partition
)
