package tiered

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/strandmq/strand/internal/record"
)

// Segment is one uploaded segment as a manifest records it.
type Segment struct {
	// ID makes the segment's object keys unique per upload.
	ID   string        `json:"id"`
	Base record.Offset `json:"base"`
	// Start is the first offset the segment serves: its base, or later
	// when its first batches were already remote in another segment (a
	// new leader's segments need not split where the old leader's did).
	Start        record.Offset `json:"start"`
	Next         record.Offset `json:"next"`
	Size         int64         `json:"size"`
	MaxTimestamp int64         `json:"maxTimestamp"`
	// Epochs is the slice of the leader-epoch checkpoint covering the
	// segment: what a replica rebuilding from the store needs.
	Epochs []EpochStart `json:"epochs,omitempty"`
	// Snapshot says the segment has a .snapshot object: the producer
	// state (with the aborted-transaction index) as of Next, from which a
	// replica that starts its local log at Next rebuilds it.
	Snapshot bool `json:"producerSnapshot,omitempty"`
}

// EpochStart is a leader epoch and the first offset written in it.
type EpochStart struct {
	Epoch record.Epoch  `json:"epoch"`
	Start record.Offset `json:"start"`
}

// Manifest is a partition's remote state: which offsets the store holds.
// It is immutable once written; a change is a new manifest with a higher
// (epoch, seq).
type Manifest struct {
	Version int `json:"version"`
	// Epoch is the leader epoch of the writer.
	Epoch record.Epoch `json:"leaderEpoch"`
	Seq   uint64       `json:"seq"`
	// LogStart is the partition's log start offset as far as the store
	// goes: the first remote segment's base, or more after DeleteRecords.
	LogStart record.Offset `json:"logStart"`
	// End is the offset below which every batch has been uploaded (some
	// may since have been deleted by retention): local segments that end
	// at or below it may go. -1 before the first upload.
	End      record.Offset `json:"end"`
	Segments []Segment     `json:"segments"`
}

const manifestVersion = 1

func emptyManifest() *Manifest {
	return &Manifest{Version: manifestVersion, Epoch: -1, LogStart: record.NoOffset, End: record.NoOffset}
}

// clone returns a deep copy, ready to be edited into the next manifest.
func (m *Manifest) clone() *Manifest {
	c := *m
	c.Segments = slices.Clone(m.Segments)
	return &c
}

// RemoteBytes is the size of every remote segment.
func (m *Manifest) RemoteBytes() int64 {
	var n int64
	for _, s := range m.Segments {
		n += s.Size
	}
	return n
}

// find returns the index of the segment holding offset o, or the first
// segment after it (len when none).
func (m *Manifest) find(o record.Offset) int {
	i, _ := slices.BinarySearchFunc(m.Segments, o, func(s Segment, o record.Offset) int {
		switch {
		case s.Next <= o:
			return -1
		case s.Start > o:
			return 1
		}
		return 0
	})
	return i
}

func manifestKey(prefix string, epoch record.Epoch, seq uint64) string {
	return fmt.Sprintf("%smanifest/%010d-%020d.json", prefix, epoch, seq)
}

// parseManifestKey returns the epoch in a manifest key.
func parseManifestKey(prefix, key string) (record.Epoch, uint64, bool) {
	name, ok := strings.CutPrefix(key, prefix+"manifest/")
	if !ok {
		return 0, 0, false
	}
	name, ok = strings.CutSuffix(name, ".json")
	e, s, ok2 := strings.Cut(name, "-")
	if !ok || !ok2 {
		return 0, 0, false
	}
	epoch, err1 := strconv.ParseInt(e, 10, 32)
	seq, err2 := strconv.ParseUint(s, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return record.Epoch(epoch), seq, true
}

func segmentKey(prefix string, s Segment, suffix string) string {
	return fmt.Sprintf("%ssegments/%020d-%s%s", prefix, s.Base, s.ID, suffix)
}

// segmentIDOf returns the upload id in a segment object key.
func segmentIDOf(prefix, key string) (string, bool) {
	name, ok := strings.CutPrefix(key, prefix+"segments/")
	if !ok {
		return "", false
	}
	_, rest, ok := strings.Cut(name, "-")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, ".")
	return id, true
}

func decodeManifest(b []byte) (*Manifest, error) {
	m := emptyManifest()
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("tiered: manifest: %w", err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("tiered: manifest version %d, want %d", m.Version, manifestVersion)
	}
	for i := range m.Segments {
		m.Segments[i].Start = max(m.Segments[i].Start, m.Segments[i].Base)
	}
	for i := 1; i < len(m.Segments); i++ {
		if m.Segments[i].Start < m.Segments[i-1].Next {
			return nil, fmt.Errorf("tiered: manifest %d-%d: segments %d and %d overlap",
				m.Epoch, m.Seq, m.Segments[i-1].Base, m.Segments[i].Base)
		}
	}
	return m, nil
}
