package txncoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/coordlog"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/txn"
)

// Sweep periods: Kafka's transaction.abort.timed.out.transaction.cleanup
// .interval.ms (10 s) and transactional.id.expiration check (1 h).
const (
	timeoutSweep = 10 * time.Second
	expirySweep  = time.Hour
	markerRetry  = 200 * time.Millisecond
)

// Counters count what a node's transaction coordinators did since it
// started (shared by all of them).
type Counters struct {
	Committed, Aborted, TimedOut atomic.Int64
}

// Config is what a coordinator needs of the node that runs it.
type Config struct {
	// Store is the coordinator's __transaction_state partition.
	Store *coordlog.Store
	// Partition and LeaderEpoch are that partition's index and this
	// node's leader epoch of it (the coordinator epoch markers carry).
	Partition   int32
	LeaderEpoch int32
	// OffsetsPartitions is __consumer_offsets' partition count, which
	// AddOffsetsToTxn's partition follows.
	OffsetsPartitions int32
	MaxTimeout        time.Duration // transaction.max.timeout.ms
	SweepInterval     time.Duration // the timeout sweep, at most timeoutSweep
	Now               func() time.Time
	Logger            *slog.Logger
	Counters          *Counters
	// AllocateProducerID hands out a producer id (InitProducerId).
	AllocateProducerID func() (producer.ID, error)
	// WriteMarker writes one transaction marker to a partition, here or
	// on its leader; nil once written (or needless: a deleted topic).
	WriteMarker func(ctx context.Context, tp txn.Partition, m *txn.Markers) error
	// WriteHook, when set (tests), is called after each durable write of
	// a transaction's end: its __transaction_state records and each marker.
	WriteHook func(what string)
}

// Coordinator is the transaction coordinator of one __transaction_state
// partition this node leads. Its methods are safe for concurrent use.
type Coordinator struct {
	cfg Config
	mu  sync.Mutex // guards c and changed
	c   *txn.Coordinator
	// changed is closed (and replaced) whenever a transition completes:
	// a request refused CONCURRENT_TRANSACTIONS waits on it (see call).
	changed chan struct{}
	close   chan struct{}
	done    sync.WaitGroup
}

// Load replays the partition into a new coordinator, starts its sweeps
// and resumes the markers of every transaction left half-ended.
func Load(cfg Config) (*Coordinator, error) {
	c := &Coordinator{cfg: cfg, close: make(chan struct{}), changed: make(chan struct{})}
	c.c = txn.New(txn.Config{
		MaxTimeoutMs:      int32(cfg.MaxTimeout / time.Millisecond),
		OffsetsPartitions: cfg.OffsetsPartitions,
		Version:           txn.TV2,
		CoordinatorEpoch:  cfg.LeaderEpoch,
		IDs:               txn.IDFunc(cfg.AllocateProducerID),
	})
	var recs []txn.Record
	err := cfg.Store.Replay(func(r coordlog.Record) error {
		recs = append(recs, txn.Record{Key: r.Key, Value: r.Value})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("broker: replay %s-%d: %w", txn.LogTopic, cfg.Partition, err)
	}
	c.mu.Lock()
	resume, err := c.c.Load(recs, cfg.LeaderEpoch, c.now())
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("broker: load %s-%d: %w", txn.LogTopic, cfg.Partition, err)
	}
	for _, m := range resume {
		c.goMarkers(m)
	}
	c.done.Add(1)
	go c.sweep()
	return c, nil
}

// Stop unloads the coordinator: its sweeps and marker writes end.
func (c *Coordinator) Stop() {
	close(c.close)
	c.done.Wait()
}

// stopped reports whether the coordinator was unloaded.
func (c *Coordinator) stopped() bool {
	select {
	case <-c.close:
		return true
	default:
		return false
	}
}

// sweep aborts timed-out transactions and expires idle ids.
func (c *Coordinator) sweep() {
	defer c.done.Done()
	timeouts := time.NewTicker(min(timeoutSweep, c.cfg.SweepInterval))
	defer timeouts.Stop()
	expiry := time.NewTicker(expirySweep)
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
			c.cfg.Counters.TimedOut.Add(int64(len(outs)))
			for range outs {
				c.cfg.Logger.Info("broker: aborting a transaction that outlived its timeout", "partition", c.cfg.Partition)
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

func (c *Coordinator) now() int64 { return c.cfg.Now().UnixMilli() }

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
func (c *Coordinator) call(ctx context.Context, fn func(*txn.Coordinator, int64) txn.Output) txn.Reply {
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
func (c *Coordinator) process(ctx context.Context, out txn.Output) *txn.Reply {
	reply := out.Reply
	for out.Append != nil {
		t := out.Append
		code := c.append(ctx, t.Record())
		if code == txn.CodeNone && c.cfg.WriteHook != nil {
			c.cfg.WriteHook("state " + t.Target.State.String())
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
func (c *Coordinator) append(ctx context.Context, r txn.Record) txn.Code {
	err := c.cfg.Store.Append(ctx, []coordlog.Record{{Key: r.Key, Value: r.Value}})
	switch {
	case err == nil:
		return txn.CodeNone
	case errors.Is(err, partition.ErrNotLeader), errors.Is(err, partition.ErrFencedLeaderEpoch):
		return txn.CodeNotCoordinator
	case errors.Is(err, partition.ErrNotEnoughReplicas), errors.Is(err, partition.ErrNotEnoughReplicasAfterAppend),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return txn.CodeCoordinatorNotAvailable
	}
	c.cfg.Logger.Error("broker: append to "+txn.LogTopic+" failed", "partition", c.cfg.Partition, "err", err)
	return txn.CodeUnknownServerError
}

// goMarkers writes m's markers in the background, then appends its
// Complete transition.
func (c *Coordinator) goMarkers(m *txn.Markers) {
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		c.writeMarkers(m)
	}()
}

func (c *Coordinator) writeMarkers(m *txn.Markers) {
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
				err := c.cfg.WriteMarker(ctx, tp, m)
				if err == nil {
					if c.cfg.WriteHook != nil {
						c.cfg.WriteHook(fmt.Sprintf("marker %s-%d", tp.Topic, tp.Partition))
					}
					return
				}
				c.cfg.Logger.Debug("broker: transaction marker not written yet", "txn", m.TransactionalID, "topic", tp.Topic, "partition", tp.Partition, "err", err)
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
			c.cfg.Counters.Committed.Add(1)
		} else {
			c.cfg.Counters.Aborted.Add(1)
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

// InitProducerID handles InitProducerId with a transactional id.
func (c *Coordinator) InitProducerID(ctx context.Context, req txn.InitRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.InitProducerID(req, now) })
}

// AddPartitions handles AddPartitionsToTxn (and TV2's implicit add).
func (c *Coordinator) AddPartitions(ctx context.Context, req txn.AddRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.AddPartitions(req, now) })
}

// AddOffsets handles AddOffsetsToTxn.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid producer.ID, epoch producer.Epoch, groupID string, v txn.Version) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output {
		return co.AddOffsets(id, pid, epoch, groupID, v, now)
	})
}

// EndTxn handles EndTxn.
func (c *Coordinator) EndTxn(ctx context.Context, req txn.EndRequest) txn.Reply {
	return c.call(ctx, func(co *txn.Coordinator, now int64) txn.Output { return co.EndTxn(req, now) })
}

// Verify is KIP-890 part 1's check for a transactional Produce ≤ v11.
func (c *Coordinator) Verify(id string, pid producer.ID, epoch producer.Epoch, parts []txn.Partition) (txn.Code, map[txn.Partition]txn.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Verify(id, pid, epoch, parts)
}

// Describe is DescribeTransactions for one id.
func (c *Coordinator) Describe(id string) (txn.Metadata, txn.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.Describe(id)
}

// All lists every transactional id this coordinator holds.
func (c *Coordinator) All() []txn.Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.All()
}

// List is ListTransactions over this coordinator's ids.
func (c *Coordinator) List(f txn.ListFilter) ([]txn.Metadata, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c.List(f, c.now())
}
