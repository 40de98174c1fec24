package producer

import (
	"slices"
	"sort"

	"github.com/strandmq/strand/internal/record"
)

// Transactions, partition side (KIP-98). A producer's transaction is open on
// a partition from its first transactional batch there until the control
// batch (marker) that ends it. The state keeps what a read_committed reader
// needs:
//
//   - the open transactions' first offsets, which bound the last stable
//     offset (LSO): no reader may pass the first offset of a transaction
//     whose outcome is unknown;
//   - ended transactions whose marker is not yet below the high watermark:
//     a new leader might not have the marker, so until it is committed the
//     transaction still bounds the LSO (Kafka's unreplicated transactions);
//   - the aborted transactions, (producer, first offset, marker offset),
//     which a read_committed Fetch returns so the client drops their
//     records. They are kept until the log start passes their marker.

// AbortedTxn is one aborted transaction of a partition (Kafka's AbortedTxn
// index entry).
type AbortedTxn struct {
	ProducerID  ID            `json:"pid"`
	FirstOffset record.Offset `json:"first"`
	// LastOffset is the offset of the abort marker.
	LastOffset record.Offset `json:"last"`
}

type endedTxn struct {
	first, marker record.Offset
}

func (s *State) txnInit() {
	if s.open == nil {
		s.open = make(map[ID]record.Offset)
	}
}

// BeginTxn records that producer id's transaction has data at offset
// first, unless one is open already (then its first offset stands).
func (s *State) BeginTxn(id ID, first record.Offset) {
	s.txnInit()
	if _, ok := s.open[id]; !ok {
		s.open[id] = first
	}
}

// OpenTxn returns the first offset of producer id's open transaction.
func (s *State) OpenTxn(id ID) (record.Offset, bool) {
	first, ok := s.open[id]
	return first, ok
}

// InTxnAt reports whether producer id has an open transaction begun at
// epoch: a transactional batch at that epoch belongs to it. (Under
// transaction.version 2 every transaction has its own epoch, so a batch at
// a newer one is the next transaction, whose partition the coordinator must
// add after this one's marker.)
func (s *State) InTxnAt(id ID, epoch Epoch) bool {
	_, open := s.open[id]
	e := s.entries[id]
	return open && e != nil && e.epoch == epoch
}

// OpenTxns returns how many transactions are open on the partition.
func (s *State) OpenTxns() int { return len(s.open) }

// EndTxn applies a marker written at offset marker by producer id at
// epoch: its open transaction (if any) ends, and an abort is indexed. A
// marker's epoch newer than the producer's fences older epochs (TV2 bumps
// the epoch per transaction). It reports whether a transaction was open.
func (s *State) EndTxn(id ID, epoch Epoch, marker record.Offset, commit bool) bool {
	e := s.entries[id]
	if e == nil {
		e = &entry{epoch: epoch}
		s.entries[id] = e
	}
	if epoch > e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
	first, ok := s.open[id]
	if !ok {
		return false
	}
	delete(s.open, id)
	s.ended = append(s.ended, endedTxn{first: first, marker: marker})
	if !commit {
		s.aborted = append(s.aborted, AbortedTxn{ProducerID: id, FirstOffset: first, LastOffset: marker})
	}
	return true
}

// LastStable returns the last stable offset for high watermark hw: the
// smallest first offset of a transaction that is open or whose marker is
// not below hw, else hw.
func (s *State) LastStable(hw record.Offset) record.Offset {
	lso := hw
	for _, first := range s.open {
		lso = min(lso, first)
	}
	kept := s.ended[:0]
	for _, t := range s.ended {
		if t.marker >= hw {
			kept = append(kept, t)
			lso = min(lso, t.first)
		}
	}
	clear(s.ended[len(kept):])
	s.ended = kept
	return lso
}

// Aborted returns the aborted transactions overlapping [from, to]: those a
// reader of that range must be told about.
func (s *State) Aborted(from, to record.Offset) []AbortedTxn {
	i := sort.Search(len(s.aborted), func(i int) bool { return s.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for _, a := range s.aborted[i:] {
		if a.FirstOffset <= to {
			out = append(out, a)
		}
	}
	return out
}

// DropAbortedBefore forgets aborted transactions whose marker is below
// offset start (the log start): no reader can reach them.
func (s *State) DropAbortedBefore(start record.Offset) {
	i := sort.Search(len(s.aborted), func(i int) bool { return s.aborted[i].LastOffset >= start })
	s.aborted = slices.Delete(s.aborted, 0, i)
}

// Unstable reports whether any transaction may bound the last stable
// offset: one is open, or one ended with its marker not yet below the high
// watermark LastStable was last asked with.
func (s *State) Unstable() bool { return len(s.open) > 0 || len(s.ended) > 0 }

// AbortedCount returns how many aborted transactions are indexed.
func (s *State) AbortedCount() int { return len(s.aborted) }
