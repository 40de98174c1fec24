package producer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// snapshot is the on-disk form of a State: JSON, because it is small (five
// batches per producer) and written once per clean shutdown.
type snapshot struct {
	// Offset is the log end offset the state corresponds to.
	Offset    record.Offset      `json:"offset"`
	Producers []snapshotProducer `json:"producers"`
	// Aborted is the aborted-transaction index (txn.go).
	Aborted []AbortedTxn `json:"aborted,omitempty"`
}

type snapshotProducer struct {
	ID      ID      `json:"id"`
	Epoch   Epoch   `json:"epoch"`
	Batches []Batch `json:"batches"`
	// TxnFirst is the first offset of the producer's open transaction.
	TxnFirst *record.Offset `json:"txnFirst,omitempty"`
}

// SaveSnapshot atomically writes s, valid at log end offset at, to
// dir/name.
func SaveSnapshot(fs vfs.FS, dir, name string, at record.Offset, s *State) error {
	b, err := EncodeSnapshot(at, s)
	if err != nil {
		return err
	}
	return WriteSnapshot(fs, dir, name, b)
}

// EncodeSnapshot encodes s, valid at log end offset at, for WriteSnapshot.
// It reads s, so the caller holds whatever guards s; the write need not.
func EncodeSnapshot(at record.Offset, s *State) ([]byte, error) {
	snap := snapshot{Offset: at, Producers: make([]snapshotProducer, 0, len(s.entries)), Aborted: s.aborted}
	for id, e := range s.entries {
		sp := snapshotProducer{ID: id, Epoch: e.epoch, Batches: e.batches}
		if first, ok := s.open[id]; ok {
			sp.TxnFirst = &first
		}
		snap.Producers = append(snap.Producers, sp)
	}
	sort.Slice(snap.Producers, func(i, j int) bool { return snap.Producers[i].ID < snap.Producers[j].ID })
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, fmt.Errorf("producer: encode snapshot: %w", err)
	}
	return b, nil
}

// WriteSnapshot makes an encoded snapshot durable as dir/name: written
// whole under a temporary name, fsynced, then renamed, so a crash leaves
// either no file or the whole one.
func WriteSnapshot(fs vfs.FS, dir, name string, b []byte) error {
	if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, name), b); err != nil {
		return fmt.Errorf("producer: write snapshot %s: %w", name, err)
	}
	return nil
}

// DecodeSnapshot parses a snapshot written by SaveSnapshot and returns the
// state and the log end offset it is valid at.
func DecodeSnapshot(b []byte) (*State, record.Offset, error) {
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, 0, fmt.Errorf("producer: decode snapshot: %w", err)
	}
	s := NewState()
	for _, p := range snap.Producers {
		if len(p.Batches) > CachedBatches {
			p.Batches = p.Batches[len(p.Batches)-CachedBatches:]
		}
		s.entries[p.ID] = &entry{epoch: p.Epoch, batches: append([]Batch(nil), p.Batches...)}
		if p.TxnFirst != nil {
			s.BeginTxn(p.ID, *p.TxnFirst)
		}
	}
	s.aborted = snap.Aborted
	return s, snap.Offset, nil
}
