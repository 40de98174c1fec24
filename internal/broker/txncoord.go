package broker

// The transaction coordinator's hosting: internal/txn is the pure state
// machine; this file gives it a log (__transaction_state), runs one
// coordinator per partition of that topic this node leads (so the
// coordinator of a transactional id moves with its partition's leadership,
// as group coordinators do), performs the effects each call returns (append
// the record, answer, write markers, append Complete) and runs the timeout
// and expiry sweeps.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/txn"
)

// TransactionStateTopic is the transaction coordinator's log.
const TransactionStateTopic = txn.LogTopic

// Sweep periods: Kafka's transaction.abort.timed.out.transaction.cleanup
// .interval.ms (10 s) and transactional.id.expiration check (1 h).
const (
	txnTimeoutSweep = 10 * time.Second
	txnExpirySweep  = time.Hour
	markerRetry     = 200 * time.Millisecond
)

// txnStateTopicSpec is __transaction_state with n partitions: compacted,
// never retained away, as Kafka's TransactionLogConfig.
func txnStateTopicSpec(n int32) TopicSpec {
	spec := offsetsTopicSpec(n)
	spec.Name = TransactionStateTopic
	return spec
}

// txnWriteHook, when set (tests), is called after each durable write of a
// transaction's end: its __transaction_state records and each marker.
var txnWriteHook func(what string)

// TxnStats counts what this node's transaction coordinators did since it
// started.
type TxnStats struct {
	// Ongoing is how many transactional ids have a transaction open now.
	Ongoing int
	// Committed and Aborted count completed transactions; TimedOut the
	// aborts the timeout sweep started.
	Committed, Aborted, TimedOut int64
}

type txnCounters struct {
	committed, aborted, timedOut atomic.Int64
}

// TxnStats returns the coordinators' counters and the ongoing count.
func (b *Broker) TxnStats() TxnStats {
	st := TxnStats{Committed: b.txnCount.committed.Load(), Aborted: b.txnCount.aborted.Load(), TimedOut: b.txnCount.timedOut.Load()}
	for _, md := range b.Transactions() {
		if md.State == txn.Ongoing {
			st.Ongoing++
		}
	}
	return st
}

// TxnCoordinator is the transaction coordinator of one __transaction_state
// partition this node leads. Its methods are safe for concurrent use.
type TxnCoordinator struct {
	b  *Broker
	p  *Partition
	mu sync.Mutex // guards c and changed
	c  *txn.Coordinator
	// changed is closed (and replaced) whenever a transition completes:
	// a request refused CONCURRENT_TRANSACTIONS waits on it (see call).
	changed chan struct{}
	close   chan struct{}
	done    sync.WaitGroup
}

// txnShards are the transaction coordinators, by __transaction_state
// partition (loaded is nil while one replays its partition).
type txnShards struct{ shardMap[*txnShard] }

type txnShard struct {
	p      *Partition
	loaded *TxnCoordinator
}

// loadedTxnCoordinators returns the coordinators this node runs, by
// partition.
func (b *Broker) loadedTxnCoordinators() []*TxnCoordinator {
	all := b.txns.all()
	var out []*TxnCoordinator
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if c := all[k].loaded; c != nil {
			out = append(out, c)
		}
	}
	return out
}

// openTxnState loads a single node's transaction coordinator if its
// __transaction_state exists. Like Kafka, the topic is created on the
// first request that needs it (ensureTxnState).
func (b *Broker) openTxnState() error {
	if _, err := b.Topic(TransactionStateTopic); err != nil {
		return nil
	}
	return b.loadLocalTxnState()
}

// ensureTxnState creates a single node's __transaction_state (one
// partition: nothing to spread) and loads its coordinator, once.
func (b *Broker) ensureTxnState() error {
	b.txnSync.Lock()
	defer b.txnSync.Unlock()
	if len(b.txns.all()) > 0 {
		return nil
	}
	if b.isClosed() {
		return ErrClosed
	}
	if _, err := b.Topic(TransactionStateTopic); err != nil {
		if _, err := b.CreateTopic(txnStateTopicSpec(1)); err != nil && !errors.Is(err, ErrTopicExists) {
			return fmt.Errorf("%w: create %s: %w", ErrCoordinatorNotAvailable, TransactionStateTopic, err)
		}
	}
	return b.loadLocalTxnState()
}

func (b *Broker) loadLocalTxnState() error {
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		return err
	}
	for _, p := range t.local() {
		c, err := b.loadTxnCoordinator(p)
		if err != nil {
			return err
		}
		b.txns.set(int32(p.ID()), &txnShard{p: p, loaded: c})
	}
	return nil
}

// syncTxnCoordinators runs a coordinator for each __transaction_state
// partition this cluster member leads and stops the others, as
// syncCoordinators does for groups.
func (b *Broker) syncTxnCoordinators() {
	b.txnSync.Lock()
	defer b.txnSync.Unlock()
	if b.isClosed() {
		return
	}
	leads := map[int32]*Partition{}
	if t, err := b.Topic(TransactionStateTopic); err == nil {
		for _, p := range t.local() {
			if p.Role() == RoleLeader && !p.Closed() {
				leads[int32(p.ID())] = p
			}
		}
	}
	for k, sh := range b.txns.all() {
		if leads[k] != sh.p {
			b.txns.set(k, nil)
			if sh.loaded != nil {
				sh.loaded.stop()
			}
			b.logger.Info("broker: transaction coordinator unloaded: this node no longer leads its partition", "partition", k)
		}
	}
	for k, p := range leads {
		if b.txns.get(k) != nil {
			continue
		}
		sh := &txnShard{p: p}
		b.txns.set(k, sh)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if !p.WaitEpochCommitted(b.stop) {
				return
			}
			c, err := b.loadTxnCoordinator(p)
			if err != nil {
				b.logger.Error("broker: cannot load a transaction coordinator", "partition", k, "err", err)
				return
			}
			b.txnSync.Lock()
			defer b.txnSync.Unlock()
			if b.txns.get(k) != sh || b.isClosed() {
				c.stop()
				return
			}
			b.txns.set(k, &txnShard{p: p, loaded: c})
			b.logger.Info("broker: transaction coordinator loaded", "partition", k)
		}()
	}
}

// stopTxnCoordinators unloads every coordinator (Close).
func (b *Broker) stopTxnCoordinators() {
	b.txnSync.Lock()
	defer b.txnSync.Unlock()
	for k, sh := range b.txns.all() {
		b.txns.set(k, nil)
		if sh.loaded != nil {
			sh.loaded.stop()
		}
	}
}

// loadTxnCoordinator replays p into a new coordinator, starts its sweeps
// and resumes the markers of every transaction left half-ended.
func (b *Broker) loadTxnCoordinator(p *Partition) (*TxnCoordinator, error) {
	offsetsPartitions := int32(1)
	if b.clustered() {
		offsetsPartitions = b.cfg.OffsetsTopicPartitions
		if t, err := b.Topic(ConsumerOffsetsTopic); err == nil {
			offsetsPartitions = t.Partitions()
		}
	}
	c := &TxnCoordinator{b: b, p: p, close: make(chan struct{}), changed: make(chan struct{})}
	c.c = txn.New(txn.Config{
		MaxTimeoutMs:      int32(b.cfg.TransactionMaxTimeout / time.Millisecond),
		OffsetsPartitions: offsetsPartitions,
		Version:           txn.TV2,
		CoordinatorEpoch:  int32(p.LeaderEpoch()),
		IDs: txn.IDFunc(func() (producer.ID, error) {
			id, _, err := b.AllocateProducerID()
			return id, err
		}),
	})
	var recs []txn.Record
	err := (&offsetStore{p: p, now: b.cfg.Now}).Replay(func(r group.StoreRecord) error {
		recs = append(recs, txn.Record{Key: r.Key, Value: r.Value})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("broker: replay %s-%d: %w", TransactionStateTopic, p.ID(), err)
	}
	now := b.cfg.Now().UnixMilli()
	c.mu.Lock()
	resume, err := c.c.Load(recs, int32(p.LeaderEpoch()), now)
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("broker: load %s-%d: %w", TransactionStateTopic, p.ID(), err)
	}
	for _, m := range resume {
		c.goMarkers(m)
	}
	c.done.Add(1)
	go c.sweep()
	return c, nil
}

func (c *TxnCoordinator) stop() {
	close(c.close)
	c.done.Wait()
}

// stopped reports whether the coordinator was unloaded.
func (c *TxnCoordinator) stopped() bool {
	select {
	case <-c.close:
		return true
	default:
		return false
	}
}

// sweep aborts timed-out transactions and expires idle ids.
func (c *TxnCoordinator) sweep() {
	defer c.done.Done()
	timeouts := time.NewTicker(min(txnTimeoutSweep, c.b.cfg.TransactionSweepInterval))
	defer timeouts.Stop()
	expiry := time.NewTicker(txnExpirySweep)
	defer expiry.Stop()
	for {
		var outs []txn.Output
		select {
		case <-c.close:
			return
		case <-timeouts.C:
			c.mu.Lock()
			outs = c.c.Timeouts(c.now())
			c.mu.Unlock()
			c.b.txnCount.timedOut.Add(int64(len(outs)))
			for range outs {
				c.b.logger.Info("broker: aborting a transaction that outlived its timeout", "partition", c.p.ID())
			}
		case <-expiry.C:
			c.mu.Lock()
			outs = c.c.Expire(c.now())
			c.mu.Unlock()
		}
		for _, out := range outs {
			c.process(context.Background(), out)
		}
	}
}

func (c *TxnCoordinator) now() int64 { return c.b.cfg.Now().UnixMilli() }

// concurrentWait bounds how long a request refused CONCURRENT_TRANSACTIONS
// waits here for the transition in its way before that answer is sent.
const concurrentWait = 2 * time.Second

// call runs one coordinator request and performs its effects; it returns
// the reply to send. A request refused CONCURRENT_TRANSACTIONS with nothing
// written (the id is mid-transition: a commit's markers are being written)
// is retried here as each transition completes, for up to concurrentWait:
// the next transaction of a producer that just committed would otherwise
// bounce off the previous one's markers and back off in the client (Kafka's
// clients retry it after 20 ms to 1 s).
func (c *TxnCoordinator) call(ctx context.Context, fn func(*txn.Coordinator, int64) txn.Output) txn.Reply {
	var deadline <-chan time.Time
	for {
		if c.stopped() {
			return txn.Reply{Code: txn.CodeNotCoordinator, ProducerID: producer.NoID, Epoch: txn.NoEpoch}
		}
		c.mu.Lock()
		out := fn(c.c, c.now())
		changed := c.changed
		c.mu.Unlock()
		if out.Append == nil && out.Reply != nil && out.Reply.Code == txn.CodeConcurrentTransactions {
			if deadline == nil {
				t := time.NewTimer(concurrentWait)
				defer t.Stop()
				deadline = t.C
			}
			select {
			case <-changed:
				continue
			case <-deadline:
			case <-ctx.Done():
			case <-c.close:
			}
		}
		if r := c.process(ctx, out); r != nil {
			return *r
		}
		return txn.Reply{Code: txn.CodeNone, ProducerID: producer.NoID, Epoch: txn.NoEpoch}
	}
}

// process appends out's record (and the ones that follow from it), starts
// its markers, and returns the reply among them.
func (c *TxnCoordinator) process(ctx context.Context, out txn.Output) *txn.Reply {
	reply := out.Reply
	for out.Append != nil {
		t := out.Append
		code := c.append(ctx, t.Record())
		if code == txn.CodeNone && txnWriteHook != nil {
			txnWriteHook("state " + t.Target.State.String())
		}
		c.mu.Lock()
		out = c.c.Appended(t, code, c.now())
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		if out.Reply != nil {
			reply = out.Reply
		}
	}
	if out.Markers != nil {
		c.goMarkers(out.Markers)
	}
	return reply
}

// append writes one __transaction_state record with acks=all and maps a
// failure as Kafka's appendTransactionToLog does.
func (c *TxnCoordinator) append(ctx context.Context, r txn.Record) txn.Code {
	err := (&offsetStore{p: c.p, now: c.b.cfg.Now}).Append(ctx, []group.StoreRecord{{Key: r.Key, Value: r.Value}})
	switch {
	case err == nil:
		return txn.CodeNone
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrClosed), errors.Is(err, ErrFencedLeaderEpoch):
		return txn.CodeNotCoordinator
	case errors.Is(err, ErrNotEnoughReplicas), errors.Is(err, ErrNotEnoughReplicasAfterAppend),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return txn.CodeCoordinatorNotAvailable
	}
	c.b.logger.Error("broker: append to "+TransactionStateTopic+" failed", "partition", c.p.ID(), "err", err)
	return txn.CodeUnknownServerError
}

// goMarkers writes m's markers in the background, then appends its
// Complete transition.
func (c *TxnCoordinator) goMarkers(m *txn.Markers) {
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.writeMarkers(m)
	}()
}

func (c *TxnCoordinator) writeMarkers(m *txn.Markers) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.close:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for _, tp := range m.Partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := c.b.writeMarker(ctx, tp, m)
				if err == nil {
					if txnWriteHook != nil {
						txnWriteHook(fmt.Sprintf("marker %s-%d", tp.Topic, tp.Partition))
					}
					return
				}
				c.b.logger.Debug("broker: transaction marker not written yet", "txn", m.TransactionalID, "topic", tp.Topic, "partition", tp.Partition, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(markerRetry):
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // unloaded: the next coordinator resumes from PrepareX
	}
	out := txn.Output{Append: m.Complete}
	c.process(ctx, out)
	if md, ok := c.Describe(m.TransactionalID); ok == txn.CodeNone && (md.State == txn.CompleteCommit || md.State == txn.CompleteAbort) {
		if m.Commit {
			c.b.txnCount.committed.Add(1)
		} else {
			c.b.txnCount.aborted.Add(1)
		}
	}
	// A failed Complete append leaves the id in PrepareX with nothing
	// pending: resume it until it completes.
	for ctx.Err() == nil {
		c.mu.Lock()
		next := c.c.Resume(m.TransactionalID, c.now())
		c.mu.Unlock()
		if next == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(markerRetry):
		}
		c.goMarkers(next)
		return
	}
}

// writeMarker writes one marker: to the partition here if this node leads
// it, else through its leader's internal listener (WriteTxnMarkers). A
// partition of a deleted topic needs none.
func (b *Broker) writeMarker(ctx context.Context, tp txn.Partition, m *txn.Markers) error {
	t, err := b.Topic(tp.Topic)
	if err != nil {
		if errors.Is(err, ErrUnknownTopicOrPartition) {
			return nil
		}
		return err
	}
	if tp.Partition < 0 || tp.Partition >= t.Partitions() {
		return nil
	}
	p, err := t.Partition(PartitionID(tp.Partition))
	if err == nil && p.CheckLeader() == nil {
		return p.WriteMarker(ctx, m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch)
	}
	if !b.clustered() {
		return err
	}
	leader := b.PartitionInfo(t, PartitionID(tp.Partition)).Leader
	if leader < 0 {
		return fmt.Errorf("%w: %s-%d has no leader", ErrNotLeader, tp.Topic, tp.Partition)
	}
	return b.writeMarkerRemote(ctx, leader, tp, m)
}

// writeMarkerRemote sends WriteTxnMarkers for one partition to its leader.
func (b *Broker) writeMarkerRemote(ctx context.Context, leader NodeID, tp txn.Partition, m *txn.Markers) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = int64(m.ProducerID), int16(m.Epoch), m.Commit, m.CoordinatorEpoch
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	mk.Topics = append(mk.Topics, rt)
	req.Markers = append(req.Markers, mk)
	resp, err := b.roundTrip(ctx, leader, req)
	if err != nil {
		return err
	}
	wr := resp.(*kmsg.WriteTxnMarkersResponse)
	for _, rm := range wr.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return fmt.Errorf("broker: marker for %s-%d on node %d: %w", tp.Topic, tp.Partition, leader, kerr.ErrorForCode(rp.ErrorCode))
				}
			}
		}
	}
	return nil
}

// EnlistRemote asks the coordinator of transactionalID, which runs on
// another node, to add parts to the producer's transaction (TV2's implicit
// add on Produce v12 and TxnOffsetCommit v5) or, with verifyOnly, to check
// that they are in it: AddPartitionsToTxn v5, as Kafka's partition
// leaders send it. It returns each partition's Kafka error code; an error
// means the coordinator could not be asked (the caller answers with a
// retriable error).
func (b *Broker) EnlistRemote(ctx context.Context, transactionalID string, pid producer.ID, epoch producer.Epoch, parts []txn.Partition, verifyOnly bool) (map[txn.Partition]int16, error) {
	node, err := b.TxnCoordinatorNode(transactionalID)
	if err != nil {
		return nil, err
	}
	if node == b.cfg.NodeID {
		return nil, fmt.Errorf("%w: %s", ErrCoordinatorLoading, transactionalID)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = transactionalID, int64(pid), int16(epoch), verifyOnly
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.Topic]
		if !ok {
			i = len(rt.Topics)
			byTopic[p.Topic] = i
			t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			t.Topic = p.Topic
			rt.Topics = append(rt.Topics, t)
		}
		rt.Topics[i].Partitions = append(rt.Topics[i].Partitions, p.Partition)
	}
	req.Transactions = append(req.Transactions, rt)
	resp, err := b.roundTrip(ctx, node, req)
	if err != nil {
		return nil, fmt.Errorf("broker: transaction coordinator of %s on node %d: %w", transactionalID, node, err)
	}
	ar := resp.(*kmsg.AddPartitionsToTxnResponse)
	if ar.ErrorCode != 0 {
		return nil, fmt.Errorf("broker: transaction coordinator of %s on node %d: %w", transactionalID, node, kerr.ErrorForCode(ar.ErrorCode))
	}
	out := make(map[txn.Partition]int16, len(parts))
	for _, t := range ar.Transactions {
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				out[txn.Partition{Topic: tt.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("broker: transaction coordinator of %s on node %d did not answer for %s-%d", transactionalID, node, p.Topic, p.Partition)
		}
	}
	return out, nil
}

// TxnCoordinatorFor returns the coordinator of transactionalID if this
// node runs it: ErrNotCoordinator if another node leads its partition,
// ErrCoordinatorLoading while this one replays it.
func (b *Broker) TxnCoordinatorFor(transactionalID string) (*TxnCoordinator, error) {
	if !b.clustered() {
		if err := b.ensureTxnState(); err != nil {
			return nil, err
		}
	}
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist yet", ErrNotCoordinator, TransactionStateTopic)
	}
	k := txn.PartitionFor(transactionalID, t.Partitions())
	sh := b.txns.get(k)
	switch {
	case sh == nil:
		return nil, fmt.Errorf("%w: transactional id %q is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, transactionalID, TransactionStateTopic, k, b.cfg.NodeID)
	case sh.loaded == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, TransactionStateTopic, k)
	}
	return sh.loaded, nil
}

// TxnCoordinatorNode returns the node that coordinates transactionalID: the
// leader of its __transaction_state partition, created on a cluster's first
// request as Kafka does.
func (b *Broker) TxnCoordinatorNode(transactionalID string) (NodeID, error) {
	if !b.clustered() {
		if err := b.ensureTxnState(); err != nil {
			return -1, err
		}
		return b.cfg.NodeID, nil
	}
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		spec := txnStateTopicSpec(b.cfg.OffsetsTopicPartitions)
		spec.ReplicationFactor = int16(min(3, len(liveBrokers(b.meta.Image()))))
		if t, err = b.CreateTopic(spec); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(TransactionStateTopic)
		}
		if err != nil {
			return -1, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, TransactionStateTopic, err)
		}
	}
	info := b.PartitionInfo(t, PartitionID(txn.PartitionFor(transactionalID, t.Partitions())))
	if info.Leader < 0 {
		return -1, fmt.Errorf("%w: %s has no leader", ErrCoordinatorNotAvailable, TransactionStateTopic)
	}
	return info.Leader, nil
}

// InitProducerID handles InitProducerId with a transactional id.
func (c *TxnCoordinator) InitProducerID(ctx context.Context, req txn.InitRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.InitProducerID(req, now) })
}

// AddPartitions handles AddPartitionsToTxn (and TV2's implicit add).
func (c *TxnCoordinator) AddPartitions(ctx context.Context, req txn.AddRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.AddPartitions(req, now) })
}

// AddOffsets handles AddOffsetsToTxn.
func (c *TxnCoordinator) AddOffsets(ctx context.Context, id string, pid producer.ID, epoch producer.Epoch, groupID string, v txn.Version) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output {
		return co.AddOffsets(id, pid, epoch, groupID, v, now)
	})
}

// EndTxn handles EndTxn.
func (c *TxnCoordinator) EndTxn(ctx context.Context, req txn.EndRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.EndTxn(req, now) })
}

// Verify is KIP-890 part 1's check for a transactional Produce ≤ v11.
func (c *TxnCoordinator) Verify(id string, pid producer.ID, epoch producer.Epoch, parts []txn.Partition) (txn.Code, map[txn.Partition]txn.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Verify(id, pid, epoch, parts)
}

// Describe is DescribeTransactions for one id.
func (c *TxnCoordinator) Describe(id string) (txn.Metadata, txn.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Describe(id)
}

// All lists every transactional id this coordinator holds.
func (c *TxnCoordinator) All() []txn.Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.All()
}

// Transactions lists every transactional id of every coordinator on this
// node.
func (b *Broker) Transactions() []txn.Metadata {
	var out []txn.Metadata
	for _, c := range b.loadedTxnCoordinators() {
		out = append(out, c.All()...)
	}
	return out
}

// ListTransactions is ListTransactions over every coordinator on this node.
func (b *Broker) ListTransactions(f txn.ListFilter) ([]txn.Metadata, []string) {
	var out []txn.Metadata
	var unknown []string
	for _, c := range b.loadedTxnCoordinators() {
		c.mu.Lock()
		mds, u := c.c.List(f, c.now())
		c.mu.Unlock()
		out, unknown = append(out, mds...), u
	}
	return out, unknown
}
