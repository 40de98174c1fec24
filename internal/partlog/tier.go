package partlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// Hooks for a tiered-storage uploader (internal/tiered). partlog knows nothing
// of object stores: it lists its sealed segments (SealedSegments, clean.go), hands out their bytes, and,
// once told how far the store holds the log, applies local retention instead
// of total retention, never deleting a segment the store does not yet hold.

// SegmentFiles is a sealed segment's content, for upload: its log file open
// for reading (the caller closes it; it stays readable even if retention
// deletes the segment meanwhile) and its two indexes, encoded as on disk.
type SegmentFiles struct {
	Log       vfs.File
	Size      int64
	Index     []byte
	TimeIndex []byte
	// Epochs are the leader-epoch entries that cover the segment: the
	// entry in force at its base offset, then any starting inside it.
	Epochs []EpochStart
}

// EpochStart is one leader-epoch checkpoint entry: the epoch and the first
// offset written in it.
type EpochStart struct {
	Epoch record.Epoch
	Start record.Offset
}

// OpenSealed opens the sealed segment whose base offset is base.
func (l *Log) OpenSealed(base record.Offset) (*SegmentFiles, error) {
	sf, next, err := l.openSealed(base)
	if err != nil {
		return nil, err
	}
	// After the segment list's lock is released: the lock order is mu,
	// then segs (ApplyRetention holds mu while it deletes segments).
	sf.Epochs = l.epochSlice(base, next)
	return sf, nil
}

func (l *Log) openSealed(base record.Offset) (*SegmentFiles, record.Offset, error) {
	l.segs.RLock()
	defer l.segs.RUnlock()
	list := l.segs.list
	for _, s := range list[:max(len(list)-1, 0)] {
		if s.base != base {
			continue
		}
		f, err := vfs.Open(l.fs, s.path(logSuffix))
		if err != nil {
			return nil, 0, fmt.Errorf("partlog: open sealed segment %d: %w", base, err)
		}
		return &SegmentFiles{Log: f, Size: s.size.Load(), Index: s.index.encoded(), TimeIndex: s.times.encoded()}, record.Offset(s.next.Load()), nil
	}
	return nil, 0, fmt.Errorf("partlog: no sealed segment at %d: %w", base, os.ErrNotExist)
}

func (l *Log) epochSlice(base, next record.Offset) []EpochStart {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []EpochStart
	for i, e := range l.epochs.entries {
		if e.start >= next {
			break
		}
		if i+1 < len(l.epochs.entries) && l.epochs.entries[i+1].start <= base {
			continue
		}
		out = append(out, EpochStart{Epoch: e.epoch, Start: e.start})
	}
	return out
}

// SetTierGate turns tiered retention on (gate non-nil) or off. While on,
// ApplyRetention keeps local segments by LocalRetentionTime and
// LocalRetentionBytes and deletes only segments that end at or below
// gate(): the offset below which the object store holds every batch.
func (l *Log) SetTierGate(gate func() record.Offset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.tierGate = gate
}

// retentionLimitsLocked returns the retention that applies to local
// segments, and the offset no deleted segment may pass.
func (l *Log) retentionLimitsLocked() (time.Duration, int64, record.Offset) {
	cfg := &l.mu.cfg
	hw := record.Offset(l.hwm.Load())
	if l.mu.tierGate == nil {
		return cfg.RetentionTime, cfg.RetentionBytes, hw
	}
	t, b := cfg.RetentionTime, cfg.RetentionBytes
	if cfg.LocalRetentionTime != 0 {
		t = cfg.LocalRetentionTime
	}
	if cfg.LocalRetentionBytes != 0 {
		b = cfg.LocalRetentionBytes
	}
	return t, b, min(hw, l.mu.tierGate())
}

// encoded returns the offset index's entries as the .index file holds them.
func (x *offsetIndex) encoded() []byte {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b := make([]byte, 0, len(x.mu.entries)*offsetEntrySize)
	for _, e := range x.mu.entries {
		b = binary.BigEndian.AppendUint32(b, e.rel)
		b = binary.BigEndian.AppendUint32(b, e.pos)
	}
	return b
}

// encoded returns the time index's entries as the .timeindex file holds them.
func (x *timeIndex) encoded() []byte {
	x.mu.RLock()
	defer x.mu.RUnlock()
	b := make([]byte, 0, len(x.mu.entries)*timeEntrySize)
	for _, e := range x.mu.entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, e.rel)
	}
	return b
}

// IndexLookup finds, in an offset index encoded as on disk (an uploaded
// .index), the byte position of the last indexed batch at or before
// relative offset rel; 0 when none is.
func IndexLookup(index []byte, rel uint32) int64 {
	n := len(index) / offsetEntrySize
	i := sort.Search(n, func(i int) bool {
		return binary.BigEndian.Uint32(index[i*offsetEntrySize:]) > rel
	})
	if i == 0 {
		return 0
	}
	return int64(binary.BigEndian.Uint32(index[(i-1)*offsetEntrySize+4:]))
}

// ResetToWithEpochs is ResetTo followed by the leader-epoch entries in
// force below o (KIP-405: a replica starting its log at a remote segment
// boundary takes them from the store), so that its next fetch names the
// epoch that wrote the offsets before o and truncation after a leader
// change works as for a replica that copied everything. Entries at or
// after o are ignored: the batches from o on bring their own.
func (l *Log) ResetToWithEpochs(o record.Offset, epochs []EpochStart) error {
	if err := l.ResetTo(o); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range epochs {
		if e.Start >= o {
			break
		}
		if last, ok := l.epochs.latest(); ok && last.epoch >= e.Epoch {
			continue
		}
		l.epochs.entries = append(l.epochs.entries, epochEntry{e.Epoch, e.Start})
	}
	l.epochs.truncateFromStart(o)
	return l.epochs.store()
}
