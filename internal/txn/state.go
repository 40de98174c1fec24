package txn

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/strandmq/strand/internal/producer"
)

// State is a transactional id's coordinator state. The numeric values are
// the TransactionStatus byte of __transaction_state records (Kafka's
// TransactionState ids), so they must never be renumbered.
type State int8

// Kafka's eight transaction states.
const (
	Empty             State = 0 // no transaction; after InitProducerId or an expiry-safe completion
	Ongoing           State = 1 // partitions (or the offsets partition) added
	PrepareCommit     State = 2 // EndTxn(commit) is durable: the commit point
	PrepareAbort      State = 3 // EndTxn(abort), a timeout, or a fencing InitProducerId is durable
	CompleteCommit    State = 4 // every commit marker written
	CompleteAbort     State = 5 // every abort marker written
	Dead              State = 6 // being expired; never written, a tombstone is
	PrepareEpochFence State = 7 // transient: an ongoing txn being fenced; never written
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name for the state (as DescribeTransactions and
// ListTransactions report it).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the eight states.
func (s State) Valid() bool { return s >= Empty && s <= PrepareEpochFence }

// validPrevious is Kafka's TransactionState.validPreviousStates (4.0): the
// states from which a transition to the key is legal. PrepareAbort from
// Empty and Complete* is the TV2 empty abort (KIP-890).
var validPrevious = map[State][]State{
	Empty:             {Empty, CompleteCommit, CompleteAbort},
	Ongoing:           {Ongoing, Empty, CompleteCommit, CompleteAbort},
	PrepareCommit:     {Ongoing},
	PrepareAbort:      {Ongoing, PrepareEpochFence, Empty, CompleteCommit, CompleteAbort},
	CompleteCommit:    {PrepareCommit},
	CompleteAbort:     {PrepareAbort},
	Dead:              {Empty, CompleteAbort, CompleteCommit},
	PrepareEpochFence: {Ongoing},
}

// CanTransition reports whether Kafka allows from → to.
func CanTransition(from, to State) bool { return slices.Contains(validPrevious[to], from) }

// expirable is Kafka's isExpirationAllowed: an id idle in one of these
// states for transactional.id.expiration.ms is removed.
func (s State) expirable() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }

// prepared reports a state whose markers are (to be) in flight.
func (s State) prepared() bool { return s == PrepareCommit || s == PrepareAbort }

// Version is a transaction protocol version (Kafka's transaction.version
// feature level, and the version a client used for a request).
type Version int16

// The transaction versions. As a client's version TV0 and TV1 behave alike
// (Kafka maps requests to TV0 or TV2); as the cluster's, TV1 makes the
// coordinator write flexible values (value version 1). TV2 is KIP-890 part
// 2: an epoch bump per transaction and implicit partition adds.
const (
	TV0 Version = 0
	TV1 Version = 1
	TV2 Version = 2
)

func (v Version) epochBump() bool { return v >= TV2 }

// NoEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const NoEpoch producer.Epoch = -1

// maxEpoch is Short.MaxValue: an epoch the coordinator keeps for itself so
// it can always fence.
const maxEpoch producer.Epoch = 32767

// exhausted is Kafka's isEpochExhausted: a client is never handed
// Short.MaxValue, so at MaxValue-1 the next bump must roll the producer id.
func exhausted(e producer.Epoch) bool { return e >= maxEpoch-1 }

// Partition names one topic partition in a transaction.
type Partition struct {
	Topic     string
	Partition int32
}

func comparePartitions(a, b Partition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// union returns the sorted, de-duplicated union of a and b (a new slice).
func union(a, b []Partition) []Partition {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, comparePartitions)
	return slices.Compact(out)
}

// subset reports whether every partition of sub is in the sorted set.
func subset(sub, set []Partition) bool {
	for _, p := range sub {
		if _, ok := slices.BinarySearchFunc(set, p, comparePartitions); !ok {
			return false
		}
	}
	return true
}

// Metadata is one transactional id's coordinator state (Kafka's
// TransactionMetadata without its lock and pending state). Partitions is
// kept sorted.
type Metadata struct {
	TransactionalID    string
	ProducerID         producer.ID
	PreviousProducerID producer.ID // the id before the last rotation or completion (TV2), else NoID
	NextProducerID     producer.ID // TV2: the id a completing overflowed txn switches to, else NoID
	Epoch              producer.Epoch
	// LastEpoch is the epoch before the last bump, used to accept a retried
	// InitProducerId (KIP-360) and TV2 EndTxn. It is not in the log: after a
	// load it is NoEpoch, as in Kafka.
	LastEpoch    producer.Epoch
	TimeoutMs    int32
	State        State
	Partitions   []Partition
	StartMs      int64 // first add of the current transaction; -1 when none
	LastUpdateMs int64
	Client       Version // the transaction version of the request that made this state
}

func (m Metadata) clone() Metadata {
	m.Partitions = slices.Clone(m.Partitions)
	return m
}

// String renders m for test failures and logs.
func (m Metadata) String() string {
	return fmt.Sprintf("%s{pid %d prev %d next %d epoch %d last %d timeout %d %s %v start %d update %d tv%d}",
		m.TransactionalID, m.ProducerID, m.PreviousProducerID, m.NextProducerID, m.Epoch, m.LastEpoch,
		m.TimeoutMs, m.State, m.Partitions, m.StartMs, m.LastUpdateMs, m.Client)
}
