package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strandmq/strand/internal/partition/fetcher"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg"
)

// This file is the schema registry's storage: the internal topic _schemas
// and the schemareg.Store over it (issue 17).
//
// One compacted partition holds the registry's records, as Confluent's and
// Redpanda's registries keep theirs. Every node that has a replica tails
// it from its start up to the high watermark and folds each record into a
// schemareg.State, so every node serves the same schemas, in the same
// order. A write produces one record with acks=all (to the partition's
// leader, through the internal listener when that is another node) and
// returns once this node has read it back: the registry's state is never
// ahead of the log.
//
// Two nodes may decide a write on the same state at once (both give the
// next id to different schemas). Each record's key carries the offset its
// writer planned it for (schemareg.Key.Seq); a record read at another
// offset lost the race and is ignored by every reader, and its writer
// decides again (schemareg.ErrConflict). The alternative, forwarding every
// write to one elected registry leader as Confluent does, needs each
// node's registry address and a leader election; the log already orders
// writes, so the offset check is enough.
//
// Clients cannot produce to _schemas (it is internal: INVALID_TOPIC_EXCEPTION,
// as for __consumer_offsets), nor delete it or its records; only the
// registry writes there, through Partition.Append or another node's
// internal listener. They can read it (consume, as Confluent's tools do).

// SchemasTopic is the internal topic holding the schema registry.
const SchemasTopic = "_schemas"

// schemasTopicMaxBatch bounds one registry record (a schema's text).
const schemasTopicMaxBatch = 16 << 20

// schemasTopicSpec is _schemas: one partition, compacted, every config that
// could drop or refuse the registry's records pinned.
func schemasTopicSpec() TopicSpec {
	return TopicSpec{
		Name:       SchemasTopic,
		Partitions: 1,
		Configs: map[string]string{
			ConfigCleanupPolicy:         "compact",
			ConfigRetentionMs:           "-1",
			ConfigRetentionBytes:        "-1",
			ConfigRetentionRecords:      "-1",
			ConfigMinInsyncReplicas:     "1",
			ConfigMaxMessageBytes:       strconv.Itoa(schemasTopicMaxBatch),
			ConfigValidation:            "none",
			ConfigValidationKeyRequired: "false",
		},
	}
}

// SchemaStore is schemareg.Store over _schemas; safe for concurrent use.
type SchemaStore struct {
	b *Broker

	mu struct {
		sync.RWMutex
		state *schemareg.State
		// read is closed and replaced each time the state advances.
		read chan struct{}
		// bad counts records that did not decode (skipped, logged).
		bad int
	}
	// compiled caches schemas by id; cleared whenever a record applies
	// (writes are rare; lookups are per produced record).
	compiled sync.Map // int → *schemareg.Compiled
	// waitedFor: ids Compiled waited for (→ when), so a producer of
	// unknown ids costs one wait per id and second, not one per record.
	waitedFor sync.Map
	waits     atomic.Int64
	// committed is an offset below which _schemas is known committed
	// although this replica's high watermark may not say so yet: a write
	// this node produced to the leader was acknowledged with acks=all. A
	// follower learns the high watermark one replica fetch later (up to
	// replicaFetchWait); its log already holds the records, fetched from
	// the leader, so the tail may read them up to here.
	committed atomic.Int64
	// generation counts applied reads, so a schema compiled on an older
	// state is not cached after a newer one cleared the cache.
	generation atomic.Int64
}

func newSchemaStore(b *Broker) *SchemaStore {
	s := &SchemaStore{b: b}
	s.mu.state = schemareg.NewState()
	s.mu.read = make(chan struct{})
	return s
}

// Schemas returns the schema registry's store.
func (b *Broker) Schemas() *SchemaStore { return b.schemas }

// View implements schemareg.Store.
func (s *SchemaStore) View(fn func(*schemareg.State)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.mu.state)
}

// Compiled returns the live schema with id, compiled, from a cache.
//
// In a cluster an id unknown here may be one just registered on another
// node whose record this replica has not fetched yet (a producer that
// registers and produces at once): Compiled then waits, once per id and
// second, up to unknownIDWait for this replica to read on, and looks
// again.
func (s *SchemaStore) Compiled(id int) (*schemareg.Compiled, error) {
	c, err := s.compiledNow(id)
	if !errors.Is(err, schemareg.ErrUnknownID) || !s.b.clustered() {
		return c, err
	}
	now := time.Now()
	if last, ok := s.waitedFor.Load(id); ok && now.Sub(last.(time.Time)) < time.Second {
		return c, err
	}
	if s.waits.Add(1)%maxWaitedFor == 0 {
		s.waitedFor.Clear() // a producer of random ids must not grow it forever
	}
	s.waitedFor.Store(id, now)
	s.mu.RLock()
	pos := s.mu.state.Position()
	s.mu.RUnlock()
	ctx, cancel := context.WithTimeout(context.Background(), unknownIDWait)
	defer cancel()
	if s.waitRead(ctx, record.Offset(pos)) != nil {
		return c, err
	}
	return s.compiledNow(id)
}

// unknownIDWait bounds how long a produce waits for an unknown schema id
// to arrive from another node. A follower of _schemas has the record one
// replica fetch after it is written, but reads it only once its high
// watermark says it is committed: one more fetch, which the leader may
// hold for fetcher.FetchWait when nothing else is new.
const unknownIDWait = fetcher.FetchWait + 250*time.Millisecond

// maxWaitedFor bounds waitedFor.
const maxWaitedFor = 4096

func (s *SchemaStore) compiledNow(id int) (*schemareg.Compiled, error) {
	if c, ok := s.compiled.Load(id); ok {
		return c.(*schemareg.Compiled), nil
	}
	var c *schemareg.Compiled
	var err error
	gen := s.generation.Load()
	s.View(func(st *schemareg.State) { c, err = st.Compile(id) })
	if err != nil {
		return nil, err
	}
	if s.generation.Load() == gen {
		s.compiled.Store(id, c)
	}
	return c, nil
}

// schemasWriteTimeout bounds a write with a context without deadline.
const schemasWriteTimeout = 30 * time.Second

// Write implements schemareg.Store: r is produced to _schemas with
// acks=all and Write returns once this node has read it back.
func (s *SchemaStore) Write(ctx context.Context, r schemareg.Record) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, schemasWriteTimeout)
		defer cancel()
	}
	key, value, err := r.Encode()
	if err != nil {
		return fmt.Errorf("broker: encode %s record: %w", SchemasTopic, err)
	}
	at, err := s.append(ctx, key, value)
	if err != nil {
		return err
	}
	if err := s.waitRead(ctx, at); err != nil {
		return err
	}
	if r.Key.Seq != nil && *r.Key.Seq != int64(at) {
		// Lost to another node's write: decide again on a state that
		// has read what is committed by now, not only up to our record,
		// or a busy writer elsewhere keeps winning.
		if p, err := s.b.schemasPartition(false); err == nil {
			_ = s.waitRead(ctx, max(at, p.Log().HighWatermark()-1))
		}
		return fmt.Errorf("%w: planned for offset %d, written at %d", schemareg.ErrConflict, *r.Key.Seq, at)
	}
	return nil
}

// schemasRetry is how long a write waits before trying again while
// _schemas has no leader or no replica here yet (just created, or in a
// leader election).
const schemasRetry = 50 * time.Millisecond

// append produces one record to _schemas with acks=all and returns its
// offset, retrying until ctx ends while the partition is not ready. A
// retry after a lost answer may write the record twice: the second copy
// lands at another offset than its Seq and is ignored.
func (s *SchemaStore) append(ctx context.Context, key, value []byte) (record.Offset, error) {
	for {
		at, err := s.appendOnce(ctx, key, value)
		if err == nil || !retriableSchemaWrite(err) {
			return at, err
		}
		select {
		case <-ctx.Done():
			return at, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-s.b.stop:
			return at, err
		case <-time.After(schemasRetry):
		}
	}
}

// retriableSchemaWrite: the partition is not ready here or at its leader.
func retriableSchemaWrite(err error) bool {
	var ke *kerr.Error
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrUnknownTopicOrPartition) ||
		errors.Is(err, ErrNotEnoughReplicas) || errors.As(err, &ke) && ke.Retriable
}

func (s *SchemaStore) appendOnce(ctx context.Context, key, value []byte) (record.Offset, error) {
	p, err := s.b.schemasPartition(true)
	if err != nil {
		return 0, err
	}
	batch, err := record.Encode(0, []record.Record{{Key: key, Value: value, Timestamp: s.b.cfg.Now().UnixMilli()}}, record.DefaultBatchOptions())
	if err != nil {
		return 0, fmt.Errorf("broker: encode %s batch: %w", SchemasTopic, err)
	}
	leader := p.Leader()
	if lerr := p.CheckLeader(); lerr == nil || !s.b.clustered() || leader < 0 {
		res, err := p.Append(ctx, batch, AcksAll)
		if err != nil {
			return 0, fmt.Errorf("broker: write %s: %w", SchemasTopic, err)
		}
		return res.BaseOffset, nil
	}
	at, err := s.b.produceRemote(leader, p, batch)
	if err != nil {
		return 0, fmt.Errorf("broker: write %s: %w", SchemasTopic, err)
	}
	for c := s.committed.Load(); c < int64(at)+1 && !s.committed.CompareAndSwap(c, int64(at)+1); c = s.committed.Load() {
	}
	return at, nil
}

// schemasSyncWait bounds how long Sync waits for the high watermark.
const schemasSyncWait = time.Second

// Sync implements schemareg.Syncer: it waits (a little) until the state
// has read everything this replica holds, so a write is decided on it.
func (s *SchemaStore) Sync(ctx context.Context) {
	p, err := s.b.schemasPartition(false)
	if err != nil {
		return
	}
	end := p.Log().LogEndOffset()
	if end == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, schemasSyncWait)
	defer cancel()
	_ = s.waitRead(ctx, end-1)
}

// waitRead waits until the tail has read offset at.
func (s *SchemaStore) waitRead(ctx context.Context, at record.Offset) error {
	for {
		s.mu.RLock()
		pos, read := s.mu.state.Position(), s.mu.read
		s.mu.RUnlock()
		if pos > int64(at) {
			return nil
		}
		select {
		case <-read:
		case <-ctx.Done():
			return fmt.Errorf("broker: %s record at %d not read back: %w", SchemasTopic, at, ctx.Err())
		case <-s.b.stop:
			return fmt.Errorf("%w: broker closing", ErrNotLeader)
		}
	}
}

// schemasPartition returns this node's replica of _schemas, creating the
// topic if create is set and it does not exist.
func (b *Broker) schemasPartition(create bool) (*Partition, error) {
	t, err := b.Topic(SchemasTopic)
	if errors.Is(err, ErrUnknownTopicOrPartition) && create {
		spec := schemasTopicSpec()
		if b.clustered() {
			// Every live node gets a replica, so every node serves the
			// registry from its own copy.
			spec.ReplicationFactor = int16(max(1, len(liveBrokers(b.meta.Image()))))
		}
		if t, err = b.CreateTopic(spec); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(SchemasTopic)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("broker: %s: %w", SchemasTopic, err)
	}
	return t.Partition(0)
}

// openSchemas reads _schemas, if it exists here, before the broker
// serves. The topic is created by the registry's first write (a broker
// whose registry is never used has no _schemas, as it has no
// __consumer_offsets on a cluster before the first group); a cluster
// member reads its replica in the background as it appears.
func (b *Broker) openSchemas() error {
	p, err := b.schemasPartition(false)
	if err != nil {
		return nil
	}
	_, err = b.schemas.readFrom(p)
	return err
}

// tailSchemas reads new _schemas records as they commit, until Close.
func (b *Broker) tailSchemas() {
	defer b.wg.Done()
	wake := make(chan struct{}, 1)
	var watched *Partition
	defer func() {
		if watched != nil {
			watched.StopNotify(wake)
		}
	}()
	// The partition may appear, move or be replaced (a cluster member
	// gaining its replica): look again every second even without news.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		p, err := b.schemasPartition(false)
		if watched != nil {
			watched.StopNotify(wake)
			watched = nil
		}
		if err == nil {
			// One notification per registration: register before
			// reading, so an advance during the read is not missed.
			watched = p
			p.NotifyHighWatermark(wake)
			p.NotifyEnd(wake) // a remote write's record arrives before its high watermark
			if _, err := b.schemas.readFrom(p); err != nil && !b.isClosed() {
				b.logger.Warn("broker: reading the schema registry", "topic", SchemasTopic, "err", err)
			}
		}
		select {
		case <-b.stop:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// schemasReadChunk is how many bytes the tail reads at once.
const schemasReadChunk = 1 << 20

// readFrom applies p's records from the store's position up to the high
// watermark (a follower's replica too: it reads its local log) and reports
// how many it applied.
func (s *SchemaStore) readFrom(p *Partition) (int, error) {
	n := 0
	for {
		s.mu.RLock()
		from := record.Offset(s.mu.state.Position())
		s.mu.RUnlock()
		hw := p.Log().HighWatermark()
		if c := record.Offset(s.committed.Load()); c > hw {
			hw = min(c, p.Log().LogEndOffset())
		}
		if from >= hw {
			return n, nil
		}
		from = max(from, p.Log().LogStartOffset())
		raw, err := p.Log().ReadInto(nil, from, schemasReadChunk, hw)
		if err != nil {
			return n, fmt.Errorf("broker: read %s at %d: %w", SchemasTopic, from, err)
		}
		if len(raw) == 0 {
			return n, nil
		}
		applied, next, err := s.applyBatches(raw, from)
		n += applied
		if err != nil {
			return n, err
		}
		if next <= from {
			return n, nil
		}
	}
}

// applyBatches folds the records of raw at or after from into the state,
// and returns how many it applied and the offset after the last batch.
func (s *SchemaStore) applyBatches(raw []byte, from record.Offset) (int, record.Offset, error) {
	var recs []record.Record
	next := from
	sc := record.Batches(raw)
	for sc.Next() {
		h := sc.Header()
		if !h.IsControl() {
			batch, err := record.Decode(sc.Batch())
			if err != nil {
				return 0, next, fmt.Errorf("broker: %s at %d: %w", SchemasTopic, h.BaseOffset, err)
			}
			for _, r := range batch.Records {
				if r.Offset >= from {
					recs = append(recs, r)
				}
			}
		}
		next = max(next, h.NextOffset())
	}
	if err := sc.Err(); err != nil {
		return 0, next, fmt.Errorf("broker: %s: %w", SchemasTopic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	applied := 0
	for _, r := range recs {
		rec, err := schemareg.DecodeRecord(r.Key, r.Value)
		if err != nil {
			// Someone else's record (another registry's NOOP variant, a
			// newer key type): skip it rather than stop serving.
			s.mu.bad++
			s.b.logger.Warn("broker: skipping a record of "+SchemasTopic, "offset", r.Offset, "err", err)
			s.mu.state.Advance(int64(r.Offset) + 1)
			continue
		}
		if s.mu.state.ApplyAt(rec, int64(r.Offset)) {
			applied++
		}
	}
	s.mu.state.Advance(int64(next))
	s.generation.Add(1)
	s.compiled.Clear()
	close(s.mu.read)
	s.mu.read = make(chan struct{})
	return applied, next, nil
}
