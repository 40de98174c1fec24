// Package coordlog is an internal topic's partition as a coordinator's
// record log: the node provides the partition (Log: append a batch with
// acks=all, read batches, its bounds) and a coordinator reads and writes
// plain records through Store — appends, appends inside a producer's
// transaction, and a replay that hands over the transactions' markers as
// records of their own. The group coordinator (__consumer_offsets), the
// transaction coordinator (__transaction_state) and the share coordinator
// keep their state this way; none of them sees a partition or a batch.
package coordlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strandmq/strand/internal/record"
)

// Coordinator routing errors, which every coordinator's host answers (the
// wire layer maps each to the Kafka error code of the same name). Their
// text keeps the "broker:" prefix clients have seen since the hosts lived
// in package broker.
var (
	// ErrCoordinatorNotAvailable: no broker coordinates the group now
	// (COORDINATOR_NOT_AVAILABLE).
	ErrCoordinatorNotAvailable = errors.New("broker: the group coordinator is not available")
	// ErrNotCoordinator: another node coordinates the group
	// (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("broker: not the group's coordinator")
	// ErrCoordinatorLoading: this node is loading the group's partition
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrCoordinatorLoading = errors.New("broker: the group coordinator is loading")
)

// Log is the internal partition a coordinator keeps its records in, as
// the node provides it.
type Log interface {
	// Name names the partition in errors ("__consumer_offsets-0").
	Name() string
	// Append appends one v2 batch with acks=all and returns once it is
	// committed (or fails: the caller's records were not acknowledged).
	Append(ctx context.Context, batch []byte) error
	// Read returns whole batches from offset from, at most about
	// maxBytes (at least one batch), up to the high watermark.
	Read(from record.Offset, maxBytes int) ([]byte, error)
	LogStartOffset() record.Offset
	HighWatermark() record.Offset
}

// Record is one coordinator record. A nil Value is a tombstone. Txn is set
// on a replayed record of a transaction, or a marker (then Key and Value
// are unset).
type Record struct {
	Key, Value []byte
	Txn        *TxnTag
}

// TxnTag marks a Record of a transaction: a record written under
// ProducerID, or (Marker) the control record ending its transaction.
type TxnTag struct {
	ProducerID int64
	Epoch      int16
	Marker     bool
	Commit     bool // for a Marker: commit, not abort
}

// Store reads and writes a coordinator's records in its Log.
type Store struct {
	Log Log
	// Now stamps the records written (the node's clock).
	Now func() time.Time
}

// Append writes recs as one uncompressed v2 batch with acks=all and returns
// once it is appended. A nil Value is written as a null value (a tombstone).
func (s *Store) Append(ctx context.Context, recs []Record) error {
	return s.append(ctx, recs, record.DefaultBatchOptions())
}

// AppendTxn is Append as records of producer (pid, epoch)'s transaction
// (TxnOffsetCommit): a transactional batch without a sequence, as a
// coordinator writes it; the marker that ends the transaction decides
// whether it counts.
func (s *Store) AppendTxn(ctx context.Context, pid int64, epoch int16, recs []Record) error {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.Transactional = pid, epoch, true
	return s.append(ctx, recs, opts)
}

func (s *Store) append(ctx context.Context, recs []Record, opts record.BatchOptions) error {
	if len(recs) == 0 {
		return nil
	}
	now := s.Now().UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{Offset: record.Offset(i), Timestamp: now, Key: r.Key, Value: r.Value}
	}
	batch, err := record.Encode(0, rs, opts)
	if err != nil {
		return fmt.Errorf("broker: encode %s batch: %w", s.Log.Name(), err)
	}
	if err := s.Log.Append(ctx, batch); err != nil {
		return fmt.Errorf("broker: append to %s: %w", s.Log.Name(), err)
	}
	return nil
}

// replayChunk is how many bytes Replay reads at once.
const replayChunk = 4 << 20

// Replay calls fn for every record from the log start to the high
// watermark, in offset order. Records of transactions carry their
// producer, and each marker is passed as a record of its own.
func (s *Store) Replay(fn func(Record) error) error {
	for off := s.Log.LogStartOffset(); off < s.Log.HighWatermark(); {
		batches, err := s.Log.Read(off, replayChunk)
		if err != nil {
			return err
		}
		if len(batches) == 0 {
			return nil
		}
		if off, err = s.replayBatches(batches, off, fn); err != nil {
			return err
		}
	}
	return nil
}

// replayBatches passes the records of batches at or after off to fn and
// returns the offset after the last batch.
func (s *Store) replayBatches(batches []byte, off record.Offset, fn func(Record) error) (record.Offset, error) {
	sc := record.Batches(batches)
	for sc.Next() {
		h := sc.Header()
		next := h.NextOffset()
		if h.IsControl() {
			if m, err := record.DecodeMarker(sc.Batch()); err == nil && h.BaseOffset >= off {
				tag := &TxnTag{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Marker: true, Commit: m.Commit}
				if err := fn(Record{Txn: tag}); err != nil {
					return off, err
				}
			}
			off = max(off, next)
			continue
		}
		batch, err := record.Decode(sc.Batch())
		if err != nil {
			return off, fmt.Errorf("broker: %s at %d: %w", s.Log.Name(), h.BaseOffset, err)
		}
		var tag *TxnTag
		if h.IsTransactional() {
			tag = &TxnTag{ProducerID: h.ProducerID, Epoch: h.ProducerEpoch}
		}
		for _, r := range batch.Records {
			if r.Offset < off {
				continue
			}
			if err := fn(Record{Key: r.Key, Value: r.Value, Txn: tag}); err != nil {
				return off, err
			}
		}
		off = max(off, next)
	}
	if err := sc.Err(); err != nil {
		return off, fmt.Errorf("broker: %s: %w", s.Log.Name(), err)
	}
	return off, nil
}
