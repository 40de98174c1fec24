package broker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/replica"
	"github.com/strandmq/strand/internal/wire"
)

// The follower side of replication (REPLICATION.md §2.2, §2.8): one
// fetcher per leader this node follows, on that leader's internal
// listener, with Kafka's own Fetch (ReplicaState) and
// OffsetForLeaderEpoch. A partition that starts following first asks its
// leader where its latest epoch ends and truncates what the leader does
// not have; then it fetches from its end offset, appends the leader's
// batches as they are (offsets, epochs), and takes the leader's high
// watermark. Each fetch is also what tells the leader how far it has
// come.

// Replica fetch tuning, as Kafka's defaults (replica.fetch.*), except the
// backoff, which is short: a cluster on one machine recovers in tenths of
// a second.
const (
	replicaFetchWait     = 500 * time.Millisecond
	replicaFetchMaxBytes = 10 << 20
	replicaPartitionMax  = 1 << 20
	replicaFetchBackoff  = 200 * time.Millisecond
	replicaFetchVersion  = 15 // ReplicaState, topic ids
	replicaEpochsVersion = 4  // OffsetForLeaderEpoch with ReplicaID
)

// followPart is one partition a fetcher fetches.
type followPart struct {
	p          *Partition
	epoch      record.Epoch // the leader epoch it follows
	truncating bool         // ask where the epoch ends before fetching
	until      time.Time    // backing off after an error until then
}

// fetcher fetches every partition this node follows from one leader.
type fetcher struct {
	b      *Broker
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
	topic     TopicID
	partition int32
}

// fetchers are a broker's fetchers by leader.
type fetchers struct {
	mu       sync.Mutex
	byLeader map[NodeID]*fetcher
}

// follow makes p fetch from leader at epoch, starting with truncation.
func (b *Broker) follow(p *Partition, leader NodeID, epoch record.Epoch) {
	b.replicas.mu.Lock()
	defer b.replicas.mu.Unlock()
	b.unfollowLocked(p)
	if b.replicas.byLeader == nil {
		b.replicas.byLeader = map[NodeID]*fetcher{}
	}
	f := b.replicas.byLeader[leader]
	if f == nil {
		f = &fetcher{b: b, leader: leader, parts: map[*Partition]*followPart{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
		b.replicas.byLeader[leader] = f
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			f.run()
		}()
	}
	f.mu.Lock()
	f.parts[p] = &followPart{p: p, epoch: epoch, truncating: true}
	f.mu.Unlock()
	f.poke()
}

// unfollow stops fetching p (it leads now, or is gone).
func (b *Broker) unfollow(p *Partition) {
	b.replicas.mu.Lock()
	defer b.replicas.mu.Unlock()
	b.unfollowLocked(p)
}

func (b *Broker) unfollowLocked(p *Partition) {
	for id, f := range b.replicas.byLeader {
		f.mu.Lock()
		delete(f.parts, p)
		empty := len(f.parts) == 0
		f.mu.Unlock()
		if empty {
			close(f.done)
			delete(b.replicas.byLeader, id)
		}
	}
}

// stopFetchers ends every fetcher (Close).
func (b *Broker) stopFetchers() {
	b.replicas.mu.Lock()
	defer b.replicas.mu.Unlock()
	for id, f := range b.replicas.byLeader {
		close(f.done)
		delete(b.replicas.byLeader, id)
	}
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
		case <-f.b.stop:
		}
		f.closeConn()
	}()
	for {
		select {
		case <-f.done:
			return
		case <-f.b.stop:
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
			f.b.logger.Debug("broker: replica fetch from the leader failed", "leader", f.leader, "err", err)
			f.sleep(replicaFetchBackoff)
		}
	}
}

func (f *fetcher) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.done:
	case <-f.b.stop:
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
		addr, err := f.b.internalAddr(f.leader)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err = f.b.cfg.Dialer.DialNode(ctx, int32(f.leader), addr, "strand-replica-"+strconv.Itoa(int(f.b.cfg.NodeID)))
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
		case <-f.b.stop:
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

// internalAddr is node id's internal listener, from the metadata.
func (b *Broker) internalAddr(id NodeID) (string, error) {
	br, ok := b.meta.Image().Broker(cluster.NodeID(id))
	if ok {
		for _, ep := range br.Endpoints {
			if ep.Name == "INTERNAL" {
				return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
			}
		}
	}
	return "", fmt.Errorf("broker: node %d has no internal listener registered", id)
}

// truncate asks the leader where each partition's latest epoch ends and
// cuts what the leader does not have (OffsetForLeaderEpoch, KIP-279).
func (f *fetcher) truncate(parts []followPart) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(replicaEpochsVersion)
	req.ReplicaID = int32(f.b.cfg.NodeID)
	index := map[string]int{}
	asked := map[string]map[int32]followPart{}
	for _, fp := range parts {
		latest := fp.p.log.LatestEpoch()
		if latest == record.NoEpoch { // nothing written in any epoch: nothing to cut
			f.update(fp.p, fp.epoch, func(x *followPart) { x.truncating = false })
			continue
		}
		i, ok := index[fp.p.topic]
		if !ok {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = fp.p.topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			index[fp.p.topic] = i
			asked[fp.p.topic] = map[int32]followPart{}
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = int32(fp.p.id), int32(fp.epoch), int32(latest)
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[fp.p.topic][int32(fp.p.id)] = fp
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
	le, lend := p.log.EndOffsetForEpoch(leader.Epoch)
	to, again := replica.Truncation(leader, replica.EpochEnd{Epoch: le, End: lend}, p.log.LogEndOffset(), p.log.HighWatermark())
	if err := p.truncateAsFollower(fp.epoch, to); err != nil {
		f.b.logger.Warn("broker: a follower could not truncate its log", "topic", p.topic, "partition", p.id, "to", to, "err", err)
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
	req.ReplicaState.ID, req.ReplicaState.Epoch = int32(f.b.cfg.NodeID), f.b.member.epoch.Load()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(replicaFetchWait/time.Millisecond), 1, replicaFetchMaxBytes
	req.SessionEpoch = -1
	// Grouped by topic, into slices and a map the fetcher reuses.
	if f.scratch.asked == nil {
		f.scratch.asked = map[partKey]followPart{}
	}
	asked := f.scratch.asked
	clear(asked)
	slices.SortFunc(parts, func(a, b followPart) int { return bytes.Compare(a.p.topicID[:], b.p.topicID[:]) })
	all := slices.Grow(f.scratch.partitions[:0], len(parts)) // never grows below: the topics' slices stay in it
	start := 0
	for i, fp := range parts {
		if i == 0 || parts[i-1].p.topicID != fp.p.topicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = fp.p.topic, fp.p.topicID
			req.Topics = append(req.Topics, t)
			start = len(all)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = int32(fp.p.id), int32(fp.epoch)
		rp.FetchOffset, rp.LogStartOffset = int64(fp.p.log.LogEndOffset()), int64(fp.p.log.LogStartOffset())
		rp.LastFetchedEpoch = int32(fp.p.log.LatestEpoch())
		rp.PartitionMaxBytes = replicaPartitionMax
		all = append(all, rp)
		req.Topics[len(req.Topics)-1].Partitions = all[start:len(all):len(all)]
		asked[partKey{fp.p.topicID, int32(fp.p.id)}] = fp
	}
	f.scratch.partitions = all
	kresp, err := f.roundTrip(req, replicaFetchWait+10*time.Second)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return fmt.Errorf("leader %d: %w", f.leader, kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if fp, ok := asked[partKey{TopicID(t.TopicID), rp.Partition}]; ok {
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
	case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
		f.outOfRange(fp, record.Offset(rp.HighWatermark), record.Offset(rp.LogStartOffset))
	case rp.ErrorCode != 0:
		f.partitionError(fp, rp.ErrorCode)
	case rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0:
		f.truncateTo(fp, replica.EpochEnd{Epoch: record.Epoch(rp.DivergingEpoch.Epoch), End: record.Offset(rp.DivergingEpoch.EndOffset)})
	default:
		if err := p.appendFromLeader(fp.epoch, rp.RecordBatches, record.Offset(rp.HighWatermark), record.Offset(rp.LogStartOffset)); err != nil {
			f.b.logger.Warn("broker: a follower could not append its leader's batches", "topic", p.topic, "partition", p.id, "err", err)
			f.backoff(p, fp.epoch, time.Second)
		}
	}
}

// outOfRange handles a fetch offset the leader does not have: below its
// log start (this replica was away while retention ran), start over
// there; past its records, cut back to its high watermark.
func (f *fetcher) outOfRange(fp followPart, leaderHW, leaderStart record.Offset) {
	p := fp.p
	var err error
	switch leo := p.log.LogEndOffset(); {
	case leo < leaderStart:
		f.b.logger.Warn("broker: a follower's log ends before its leader's log start; starting over there",
			"topic", p.topic, "partition", p.id, "end", leo, "leader_log_start", leaderStart)
		err = p.resetAsFollower(fp.epoch, leaderStart)
	case leo > leaderHW:
		err = p.truncateAsFollower(fp.epoch, leaderHW)
	}
	if err != nil {
		f.b.logger.Warn("broker: a follower could not realign with its leader", "topic", p.topic, "partition", p.id, "err", err)
	}
	f.backoff(p, fp.epoch, replicaFetchBackoff)
}

// followerAt reports whether p follows at epoch (p.mu held): an answer
// fetched for an older role is dropped.
func (p *Partition) followerAt(epoch record.Epoch) bool {
	s := p.state()
	return !p.mu.closed && s.role == RoleFollower && s.epoch == epoch
}

// truncateAsFollower cuts the log at o if p still follows at epoch.
func (p *Partition) truncateAsFollower(epoch record.Epoch, o record.Offset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followerAt(epoch) {
		return nil
	}
	if o >= p.log.LogEndOffset() {
		// Nothing to cut, but the log must forget an epoch it assigned as
		// leader and wrote nothing in (partlog.TruncateTo does): else its
		// next fetch names that epoch, the leader answers that it
		// diverges, and the follower truncates nowhere — forever.
		if err := p.log.TruncateTo(o); err != nil {
			return storageError(p, err)
		}
		return nil
	}
	return p.truncateLocked(o)
}

// resetAsFollower empties the log and starts it at o, if p still follows
// at epoch.
func (p *Partition) resetAsFollower(epoch record.Epoch, o record.Offset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followerAt(epoch) {
		return nil
	}
	if err := p.log.ResetTo(o); err != nil {
		return storageError(p, err)
	}
	return p.rebuildProducersLocked()
}

// appendFromLeader appends batches fetched from the leader as they are,
// learns their producers, and takes the leader's high watermark and log
// start offset. Batches this replica has already are skipped; one that
// straddles its end replaces what it has from there.
func (p *Partition) appendFromLeader(epoch record.Epoch, batches []byte, leaderHW, leaderStart record.Offset) error {
	p.mu.Lock()
	if !p.followerAt(epoch) {
		p.mu.Unlock()
		return nil
	}
	leo := p.log.LogEndOffset()
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil || h.Size() > len(batches) {
			p.mu.Unlock()
			return fmt.Errorf("%w: %s-%d: the leader sent a batch that does not parse: %v", ErrCorruptMessage, p.topic, p.id, err)
		}
		if h.BaseOffset+record.Offset(h.LastOffsetDelta) >= leo {
			if h.BaseOffset < leo {
				if err := p.truncateLocked(h.BaseOffset); err != nil {
					p.mu.Unlock()
					return err
				}
			}
			break
		}
		batches = batches[h.Size():]
	}
	pending, err := p.log.AppendAsFollower(batches)
	for rest := batches; len(rest) > 0; {
		h, herr := record.ParseHeader(rest)
		if herr != nil || h.BaseOffset >= p.log.LogEndOffset() {
			break
		}
		p.observeLocked(p.mu.producers, h, rest[:h.Size()])
		rest = rest[h.Size():]
	}
	if rolled := p.log.ActiveBase(); rolled != p.mu.rolledAt {
		p.mu.rolledAt = rolled
		p.snapshotAtRollLocked()
	}
	p.mu.Unlock()
	if err != nil {
		return storageError(p, err)
	}
	if err := pending.Wait(); err != nil { // report only what is durable when the flush policy asks for it
		return storageError(p, err)
	}
	p.log.SetHighWatermark(min(leaderHW, p.log.LogEndOffset()))
	if start := min(leaderStart, p.log.HighWatermark()); start > p.log.LogStartOffset() {
		if _, err := p.log.DeleteRecordsBefore(start); err != nil {
			return fmt.Errorf("broker: %s-%d: follow the leader's log start %d: %w", p.topic, p.id, start, err)
		}
	}
	return nil
}
