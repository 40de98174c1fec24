package producer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strandmq/strand/internal/record"
)

// ID is a producer id (Kafka's int64 producer id). NoID marks a batch written
// without idempotence.
type ID int64

// Epoch is a producer epoch (not a leader epoch).
type Epoch int16

// NoID is Kafka's -1 producer id.
const NoID ID = -1

// CachedBatches is how many batches per producer and partition are kept for
// duplicate detection: Kafka's max.in.flight.requests.per.connection bound
// for idempotent producers.
const CachedBatches = 5

// Errors Check returns. They map to the Kafka error codes of the same name.
var (
	// ErrOutOfOrderSequence means a batch's first sequence does not follow
	// the last one written by the same producer and epoch.
	ErrOutOfOrderSequence = errors.New("producer: out of order sequence number")
	// ErrInvalidProducerEpoch means the batch carries an epoch older than the
	// producer's current one: a zombie producer that has been fenced.
	ErrInvalidProducerEpoch = errors.New("producer: invalid producer epoch")
)

// Batch is what State remembers of an accepted batch.
type Batch struct {
	FirstSeq   int32         `json:"firstSeq"`
	LastSeq    int32         `json:"lastSeq"`
	BaseOffset record.Offset `json:"baseOffset"`
	LastOffset record.Offset `json:"lastOffset"`
	// Timestamp is the batch's max timestamp, used to expire idle producers.
	Timestamp int64 `json:"timestamp"`
}

type entry struct {
	epoch   Epoch
	batches []Batch // oldest first, at most CachedBatches
}

func (e *entry) last() (Batch, bool) {
	if len(e.batches) == 0 {
		return Batch{}, false
	}
	return e.batches[len(e.batches)-1], true
}

// State is one partition's idempotent-producer state. It is not safe for
// concurrent use; see the package documentation.
type State struct {
	entries map[ID]*entry
	open    map[ID]record.Offset // open transactions' first offsets (txn.go)
	ended   []endedTxn           // ended, marker not yet below the high watermark
	aborted []AbortedTxn         // by marker offset
}

// NewState returns an empty State.
func NewState() *State { return &State{entries: make(map[ID]*entry)} }

// Len returns how many producers the state tracks.
func (s *State) Len() int { return len(s.entries) }

// Check classifies a batch from producer id at epoch covering sequences
// firstSeq..lastSeq. It returns (cached, true, nil) for a duplicate of a
// cached batch, (_, false, nil) for a batch to append, or an error wrapping
// ErrOutOfOrderSequence or ErrInvalidProducerEpoch.
func (s *State) Check(id ID, epoch Epoch, firstSeq, lastSeq int32) (Batch, bool, error) {
	e := s.entries[id]
	if e == nil {
		return Batch{}, false, nil
	}
	switch {
	case epoch < e.epoch:
		return Batch{}, false, fmt.Errorf("%w: producer %d epoch %d, current epoch %d", ErrInvalidProducerEpoch, id, epoch, e.epoch)
	case epoch > e.epoch:
		if firstSeq != 0 {
			return Batch{}, false, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, id, epoch, firstSeq)
		}
		return Batch{}, false, nil
	}
	for _, b := range e.batches {
		if b.FirstSeq == firstSeq && b.LastSeq == lastSeq {
			return b, true, nil
		}
	}
	last, ok := e.last()
	if !ok || inSequence(last.LastSeq, firstSeq) {
		return Batch{}, false, nil
	}
	return Batch{}, false, fmt.Errorf("%w: producer %d epoch %d expected sequence %d, got %d",
		ErrOutOfOrderSequence, id, epoch, nextSeq(last.LastSeq), firstSeq)
}

// Update records that the batch was appended. An epoch newer than the
// producer's current one resets its cached batches.
func (s *State) Update(id ID, epoch Epoch, b Batch) {
	e := s.entries[id]
	if e == nil {
		e = &entry{epoch: epoch}
		s.entries[id] = e
	}
	if epoch != e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	if len(e.batches) == CachedBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:CachedBatches-1]
	}
	e.batches = append(e.batches, b)
}

// Observe replays a batch header read from the log (recovery). Batches
// without a producer id and control batches are ignored: a marker's type is
// in its record, so the caller applies it with EndTxn.
func (s *State) Observe(h record.Header) {
	if ID(h.ProducerID) <= NoID || h.IsControl() {
		return
	}
	if h.IsTransactional() {
		s.BeginTxn(ID(h.ProducerID), h.BaseOffset)
	}
	if h.BaseSequence < 0 { // a broker-written transactional batch (a DLQ's): no sequence
		return
	}
	s.Update(ID(h.ProducerID), Epoch(h.ProducerEpoch), Batch{
		FirstSeq:   h.BaseSequence,
		LastSeq:    h.LastSequence(),
		BaseOffset: h.BaseOffset,
		LastOffset: h.LastOffset(),
		Timestamp:  h.MaxTimestamp,
	})
}

// Expire forgets producers whose newest batch has a timestamp before
// deadline (Kafka's producer.id.expiration.ms). A later batch from such a
// producer is accepted at any sequence, as for an unknown producer. A
// producer with an open transaction is kept: its marker must find it.
func (s *State) Expire(deadline int64) int {
	n := 0
	for id, e := range s.entries {
		if _, open := s.open[id]; open {
			continue
		}
		if last, ok := e.last(); !ok || last.Timestamp < deadline {
			delete(s.entries, id)
			n++
		}
	}
	return n
}

// Epoch returns the producer's current epoch, if it is known.
func (s *State) Epoch(id ID) (Epoch, bool) {
	e := s.entries[id]
	if e == nil {
		return 0, false
	}
	return e.epoch, true
}

func nextSeq(last int32) int32 {
	if last == math.MaxInt32 {
		return 0
	}
	return last + 1
}

func inSequence(last, first int32) bool { return first == nextSeq(last) }

// Active is one producer known to a partition, as DescribeProducers
// reports it.
type Active struct {
	ID    ID
	Epoch Epoch
	Last  Batch // its newest batch
	// TxnFirst is the first offset of its open transaction, or -1.
	TxnFirst record.Offset
}

// Active lists the producers with at least one batch, by id.
func (s *State) Active() []Active {
	out := make([]Active, 0, len(s.entries))
	for id, e := range s.entries {
		if last, ok := e.last(); ok {
			first, ok := s.open[id]
			if !ok {
				first = record.NoOffset
			}
			out = append(out, Active{ID: id, Epoch: e.epoch, Last: last, TxnFirst: first})
		}
	}
	slices.SortFunc(out, func(a, b Active) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
