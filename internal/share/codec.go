package share

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The __share_group_state record schemas, as Kafka's share coordinator
// defines them (share-coordinator/src/main/resources/common/message/
// ShareSnapshotKey.json, ShareSnapshotValue.json, ShareUpdateKey.json,
// ShareUpdateValue.json). Keys and values are "version-prefixed": an int16
// (for a key, the record type), then the struct. Integers are big-endian.
//
//	key (not flexible)                 ShareSnapshotKey: version 0
//	  int16  version                   ShareUpdateKey:   version 1
//	  string GroupId                   int16 length, bytes
//	  uuid   TopicId                   16 bytes
//	  int32  Partition
//
//	ShareSnapshotValue v0 (flexible)   ShareUpdateValue v0 (flexible)
//	  int16  version = 0                 int16  version = 0
//	  uint16 SnapshotEpoch               uint16 SnapshotEpoch
//	  int32  StateEpoch                  int32  LeaderEpoch
//	  int32  LeaderEpoch                 int64  StartOffset (-1: unchanged)
//	  int64  StartOffset                 compact array StateBatches
//	  compact array StateBatches         tagged fields
//	    (uvarint n+1)
//	    int64 FirstOffset
//	    int64 LastOffset
//	    int8  DeliveryState (0 available, 2 acknowledged, 4 archived)
//	    int16 DeliveryCount
//	    uvarint 0 (the batch's tagged fields)
//	  tagged fields: uvarint count, then per field uvarint tag, size, bytes
//
// Both keys of one share-partition live in the compacted topic at once:
// the latest snapshot and the latest update after it. Strand writes a
// snapshot on every change (the window is at most MaxRecordLocks offsets,
// coalesced into runs, so a snapshot stays small), and reads updates too.
// A tombstone (nil value) deletes the share-partition's state.

// ErrCorrupt is returned (wrapped) for a record that does not decode.
var ErrCorrupt = errors.New("share: corrupt __share_group_state record")

// The record types (the key's version). KeyGroupConfig is Strand's own:
// Kafka keeps group configs in its metadata log, which Strand's does not
// hold yet, so a share group's configs (JSON, name → value) live beside
// its state, under a key version Kafka does not use (its key carries the
// group, a zero topic id and partition -1). Kafka's tools never read this
// topic; a Kafka broker reading it would stop at this record.
const (
	KeySnapshot    int16 = 0
	KeyUpdate      int16 = 1
	KeyGroupConfig int16 = 32000
)

// Key names one share-partition's record in __share_group_state.
type Key struct {
	Type      int16 // KeySnapshot or KeyUpdate
	Group     string
	TopicID   [16]byte
	Partition int32
}

// SPKey names a share-partition: a group's view of one topic-partition.
type SPKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// SP returns the share-partition the key belongs to.
func (k Key) SP() SPKey { return SPKey{k.Group, k.TopicID, k.Partition} }

// EncodeKey encodes a record key.
func EncodeKey(k Key) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(k.Type))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// DecodeKey decodes a record key.
func DecodeKey(b []byte) (Key, error) {
	r := reader{b: b}
	k := Key{Type: r.i16()}
	if k.Type != KeySnapshot && k.Type != KeyUpdate && k.Type != KeyGroupConfig {
		return Key{}, fmt.Errorf("%w: key type %d", ErrCorrupt, k.Type)
	}
	n := int(r.i16())
	if n < 0 {
		return Key{}, fmt.Errorf("%w: null group id", ErrCorrupt)
	}
	k.Group = string(r.take(n))
	copy(k.TopicID[:], r.take(16))
	k.Partition = r.i32()
	if r.err != nil || len(r.b) != 0 {
		return Key{}, fmt.Errorf("%w: key: %d trailing bytes, %v", ErrCorrupt, len(r.b), r.err)
	}
	return k, nil
}

// EncodeSnapshot encodes a ShareSnapshotValue.
func EncodeSnapshot(s Snapshot, snapshotEpoch uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, snapshotEpoch)
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Start))
	return appendBatches(b, s.Batches)
}

// EncodeUpdate encodes a ShareUpdateValue (Start -1: unchanged).
func EncodeUpdate(u Snapshot, snapshotEpoch uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, snapshotEpoch)
	b = binary.BigEndian.AppendUint32(b, uint32(u.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(u.Start))
	return appendBatches(b, u.Batches)
}

func appendBatches(b []byte, batches []StateBatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(batches))+1)
	for _, sb := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.Count))
		b = append(b, 0)
	}
	return append(b, 0)
}

// DecodeSnapshot decodes a ShareSnapshotValue; it returns the snapshot
// epoch beside the state.
func DecodeSnapshot(b []byte) (Snapshot, uint16, error) {
	r := reader{b: b}
	if v := r.i16(); v != 0 && r.err == nil {
		return Snapshot{}, 0, fmt.Errorf("%w: snapshot value version %d", ErrCorrupt, v)
	}
	epoch := uint16(r.i16())
	s := Snapshot{StateEpoch: r.i32(), LeaderEpoch: r.i32(), Start: Offset(r.i64())}
	s.Batches = r.batches()
	r.tags()
	if err := r.done("snapshot value"); err != nil {
		return Snapshot{}, 0, err
	}
	return s, epoch, nil
}

// DecodeUpdate decodes a ShareUpdateValue (StateEpoch is left zero: an
// update does not carry one).
func DecodeUpdate(b []byte) (Snapshot, uint16, error) {
	r := reader{b: b}
	if v := r.i16(); v != 0 && r.err == nil {
		return Snapshot{}, 0, fmt.Errorf("%w: update value version %d", ErrCorrupt, v)
	}
	epoch := uint16(r.i16())
	u := Snapshot{LeaderEpoch: r.i32(), Start: Offset(r.i64())}
	u.Batches = r.batches()
	r.tags()
	if err := r.done("update value"); err != nil {
		return Snapshot{}, 0, err
	}
	return u, epoch, nil
}

// reader decodes big-endian fields, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = fmt.Errorf("%w: %d bytes wanted, %d left", ErrCorrupt, n, len(r.b))
		r.b = nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) i16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *reader) i32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *reader) i64() int64 {
	if v := r.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad uvarint", ErrCorrupt)
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// tags skips a tagged-field section (none are defined for these records).
func (r *reader) tags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		size := r.uvarint()
		if size > math.MaxInt32 {
			r.err = fmt.Errorf("%w: tagged field of %d bytes", ErrCorrupt, size)
			return
		}
		r.take(int(size))
	}
}

func (r *reader) batches() []StateBatch {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil // a null array: Kafka never writes one here
	}
	n--
	// Each batch is at least 20 bytes: bound the allocation by the input.
	if n > uint64(len(r.b)/20) {
		r.err = fmt.Errorf("%w: %d state batches in %d bytes", ErrCorrupt, n, len(r.b))
		return nil
	}
	out := make([]StateBatch, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		sb := StateBatch{First: Offset(r.i64()), Last: Offset(r.i64())}
		if v := r.take(1); v != nil {
			sb.State = State(int8(v[0]))
		}
		sb.Count = r.i16()
		r.tags()
		out = append(out, sb)
	}
	return out
}

func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("share: %s: %w", what, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %s: %d trailing bytes", ErrCorrupt, what, len(r.b))
	}
	return nil
}
