package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/vfs"
)

// Acks is a produce request's acknowledgement level.
type Acks int16

// Kafka's acks values.
const (
	AcksNone   Acks = 0
	AcksLeader Acks = 1
	AcksAll    Acks = -1
)

// Kafka's ListOffsets timestamp sentinels.
const (
	TimestampLatest                = -1
	TimestampEarliest              = -2
	TimestampMax                   = -3
	TimestampEarliestLocal         = -4
	TimestampLatestTiered          = -5
	TimestampEarliestPendingUpload = -6
)

// expireEvery is how many appends pass between sweeps of idle producers.
const expireEvery = 4096

// Partition is one partition of a topic: its log, its leader epoch and its
// idempotent-producer state.
type Partition struct {
	node    *Node
	topic   string
	topicID TopicID
	id      PartitionID
	log     *partlog.Log
	// replica is the partition's role, leader, replicas, ISR and leader
	// epoch (role.go).
	replica atomic.Pointer[replicaState]
	// lead is what the leader knows of its followers (leader.go); nil
	// on a follower and on a single node.
	lead atomic.Pointer[leaderState]
	tier atomic.Pointer[tiered.Partition] // the remote tier (tiered.go); nil: none
	// traffic is the topic's stats counters (shared by its partitions).
	traffic *Counters

	// config is the topic's current config (AlterConfigs replaces it).
	config atomic.Pointer[Config]
	// txnActive is set while a transaction may bound the last stable
	// offset, so that reads without one need not take the lock.
	txnActive atomic.Bool

	// rollSnaps counts roll snapshots being written in the background
	// (snapshotAtRollLocked); rollSnapMu makes one write and prune at a
	// time.
	rollSnaps  sync.WaitGroup
	rollSnapMu sync.Mutex

	mu struct {
		sync.Mutex
		producers *producer.State
		appends   int
		closed    bool
		// rolledAt is the active segment's base when the last periodic
		// producer snapshot was taken (producers.go).
		rolledAt record.Offset
	}
}

// New makes the partition of topic's partition id whose log is l (opened
// by the node, which owns the data directory), with its producer state
// recovered. On a single node it leads at epoch 0; on a cluster member
// it serves nothing until its registration says what it does. On error
// l is closed.
func New(node *Node, topic string, tid TopicID, id PartitionID, l *partlog.Log, cfg Config, traffic *Counters) (*Partition, error) {
	state := unplacedState()
	if !node.Clustered {
		if err := l.AssignEpoch(0); err != nil {
			_ = l.Close()
			return nil, err
		}
		state = soloState(node.ID)
	}
	p := &Partition{node: node, topic: topic, topicID: tid, id: id, log: l, traffic: traffic}
	p.replica.Store(state)
	p.config.Store(&cfg)
	var err error
	if derr := l.Damaged(); derr != nil {
		// Offline until repaired: its headers cannot be trusted, and no
		// produce reaches it meanwhile.
		p.mu.producers = producer.NewState()
	} else if p.mu.producers, err = p.recoverProducers(); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("recover producer state: %w", err)
	}
	p.mu.rolledAt = l.ActiveBase()
	p.txnActive.Store(p.mu.producers.Unstable())
	return p, nil
}

// Close saves the producer snapshot (when snapshot is set) and closes the
// log. Appends after close fail with ErrUnknownTopicOrPartition.
func (p *Partition) Close(snapshot bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil
	}
	p.mu.closed = true
	if p.node.Clustered {
		p.node.Host.Unfollow(p)
	}
	p.rollSnaps.Wait()
	var errs []error
	if snapshot {
		dir := p.node.SnapshotDir
		if err := producer.SaveSnapshot(p.node.FS, dir, p.snapshotName(), p.log.LogEndOffset(), p.mu.producers); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.log.Close(); err != nil {
		errs = append(errs, fmt.Errorf("broker: close %s-%d: %w", p.topic, p.id, err))
	}
	return errors.Join(errs...)
}

// Remove closes the partition and deletes its data, the remote tier's
// included (DeleteTopic).
func (p *Partition) Remove() error { return p.remove(true) }

// RemoveReplica closes the partition and deletes this node's copy of it,
// keeping the remote tier, which the replicas that remain share (a
// reassignment took the partition off this node).
func (p *Partition) RemoveReplica() error { return p.remove(false) }

func (p *Partition) remove(remote bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.closed = true
	if p.node.Clustered {
		p.node.Host.Unfollow(p)
	}
	p.rollSnaps.Wait()
	RemoveSnapshots(p.node, p.topicID, p.id)
	if remote {
		p.dropRemote()
	}
	if err := p.log.Delete(); err != nil && !errors.Is(err, partlog.ErrClosed) {
		return fmt.Errorf("broker: delete %s-%d: %w", p.topic, p.id, err)
	}
	return nil
}

// Closed reports whether the partition was closed or removed.
func (p *Partition) Closed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.closed
}

// Topic returns the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// ID returns the partition's index.
func (p *Partition) ID() PartitionID { return p.id }

// HighWatermark returns the high watermark (LastStableOffset is the
// read_committed limit).
func (p *Partition) HighWatermark() record.Offset { return p.log.HighWatermark() }

// LogStartOffset returns the first offset still in the log.
func (p *Partition) LogStartOffset() record.Offset { return p.logStart() }

// LogEndOffset returns the next offset to be assigned.
func (p *Partition) LogEndOffset() record.Offset { return p.log.LogEndOffset() }

// Size returns the bytes the partition occupies on disk.
func (p *Partition) Size() int64 { return p.log.Size() }

// Wait returns a channel closed the next time the high watermark advances.
// Take it before reading, so an append between the read and the wait is
// not missed.
func (p *Partition) Wait() <-chan struct{} { return p.log.Wait() }

// NotifyHighWatermark has the partition send on c (buffered, one), without
// blocking, the next time the high watermark advances: what a consumer's
// long poll waits on, one channel for all the partitions it reads.
// Register before reading, so an append between the read and the wait is
// not missed; StopNotify when the wait ends otherwise.
func (p *Partition) NotifyHighWatermark(c chan<- struct{}) { p.log.NotifyHighWatermark(c) }

// NotifyEnd is NotifyHighWatermark for the log end: what a follower's long
// poll waits on.
func (p *Partition) NotifyEnd(c chan<- struct{}) { p.log.NotifyEnd(c) }

// StopNotify forgets c (NotifyHighWatermark, NotifyEnd).
func (p *Partition) StopNotify(c chan<- struct{}) { p.log.StopNotify(c) }

// AppendResult is the outcome of a successful append.
type AppendResult struct {
	BaseOffset record.Offset
	// LogAppendTime is the broker timestamp stamped on the batch, or -1 for
	// CreateTime topics.
	LogAppendTime int64
	// LogStartOffset after the append.
	LogStartOffset record.Offset
	// Duplicate is set when the batch is a retry of one already written;
	// BaseOffset is then the original one.
	Duplicate bool

	last record.Offset // the batch's last offset (the original's, for a duplicate)
}

// Append validates one v2 record batch and appends it. The batch is modified
// in place (base offset, leader epoch, and for LogAppendTime topics the
// timestamps and CRC). An idempotent producer's retry of a recently written
// batch is not written again: the result carries the original offset.
//
// With AcksAll, Append returns once the high watermark passes the batch (on
// a single node: once it is written, or once it is fsynced when the flush
// policy asks for that), or fails with ErrNotEnoughReplicas before writing
// when the ISR is smaller than min.insync.replicas. Whatever the acks, a
// batch the flush policy fsyncs is acknowledged only once it is on disk.
func (p *Partition) Append(ctx context.Context, batch []byte, acks Acks) (AppendResult, error) {
	res, commit, err := p.AppendAsync(batch, acks)
	if err != nil {
		return res, err
	}
	return res, commit.Wait(ctx)
}

// AppendAsync is Append split from its commit wait: the batch is checked
// and written (or found to be a duplicate), and Commit.Wait waits for what
// acks asks before it may be acknowledged. A produce request's timeout
// bounds only the wait; the batch is in the log either way.
func (p *Partition) AppendAsync(batch []byte, acks Acks) (AppendResult, Commit, error) {
	return p.appendAsync(batch, acks, false)
}

// AppendVerifiedAsync is AppendAsync for a transactional batch whose
// partition the transaction coordinator has just confirmed (or added) in
// the producer's ongoing transaction: it may open the transaction here.
// Without that confirmation, a transactional batch is appended only into
// a transaction already open here at its epoch.
func (p *Partition) AppendVerifiedAsync(batch []byte, acks Acks) (AppendResult, Commit, error) {
	return p.appendAsync(batch, acks, true)
}

// Enlister adds a partition to the ongoing transaction of the batch being
// appended, at its transaction coordinator.
type Enlister func(topic string, partition int32) error

// AppendTxnAsync is AppendAsync for a transactional batch (verified as for
// AppendVerifiedAsync). When validation quarantines records of it, enlist
// first adds the DLQ partition to the producer's transaction and the
// records go to the DLQ inside it: an abort takes them back out of the
// DLQ's read_committed view, a commit makes them visible with the rest.
func (p *Partition) AppendTxnAsync(batch []byte, acks Acks, verified bool, enlist Enlister) (AppendResult, Commit, error) {
	return p.appendAsyncWith(batch, acks, verified, enlist)
}

func (p *Partition) appendAsync(batch []byte, acks Acks, verified bool) (AppendResult, Commit, error) {
	return p.appendAsyncWith(batch, acks, verified, nil)
}

func (p *Partition) appendAsyncWith(batch []byte, acks Acks, verified bool, enlist Enlister) (AppendResult, Commit, error) {
	if err := p.notLeader(); err != nil {
		return AppendResult{}, Commit{}, err
	}
	cfg := p.config.Load()
	h, err := checkBatch(batch, cfg)
	if err != nil {
		return AppendResult{}, Commit{}, fmt.Errorf("%s-%d: %w", p.topic, p.id, err)
	}
	if cfg.RequireKeys {
		if err := requireKeys(batch); err != nil {
			return AppendResult{}, Commit{}, fmt.Errorf("%s-%d: %w", p.topic, p.id, err)
		}
	}
	if isr := len(p.state().isr); acks == AcksAll && isr < cfg.MinInsyncReplicas {
		return AppendResult{}, Commit{}, fmt.Errorf("%w: %s-%d has %d in-sync replicas, min.insync.replicas is %d",
			ErrNotEnoughReplicas, p.topic, p.id, isr, cfg.MinInsyncReplicas)
	}
	var q Quarantine
	if cfg.Screen != nil {
		if batch, h, q, err = cfg.Screen.Screen(p, batch, h, enlist); err != nil {
			return AppendResult{}, Commit{}, err
		}
	}
	state := p.state()
	txn := txnUnverified
	if verified {
		txn = txnVerified
	}
	res, pending, err := p.appendLocked(batch, h, cfg, q, txn)
	if err != nil {
		return res, Commit{}, err
	}
	if p.node.Clustered {
		p.AdvanceHighWatermark() // alone in its ISR, the leader's append commits it
	}
	return res, Commit{p: p, res: res, pending: pending, acks: acks, bytes: len(batch), records: h.NumRecords, state: state}, nil
}

// Commit is the wait between an append and its acknowledgement.
type Commit struct {
	p       *Partition
	res     AppendResult
	pending partlog.Pending
	acks    Acks
	bytes   int
	records int32
	// state is the leadership the batch was appended under: if it is
	// replaced before the batch commits, the produce fails
	// NOT_LEADER_OR_FOLLOWER (the new leader may not have it).
	state *replicaState
}

// Done reports whether the batch may be acknowledged already (Wait would
// not block): no fsync to wait for and, when acks asks for it, the high
// watermark past it.
func (c Commit) Done() bool {
	switch {
	case c.p == nil:
		return true
	case c.pending.Waits():
		return false
	case c.acks != AcksAll && !c.res.Duplicate:
		return true
	}
	return c.p.log.HighWatermark() > c.res.last
}

// Wait returns once the batch may be acknowledged: once it is fsynced if
// the flush policy asks for that (whatever the acks), and for AcksAll (or a
// duplicate, whose original may still be on its way) once the high
// watermark passes it. ctx bounds the wait; the fsync itself still
// completes, so the batch becomes visible even when no one waits for it.
func (c Commit) Wait(ctx context.Context) error {
	if c.p == nil {
		return nil
	}
	p, res := c.p, c.res
	// Outside the partition lock, so that concurrent producers share the
	// fsync the flush policy asks for (group commit).
	if err := c.waitDurable(ctx); err != nil {
		return err
	}
	if c.acks != AcksAll && !res.Duplicate {
		return nil
	}
	if p.log.HighWatermark() <= res.last { // parked until its followers have it
		p.node.Parked.Add(1)
		defer p.node.Parked.Add(-1)
	}
	for {
		// Checked before taking the channel too: a channel taken is
		// replaced at the next append (partlog.Log.Wait), which a batch
		// already committed need not cost.
		if p.log.HighWatermark() > res.last {
			return c.committed()
		}
		ch := p.log.Wait()
		if p.log.HighWatermark() > res.last {
			return c.committed()
		}
		if s := p.state(); c.state != nil && (s.role != RoleLeader || s.epoch != c.state.epoch) {
			return c.leadershipLost(c.state.epoch)
		}
		if err := p.log.Failed(); err != nil {
			return storageError(p, err)
		}
		if p.Closed() {
			return fmt.Errorf("%w: %s-%d closed before the batch was committed", ErrUnknownTopicOrPartition, p.topic, p.id)
		}
		var replaced <-chan struct{}
		if c.state != nil {
			replaced = c.state.replaced
		}
		select {
		case <-ch:
		case <-replaced: // an ISR change, or leadership moved: the loop's check tells
			epoch := c.state.epoch
			c.state = p.state()
			if c.state.epoch != epoch || c.state.role != RoleLeader {
				return c.leadershipLost(epoch)
			}
		case <-ctx.Done():
			return fmt.Errorf("broker: %s-%d: waiting for the high watermark: %w", p.topic, p.id, ctx.Err())
		}
	}
}

// committed is Wait's answer once the high watermark passed the batch: in
// a cluster, NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
// min.insync.replicas meanwhile.
func (c *Commit) committed() error {
	if c.state != nil && c.state.partitionEpoch >= 0 {
		return c.p.checkEnoughReplicas()
	}
	return nil
}

// leadershipLost is the error of a batch appended at epoch whose
// partition is no longer led here at that epoch: NOT_LEADER_OR_FOLLOWER,
// so the producer retries at the new leader.
func (c *Commit) leadershipLost(epoch record.Epoch) error {
	s := c.p.state()
	return fmt.Errorf("%w: %s-%d: leadership moved from epoch %d (now node %d, epoch %d) before the batch was committed",
		ErrNotLeader, c.p.topic, c.p.id, epoch, s.leader, s.epoch)
}

// waitDurable waits for the batch's fsync (if any) and counts the batch in
// once it is there.
func (c Commit) waitDurable(ctx context.Context) error {
	sync := func() error {
		if err := c.pending.Wait(); err != nil {
			return storageError(c.p, err)
		}
		if !c.res.Duplicate {
			c.p.traffic.CountIn(c.bytes, c.records)
		}
		return nil
	}
	if !c.pending.Waits() || ctx.Done() == nil {
		return sync()
	}
	done := make(chan error, 1)
	go func() { done <- sync() }() // finishes the group fsync even if ctx ends
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("broker: %s-%d: waiting for the fsync: %w", c.p.topic, c.p.id, ctx.Err())
	}
}

// checkBatch validates what a producer's batch must satisfy before it is
// written.
//
// The CRC is verified here only for LogAppendTime topics, whose batches are
// rewritten (and re-checksummed) before the append: a corrupt batch must not
// get a fresh, valid CRC. Otherwise partlog.Append verifies it (once, not
// twice: the CRC is the costliest check on the produce path), and a batch
// that fails there is CORRUPT_MESSAGE all the same. A corrupt retry of a
// batch already written may be answered as a duplicate: its original, intact
// copy is what the log holds.
func checkBatch(batch []byte, cfg *Config) (record.Header, error) {
	var h record.Header
	var err error
	if cfg.LogAppendTime {
		h, err = record.Check(batch)
	} else if h, err = record.ParseHeader(batch); err == nil && len(batch) < h.Size() {
		err = fmt.Errorf("%w: have %d of %d bytes", record.ErrShortBatch, len(batch), h.Size())
	}
	switch {
	case errors.Is(err, record.ErrBadMagic):
		return h, fmt.Errorf("%w: %w", ErrUnsupportedMessageFormat, err)
	case err != nil:
		return h, fmt.Errorf("%w: %w", ErrCorruptMessage, err)
	case h.Size() != len(batch):
		return h, fmt.Errorf("%w: exactly one record batch per partition is allowed (%d trailing bytes)", ErrInvalidRecord, len(batch)-h.Size())
	case len(batch) > cfg.MaxMessageBytes:
		return h, fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, len(batch), cfg.MaxMessageBytes)
	case h.NumRecords == 0 || h.LastOffsetDelta != h.NumRecords-1:
		return h, fmt.Errorf("%w: %d records with last offset delta %d", ErrInvalidRecord, h.NumRecords, h.LastOffsetDelta)
	case h.IsControl():
		return h, fmt.Errorf("%w: producers may not write control batches", ErrInvalidRecord)
	}
	return h, nil
}

// requireKeys refuses a batch holding a record without a key, as Kafka
// does for a compacted topic: a keyless record has no place in a table, and
// the cleaner would drop it anyway, so the producer learns at once rather
// than the consumer finding it gone later. Only compacted topics pay for the
// decoding.
func requireKeys(batch []byte) error {
	b, err := record.Decode(batch)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptMessage, err)
	}
	for i, r := range b.Records {
		if r.Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept a record without a key (record %d of the batch)", ErrInvalidRecord, i)
		}
	}
	return nil
}

// appendLocked appends a checked batch under the partition lock. q, for a
// validated topic, holds the batch's invalid records: they are written to
// the DLQ after the idempotence check and before the batch (see package dlq).
// The batch may not be durable yet when it returns: pending.Wait says when.
func (p *Partition) appendLocked(batch []byte, h record.Header, cfg *Config, q Quarantine, txn txnCheck) (AppendResult, partlog.Pending, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return AppendResult{}, partlog.Pending{}, fmt.Errorf("%w: %s-%d was deleted", ErrUnknownTopicOrPartition, p.topic, p.id)
	}
	idempotent := h.ProducerID >= 0 && h.BaseSequence >= 0
	pid, pepoch := producer.ID(h.ProducerID), producer.Epoch(h.ProducerEpoch)
	if idempotent {
		cached, dup, err := p.mu.producers.Check(pid, pepoch, h.BaseSequence, h.LastSequence())
		if err != nil {
			return AppendResult{}, partlog.Pending{}, fmt.Errorf("broker: %s-%d: %w", p.topic, p.id, err)
		}
		if dup {
			return AppendResult{BaseOffset: cached.BaseOffset, LogAppendTime: -1, LogStartOffset: p.log.LogStartOffset(),
				Duplicate: true, last: cached.LastOffset}, partlog.Pending{}, nil
		}
	}
	if err := p.checkTxnLocked(h, txn); err != nil {
		return AppendResult{}, partlog.Pending{}, err
	}
	if q != nil {
		if err := q.WriteLocked(p, p.log.LogEndOffset()); err != nil {
			return AppendResult{}, partlog.Pending{}, err
		}
	}
	res := AppendResult{LogAppendTime: -1}
	maxTS := h.MaxTimestamp
	if cfg.LogAppendTime {
		now := p.node.Now().UnixMilli()
		record.SetLogAppendTime(batch, now)
		res.LogAppendTime, maxTS = now, now
	}
	if h.IsTransactional() {
		// Before the batch can move the high watermark: a lock-free
		// LastStableOffset that sees the batch below the high watermark
		// must see this too (see LastStableOffset).
		p.txnActive.Store(true)
	}
	base, pending, err := p.log.AppendAsync(batch)
	if errors.Is(err, record.ErrCRC) {
		return AppendResult{}, pending, fmt.Errorf("%w: %s-%d: %w", ErrCorruptMessage, p.topic, p.id, err)
	}
	if err != nil {
		return AppendResult{}, pending, storageError(p, err)
	}
	res.BaseOffset = base
	res.last = base + record.Offset(h.LastOffsetDelta)
	res.LogStartOffset = p.log.LogStartOffset()
	if q != nil {
		q.Count(p.topic)
	}
	if idempotent {
		p.mu.producers.Update(pid, pepoch, producer.Batch{
			FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
			BaseOffset: base, LastOffset: base + record.Offset(h.LastOffsetDelta), Timestamp: maxTS,
		})
	}
	if h.IsTransactional() {
		p.mu.producers.BeginTxn(pid, base)
	}
	if rolled := p.log.ActiveBase(); rolled != p.mu.rolledAt {
		p.mu.rolledAt = rolled
		p.snapshotAtRollLocked()
	}
	if p.mu.appends++; p.mu.appends%expireEvery == 0 {
		deadline := p.node.Now().Add(-p.node.ProducerIDExpiration).UnixMilli()
		p.mu.producers.Expire(deadline)
	}
	return res, pending, nil
}

// ReadResult is what Read returns: whole batches as stored, plus the
// partition's offsets at the time of the read.
type ReadResult struct {
	Batches        []byte
	HighWatermark  record.Offset
	LogStartOffset record.Offset
	// LastStable is the last stable offset (read_committed reads only).
	LastStable record.Offset
}

// Read returns whole batches starting with the one containing from, at most
// maxBytes unless the first batch alone is larger, never past the high
// watermark. An offset below the log start or above the log end fails with
// an error wrapping ErrOffsetOutOfRange.
func (p *Partition) Read(from record.Offset, maxBytes int) (ReadResult, error) {
	return p.ReadInto(nil, from, maxBytes)
}

// ReadInto is Read into buf when buf's capacity suffices (the result then
// aliases buf), so a server can recycle its read buffers.
func (p *Partition) ReadInto(buf []byte, from record.Offset, maxBytes int) (ReadResult, error) {
	return p.ConsumerReads(false).Into(buf, from, maxBytes)
}

// Into is ReadInto, served as r allows.
func (r Reads) Into(buf []byte, from record.Offset, maxBytes int) (ReadResult, error) {
	p := r.p
	if err := p.serving(r.anyReplica); err != nil {
		return ReadResult{}, err
	}
	b, err := p.log.ReadInto(buf, from, maxBytes, p.log.HighWatermark())
	b, err = p.remoteRead(buf, b, err, from, maxBytes)
	res := ReadResult{Batches: b, HighWatermark: p.log.HighWatermark(), LogStartOffset: p.logStart()}
	if err != nil {
		return res, p.readError(from, err)
	}
	return res, nil
}

// ErrNoSpan is ReadSpan's answer when the batches must be read as bytes
// instead: the log's files have no descriptor to send from (an in-memory
// file system), or a read_committed reader needs aborted transactions
// matched against every batch.
var ErrNoSpan = errors.New("broker: read the batches as bytes")

// SpanResult is ReadResult with the batches left in the log: a span of a
// segment file for the caller to send (and close), not bytes.
type SpanResult struct {
	partlog.Span
	HighWatermark  record.Offset
	LogStartOffset record.Offset
	LastStable     record.Offset
}

// ReadSpan finds what ReadInto (committed false) or ReadCommittedInto
// (committed true) would read, without reading it. It fails with ErrNoSpan
// when the caller must read the bytes instead; the offsets in the result
// are valid even then.
func (p *Partition) ReadSpan(from record.Offset, maxBytes int, committed bool) (SpanResult, error) {
	return p.ConsumerReads(false).Span(from, maxBytes, committed)
}

// Span is ReadSpan, served as r allows.
func (r Reads) Span(from record.Offset, maxBytes int, committed bool) (SpanResult, error) {
	p := r.p
	if err := p.serving(r.anyReplica); err != nil {
		return SpanResult{}, err
	}
	lso := p.LastStableOffset()
	limit := p.log.HighWatermark()
	if committed {
		limit = lso
	}
	sp, err := p.log.ReadSpan(from, maxBytes, limit)
	res := SpanResult{Span: sp, HighWatermark: p.log.HighWatermark(), LogStartOffset: p.logStart(), LastStable: lso}
	switch {
	case errors.Is(err, vfs.ErrNoDescriptor), err != nil && p.belowLocal(from):
		return res, ErrNoSpan
	case err != nil:
		return res, p.readError(from, err)
	}
	if committed && sp.Len > 0 {
		p.mu.Lock()
		aborted := p.mu.producers.Aborted(from, sp.Last)
		p.mu.Unlock()
		if len(aborted) > 0 {
			sp.File.Close()
			res.Span = partlog.Span{}
			return res, ErrNoSpan
		}
	}
	return res, nil
}

// readError wraps a log read's failure.
func (p *Partition) readError(from record.Offset, err error) error {
	switch {
	case errors.Is(err, partlog.ErrDamaged):
		return fmt.Errorf("%w: %s-%d is offline: %w", ErrStorage, p.topic, p.id, err)
	case errors.Is(err, partlog.ErrOffsetOutOfRange):
		return fmt.Errorf("%w: %s-%d: %w", ErrOffsetOutOfRange, p.topic, p.id, err)
	case p.Closed():
		return fmt.Errorf("%w: %s-%d was deleted", ErrUnknownTopicOrPartition, p.topic, p.id)
	}
	return fmt.Errorf("broker: read %s-%d at %d: %w", p.topic, p.id, from, err)
}

// ListOffset answers ListOffsets for one timestamp or sentinel
// (TimestampLatest, TimestampEarliest, TimestampMax, …): the offset and the
// timestamp of the record found, or (-1, -1) if there is none.
func (p *Partition) ListOffset(ts int64) (record.Offset, int64, error) {
	if err := p.notLeader(); err != nil {
		return record.NoOffset, -1, err
	}
	if err := p.damaged(); err != nil {
		return record.NoOffset, -1, err
	}
	switch ts {
	case TimestampEarliest:
		if p.tierPending() {
			return record.NoOffset, -1, fmt.Errorf("%w: %s-%d: the remote tier is not loaded yet", ErrOffsetNotAvailable, p.topic, p.id)
		}
		return p.logStart(), -1, nil
	case TimestampEarliestLocal:
		return p.log.LogStartOffset(), -1, nil
	case TimestampLatest:
		if ls, _ := p.leading(); ls != nil && p.log.HighWatermark() < ls.epochStart {
			// A new leader's high watermark lags until its followers
			// fetch: answering it would send "latest" backwards (KIP-207).
			return record.NoOffset, -1, fmt.Errorf("%w: %s-%d: the new leader's high watermark %d is below its epoch's start %d",
				ErrOffsetNotAvailable, p.topic, p.id, p.log.HighWatermark(), ls.epochStart)
		}
		return p.log.HighWatermark(), -1, nil
	case TimestampMax:
		mts, off, err := p.log.MaxTimestamp()
		if err != nil {
			return record.NoOffset, -1, fmt.Errorf("broker: max timestamp of %s-%d: %w", p.topic, p.id, err)
		}
		return off, mts, nil
	case TimestampLatestTiered:
		return p.latestTiered(), -1, nil
	case TimestampEarliestPendingUpload:
		return p.earliestPendingUpload()
	}
	if ts < 0 {
		return record.NoOffset, -1, fmt.Errorf("%w: timestamp %d", ErrInvalidRecord, ts)
	}
	if off, found, ok, err := p.remoteOffsetForTimestamp(ts); ok || err != nil {
		return off, found, err
	}
	off, found, err := p.log.OffsetForTimestamp(ts)
	if err != nil {
		return record.NoOffset, -1, fmt.Errorf("broker: offset for timestamp %d in %s-%d: %w", ts, p.topic, p.id, err)
	}
	if off == record.NoOffset || off >= p.log.HighWatermark() {
		return record.NoOffset, -1, nil
	}
	return off, found, nil
}

// DeleteRecordsBefore advances the log start offset to before (-1: the high
// watermark) and returns the new log start offset.
func (p *Partition) DeleteRecordsBefore(before record.Offset) (record.Offset, error) {
	if err := p.notLeader(); err != nil {
		return record.NoOffset, err
	}
	if before == -1 {
		before = p.log.HighWatermark()
	}
	if before < 0 || before > p.log.HighWatermark() {
		return record.NoOffset, fmt.Errorf("%w: %s-%d: delete before %d, high watermark %d",
			ErrOffsetOutOfRange, p.topic, p.id, before, p.log.HighWatermark())
	}
	if start, done, err := p.deleteRecordsTiered(before); done || err != nil {
		return start, err
	}
	start, err := p.log.DeleteRecordsBefore(before)
	if errors.Is(err, partlog.ErrOffsetOutOfRange) {
		return record.NoOffset, fmt.Errorf("%w: %w", ErrOffsetOutOfRange, err)
	}
	if err != nil {
		return record.NoOffset, fmt.Errorf("broker: delete records of %s-%d: %w", p.topic, p.id, err)
	}
	return start, nil
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101): the largest epoch
// ≤ e the log knows and the end offset of that epoch.
//
// The current epoch ends at the log end offset even before anything was
// written in it (Kafka records the epoch when the leader is elected; partlog
// records it with the first batch).
func (p *Partition) EndOffsetForEpoch(e record.Epoch) (record.Epoch, record.Offset) {
	switch {
	case e == p.LeaderEpoch():
		return e, p.log.LogEndOffset()
	case e > p.LeaderEpoch() || e < 0:
		return record.NoEpoch, record.NoOffset
	}
	return p.log.EndOffsetForEpoch(e)
}

// SetConfig installs a new topic config on the partition and its log.
func (p *Partition) SetConfig(c Config) {
	p.config.Store(&c)
	p.log.SetConfig(c.Log)
}

// Producers lists the idempotent producers the partition knows (those with
// a batch still cached), by id: DescribeProducers.
func (p *Partition) Producers() []producer.Active {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.producers.Active()
}

// storageError wraps an append's failure from the log: ErrStorage unless the
// batch itself was at fault (too large for a segment) or the log closed.
func storageError(p *Partition, err error) error {
	switch {
	case errors.Is(err, partlog.ErrBatchTooLarge):
		return fmt.Errorf("%w: %s-%d: %w", ErrMessageTooLarge, p.topic, p.id, err)
	case errors.Is(err, partlog.ErrClosed):
		return fmt.Errorf("%w: %s-%d was closed: %w", ErrUnknownTopicOrPartition, p.topic, p.id, err)
	}
	return fmt.Errorf("%w: append to %s-%d: %w", ErrStorage, p.topic, p.id, err)
}

// Failed reports the partition's storage failure: non-nil once a failed
// fsync made its log refuse appends until the broker restarts.
func (p *Partition) Failed() error { return p.log.Failed() }

// damaged returns ErrStorage for a partition offline over damaged data.
func (p *Partition) damaged() error {
	if err := p.log.Damaged(); err != nil {
		return fmt.Errorf("%w: %s-%d is offline: %w", ErrStorage, p.topic, p.id, err)
	}
	return nil
}

// TruncateTo removes every batch at or after o, as a follower does after a
// leader change, and rebuilds the producer state to the new end: a retry
// of a truncated idempotent batch must be appended again, not answered as
// a duplicate at an offset that no longer holds it.
func (p *Partition) TruncateTo(o record.Offset) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return fmt.Errorf("%w: %s-%d was deleted", ErrUnknownTopicOrPartition, p.topic, p.id)
	}
	return p.truncateLocked(o)
}

func (p *Partition) truncateLocked(o record.Offset) error {
	if err := p.log.TruncateTo(o); err != nil {
		return storageError(p, err)
	}
	return p.rebuildProducersLocked()
}

// rebuildProducersLocked rebuilds the producer state to the log's end
// after a truncation. p.mu must be held.
func (p *Partition) rebuildProducersLocked() error {
	s, err := p.rebuildProducers(p.log.LogEndOffset())
	if err != nil {
		return fmt.Errorf("broker: %s-%d: rebuild producer state after truncation: %w", p.topic, p.id, err)
	}
	p.mu.producers = s
	p.mu.rolledAt = p.log.ActiveBase()
	p.txnActive.Store(s.Unstable())
	return nil
}

// AppendQuarantined appends batch, which the node wrote from records it
// took out of another partition's batch (a quarantine into this DLQ
// partition), under that partition's lock, and waits until it is in the
// log. inTxn: the batch is part of the source batch's transaction, which
// the coordinator added this partition to.
func (p *Partition) AppendQuarantined(batch []byte, inTxn bool) error {
	h, err := record.ParseHeader(batch)
	if err != nil {
		return err
	}
	txn := txnUnverified
	if inTxn {
		txn = txnBrokerWrite
	}
	_, pending, err := p.appendLocked(batch, h, p.config.Load(), nil, txn)
	if err == nil {
		err = pending.Wait()
	}
	if err != nil {
		return err
	}
	p.traffic.CountIn(len(batch), h.NumRecords) // the DLQ topic counts its records like any topic
	if p.node.Clustered {
		p.AdvanceHighWatermark() // as AppendAsync does for the source
	}
	return nil
}

// Roll closes the partition's active segment and starts a new one, so that
// everything written so far becomes eligible for compaction and retention.
func (p *Partition) Roll() error { return p.log.Roll() }

// Log returns the partition's log, for the node's maintenance of its data
// directory (retention, scrub, checkpoints). Appends and reads go through
// the partition.
func (p *Partition) Log() *partlog.Log { return p.log }

// TopicID returns the partition's topic id.
func (p *Partition) TopicID() TopicID { return p.topicID }
