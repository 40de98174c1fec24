package txn

import (
	"cmp"
	"errors"
	"slices"
	"unicode/utf16"

	"github.com/strandmq/strand/internal/producer"
)

// Defaults of Kafka's TransactionStateManagerConfig and group coordinator.
const (
	DefaultMaxTimeoutMs      int32 = 900_000                 // transaction.max.timeout.ms
	DefaultExpirationMs      int64 = 7 * 24 * 60 * 60 * 1000 // transactional.id.expiration.ms
	DefaultOffsetsPartitions int32 = 50                      // offsets.topic.num.partitions
	DefaultLogPartitions     int32 = 50                      // transaction.state.log.num.partitions
	OffsetsTopic                   = "__consumer_offsets"    // AddOffsetsToTxn's partition lives here
	LogTopic                       = "__transaction_state"   // the coordinator's log
)

// Config is a coordinator's fixed settings.
type Config struct {
	MaxTimeoutMs      int32 // transaction.max.timeout.ms; 0 = DefaultMaxTimeoutMs
	ExpirationMs      int64 // transactional.id.expiration.ms; 0 = DefaultExpirationMs
	OffsetsPartitions int32 // __consumer_offsets partitions; 0 = DefaultOffsetsPartitions
	// Version is the finalized transaction.version of the cluster. It picks
	// the value version written (ValueVersionFor) and the rules for aborts
	// the coordinator starts itself (timeouts, fencing), as Kafka uses
	// the server's level where no client asked.
	Version Version
	// CoordinatorEpoch is the leader epoch of this coordinator's
	// __transaction_state partition; markers carry it.
	CoordinatorEpoch int32
	IDs              IDSource
}

// Coordinator is the transaction coordinator of one __transaction_state
// partition: a map from transactional id to Metadata plus at most one
// pending transition per id. It is not safe for concurrent use; the broker
// drives it from one goroutine (or under one lock) and performs the effects
// each call returns.
type Coordinator struct {
	cfg  Config
	txns map[string]*entry
}

type entry struct {
	md      Metadata
	pending *Transit // the transition whose record is being appended
	// failedFence is Kafka's hasFailedEpochFence: a fencing abort bumped the
	// epoch in memory but its record was not written; the next fence does
	// not bump again.
	failedFence bool
}

// New returns a coordinator with no transactional ids (Load fills it).
func New(cfg Config) *Coordinator {
	if cfg.MaxTimeoutMs == 0 {
		cfg.MaxTimeoutMs = DefaultMaxTimeoutMs
	}
	if cfg.ExpirationMs == 0 {
		cfg.ExpirationMs = DefaultExpirationMs
	}
	if cfg.OffsetsPartitions == 0 {
		cfg.OffsetsPartitions = DefaultOffsetsPartitions
	}
	return &Coordinator{cfg: cfg, txns: make(map[string]*entry)}
}

// after says what a successful append of a Transit answers or starts.
type after int8

const (
	afterInit     after = iota // reply NONE with the new pid/epoch
	afterAdd                   // reply NONE
	afterFence                 // PrepareAbort of a fencing InitProducerId: reply CONCURRENT_TRANSACTIONS, write markers
	afterEnd                   // PrepareX of EndTxn: reply NONE with the next pid/epoch, write markers
	afterTimeout               // PrepareAbort of a timed-out txn: write markers, nobody to answer
	afterComplete              // CompleteX: done
	afterExpire                // tombstone: forget the id
)

// Transit is a prepared transition (Kafka's TxnTransitMetadata): the state
// the id will have once Key/Value are durably appended to
// __transaction_state. The caller appends the record and reports the result
// with Appended; until then the id refuses other transitions with
// CONCURRENT_TRANSACTIONS.
type Transit struct {
	Target Metadata // the metadata after the transition (State Dead for expiry)
	Key    []byte
	Value  []byte // nil: a tombstone (expiry)
	then   after
	fresh  bool // the id was created by this InitProducerId and is not yet in the log
	fence  bool // a fencing abort that bumped the epoch in memory before its append
}

// Reply is the answer to a client request.
type Reply struct {
	Code       Code
	ProducerID producer.ID
	Epoch      producer.Epoch
}

// Markers asks the caller to write one control batch per partition
// (WriteTxnMarkers), all with the same pid, epoch and coordinator epoch.
// When every partition has it (at once when there are none: a TV2 empty
// abort), the caller appends Complete and reports it with Appended. Markers
// may be written twice: Kafka resends them after a coordinator move, and a
// partition with no open transaction for the producer only records the
// marker; Load asks for them again for every PrepareX.
type Markers struct {
	TransactionalID  string
	ProducerID       producer.ID
	Epoch            producer.Epoch
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []Partition
	Complete         *Transit
}

// Output is what the caller must do after a call: answer Reply (if any),
// append Append (if any) and then call Appended, write Markers (if any).
// A call returns at most one of Append and Markers.
type Output struct {
	Reply   *Reply
	Append  *Transit
	Markers *Markers
}

func replyCode(c Code) Output {
	return Output{Reply: &Reply{Code: c, ProducerID: producer.NoID, Epoch: NoEpoch}}
}

// Get returns a copy of an id's current (durable) metadata.
func (c *Coordinator) Get(transactionalID string) (Metadata, bool) {
	e, ok := c.txns[transactionalID]
	if !ok {
		return Metadata{}, false
	}
	return e.md.clone(), true
}

// All returns every id's metadata, ordered by transactional id.
func (c *Coordinator) All() []Metadata {
	out := make([]Metadata, 0, len(c.txns))
	for _, e := range c.txns {
		out = append(out, e.md.clone())
	}
	slices.SortFunc(out, func(a, b Metadata) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	return out
}

// Pending reports whether the id has a transition awaiting its append.
func (c *Coordinator) Pending(transactionalID string) bool {
	e, ok := c.txns[transactionalID]
	return ok && e.pending != nil
}

// Describe is DescribeTransactions for one id.
func (c *Coordinator) Describe(transactionalID string) (Metadata, Code) {
	if transactionalID == "" {
		return Metadata{}, CodeInvalidRequest
	}
	e, ok := c.txns[transactionalID]
	if !ok || e.md.State == Dead {
		return Metadata{}, CodeTransactionalIDNotFound
	}
	return e.md.clone(), CodeNone
}

// prepare records t as e's pending transition and returns it for appending.
func (c *Coordinator) prepare(e *entry, t *Transit) Output {
	if e.pending != nil {
		panic("txn: prepare with a transition already pending for " + e.md.TransactionalID)
	}
	if !CanTransition(e.md.State, t.Target.State) {
		panic("txn: illegal transition " + e.md.State.String() + " → " + t.Target.State.String() + " for " + e.md.TransactionalID)
	}
	t.Key = EncodeKey(t.Target.TransactionalID)
	if t.Target.State != Dead {
		t.Value = EncodeValue(t.Target, ValueVersionFor(c.cfg.Version))
	}
	e.pending = t
	return Output{Append: t}
}

// nextID asks the IDSource for a producer id, mapping a failure to a code.
func (c *Coordinator) nextID() (producer.ID, Code) {
	if c.cfg.IDs == nil {
		return producer.NoID, CodeCoordinatorNotAvailable
	}
	id, err := c.cfg.IDs.NextProducerID()
	if err != nil {
		if ce := (*CodeError)(nil); errors.As(err, &ce) {
			return producer.NoID, ce.Code
		}
		return producer.NoID, CodeCoordinatorNotAvailable
	}
	return id, CodeNone
}

// Appended reports the result of appending t: CodeNone when the record is
// durable (replicated to min.insync.replicas), else the code to answer
// (the caller maps a log error as Kafka's appendTransactionToLog does:
// NOT_LEADER → NOT_COORDINATOR, not-enough-replicas and timeouts →
// COORDINATOR_NOT_AVAILABLE, others → UNKNOWN_SERVER_ERROR). Only on
// success does the id's state change.
func (c *Coordinator) Appended(t *Transit, result Code, nowMs int64) Output {
	e, ok := c.txns[t.Target.TransactionalID]
	if !ok || e.pending != t {
		// the coordinator was reloaded since (Kafka: coordinator epoch changed)
		if t.wantsReply() {
			return replyCode(CodeNotCoordinator)
		}
		return Output{}
	}
	e.pending = nil
	if result != CodeNone {
		switch {
		case t.fresh:
			delete(c.txns, t.Target.TransactionalID)
		case t.fence:
			e.failedFence = true
		}
		if t.wantsReply() {
			return replyCode(result)
		}
		return Output{}
	}
	if t.then == afterExpire {
		delete(c.txns, t.Target.TransactionalID)
		return Output{}
	}
	e.md = t.Target.clone()
	switch t.then {
	case afterInit:
		return Output{Reply: &Reply{Code: CodeNone, ProducerID: e.md.ProducerID, Epoch: e.md.Epoch}}
	case afterAdd:
		return Output{Reply: &Reply{Code: CodeNone, ProducerID: producer.NoID, Epoch: NoEpoch}}
	case afterFence, afterEnd, afterTimeout:
		m := c.markers(e, nowMs)
		out := Output{Markers: m}
		switch t.then {
		case afterFence:
			out.Reply = &Reply{Code: CodeConcurrentTransactions, ProducerID: producer.NoID, Epoch: NoEpoch}
		case afterEnd:
			out.Reply = &Reply{Code: CodeNone, ProducerID: m.Complete.Target.ProducerID, Epoch: m.Complete.Target.Epoch}
		}
		return out
	}
	return Output{}
}

func (t *Transit) wantsReply() bool {
	return t.then == afterInit || t.then == afterAdd || t.then == afterFence || t.then == afterEnd
}

// markers prepares the CompleteX transition of a PrepareX id (Kafka's
// prepareComplete) and returns the markers to write before appending it.
func (c *Coordinator) markers(e *entry, nowMs int64) *Markers {
	md := e.md
	e.failedFence = false
	target := md.clone()
	target.State = CompleteAbort
	if md.State == PrepareCommit {
		target.State = CompleteCommit
	}
	target.Partitions = nil
	target.LastUpdateMs = nowMs
	if md.Client.epochBump() {
		target.PreviousProducerID = md.ProducerID
		target.NextProducerID = producer.NoID
		if md.NextProducerID != producer.NoID { // epoch overflow: roll to the next id
			target.ProducerID, target.Epoch = md.NextProducerID, 0
		}
	}
	out := c.prepare(e, &Transit{Target: target, then: afterComplete})
	return &Markers{
		TransactionalID: md.TransactionalID, ProducerID: md.ProducerID, Epoch: md.Epoch,
		Commit: md.State == PrepareCommit, CoordinatorEpoch: c.cfg.CoordinatorEpoch,
		Partitions: slices.Clone(md.Partitions), Complete: out.Append,
	}
}

// Resume returns the markers of an id in PrepareCommit or PrepareAbort with
// nothing pending (after a failed Complete append, or after Load), nil
// otherwise.
func (c *Coordinator) Resume(transactionalID string, nowMs int64) *Markers {
	e, ok := c.txns[transactionalID]
	if !ok || e.pending != nil || !e.md.State.prepared() {
		return nil
	}
	return c.markers(e, nowMs)
}

// PartitionFor is Kafka's partitionFor for groups and transactional ids:
// Utils.abs(id.hashCode()) % n, with Java's UTF-16 String.hashCode.
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}
