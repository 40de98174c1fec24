package schemastore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partition/fetcher"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/schemareg"
	"github.com/strandmq/strand/internal/topicconfig"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic is the internal topic holding the schema registry.
const Topic = topicconfig.SchemasTopic

// Node is what the store needs of the node.
type Node interface {
	// Partition returns this node's replica of _schemas, creating the
	// topic first if create is set and it does not exist.
	Partition(create bool) (*partition.Partition, error)
	// Clustered: an id unknown here may be on its way from another node,
	// and a write to a partition led elsewhere goes through ProduceRemote.
	Clustered() bool
	ProduceRemote(leader partition.NodeID, p *partition.Partition, batch []byte) (record.Offset, error)
	Now() time.Time
	Logger() *slog.Logger
}

// Store is schemareg.Store over _schemas; safe for concurrent use.
type Store struct {
	node Node
	stop <-chan struct{}

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

// New returns the store of a node; it stops waiting when stop closes.
func New(node Node, stop <-chan struct{}) *Store {
	s := &Store{node: node, stop: stop}
	s.mu.state = schemareg.NewState()
	s.mu.read = make(chan struct{})
	return s
}

// View implements schemareg.Store.
func (s *Store) View(fn func(*schemareg.State)) {
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
func (s *Store) Compiled(id int) (*schemareg.Compiled, error) {
	c, err := s.compiledNow(id)
	if !errors.Is(err, schemareg.ErrUnknownID) || !s.node.Clustered() {
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

func (s *Store) compiledNow(id int) (*schemareg.Compiled, error) {
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
func (s *Store) Write(ctx context.Context, r schemareg.Record) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, schemasWriteTimeout)
		defer cancel()
	}
	key, value, err := r.Encode()
	if err != nil {
		return fmt.Errorf("broker: encode %s record: %w", Topic, err)
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
		if p, err := s.node.Partition(false); err == nil {
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
func (s *Store) append(ctx context.Context, key, value []byte) (record.Offset, error) {
	for {
		at, err := s.appendOnce(ctx, key, value)
		if err == nil || !retriableSchemaWrite(err) {
			return at, err
		}
		select {
		case <-ctx.Done():
			return at, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-s.stop:
			return at, err
		case <-time.After(schemasRetry):
		}
	}
}

// retriableSchemaWrite: the partition is not ready here or at its leader.
func retriableSchemaWrite(err error) bool {
	var ke *kerr.Error
	return errors.Is(err, partition.ErrNotLeader) || errors.Is(err, partition.ErrUnknownTopicOrPartition) ||
		errors.Is(err, partition.ErrNotEnoughReplicas) || errors.As(err, &ke) && ke.Retriable
}

func (s *Store) appendOnce(ctx context.Context, key, value []byte) (record.Offset, error) {
	p, err := s.node.Partition(true)
	if err != nil {
		return 0, err
	}
	batch, err := record.Encode(0, []record.Record{{Key: key, Value: value, Timestamp: s.node.Now().UnixMilli()}}, record.DefaultBatchOptions())
	if err != nil {
		return 0, fmt.Errorf("broker: encode %s batch: %w", Topic, err)
	}
	leader := p.Leader()
	if lerr := p.CheckLeader(); lerr == nil || !s.node.Clustered() || leader < 0 {
		res, err := p.Append(ctx, batch, partition.AcksAll)
		if err != nil {
			return 0, fmt.Errorf("broker: write %s: %w", Topic, err)
		}
		return res.BaseOffset, nil
	}
	at, err := s.node.ProduceRemote(leader, p, batch)
	if err != nil {
		return 0, fmt.Errorf("broker: write %s: %w", Topic, err)
	}
	for c := s.committed.Load(); c < int64(at)+1 && !s.committed.CompareAndSwap(c, int64(at)+1); c = s.committed.Load() {
	}
	return at, nil
}

// schemasSyncWait bounds how long Sync waits for the high watermark.
const schemasSyncWait = time.Second

// Sync implements schemareg.Syncer: it waits (a little) until the state
// has read everything this replica holds, so a write is decided on it.
func (s *Store) Sync(ctx context.Context) {
	p, err := s.node.Partition(false)
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
func (s *Store) waitRead(ctx context.Context, at record.Offset) error {
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
			return fmt.Errorf("broker: %s record at %d not read back: %w", Topic, at, ctx.Err())
		case <-s.stop:
			return fmt.Errorf("%w: broker closing", partition.ErrNotLeader)
		}
	}
}

// schemasReadChunk is how many bytes the tail reads at once.
const schemasReadChunk = 1 << 20

// ReadFrom applies p's records from the store's position up to the high
// watermark (a follower's replica too: it reads its local log) and reports
// how many it applied.
func (s *Store) ReadFrom(p *partition.Partition) (int, error) {
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
			return n, fmt.Errorf("broker: read %s at %d: %w", Topic, from, err)
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
func (s *Store) applyBatches(raw []byte, from record.Offset) (int, record.Offset, error) {
	var recs []record.Record
	next := from
	sc := record.Batches(raw)
	for sc.Next() {
		h := sc.Header()
		if !h.IsControl() {
			batch, err := record.Decode(sc.Batch())
			if err != nil {
				return 0, next, fmt.Errorf("broker: %s at %d: %w", Topic, h.BaseOffset, err)
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
		return 0, next, fmt.Errorf("broker: %s: %w", Topic, err)
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
			s.node.Logger().Warn("broker: skipping a record of "+Topic, "offset", r.Offset, "err", err)
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
