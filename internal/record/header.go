package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Offset is an absolute position in a partition's log. Offsets are assigned once
// and never renumbered.
type Offset int64

// Epoch is a partition leader epoch.
type Epoch int32

// Kafka's sentinels for offsets and epochs.
const (
	// NoOffset marks an unknown or absent offset (Kafka's -1).
	NoOffset Offset = -1
	// NoEpoch marks an unknown leader epoch (Kafka's -1).
	NoEpoch Epoch = -1
	// NoProducerID marks a batch written by a non-idempotent producer.
	NoProducerID int64 = -1
)

// Byte positions of the fields of a v2 record batch header. The header is drawn
// in the package documentation.
const (
	posBaseOffset      = 0
	posBatchLength     = 8
	posLeaderEpoch     = 12
	posMagic           = 16
	posCRC             = 17
	posAttributes      = 21
	posLastOffsetDelta = 23
	posBaseTimestamp   = 27
	posMaxTimestamp    = 35
	posProducerID      = 43
	posProducerEpoch   = 51
	posBaseSequence    = 53
	posRecordCount     = 57

	// HeaderSize is the size of a v2 batch header, up to the first record.
	HeaderSize = 61
	// LogOverhead is the part of the header not counted in BatchLength.
	LogOverhead = 12
)

// Attribute bits of a v2 batch.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
)

// Errors returned when a byte string is not a valid v2 record batch.
var (
	// ErrShortBatch means the input ends before the batch does: at the tail of
	// a log this is a torn write.
	ErrShortBatch = errors.New("record: batch truncated")
	// ErrBadMagic means the batch is not a v2 (magic 2) record batch.
	ErrBadMagic = errors.New("record: unsupported magic byte (only v2 batches)")
	// ErrBadLength means the batch length field is impossible.
	ErrBadLength = errors.New("record: invalid batch length")
	// ErrCRC means the batch's CRC-32C does not match its contents.
	ErrCRC = errors.New("record: crc mismatch")
)

// Header is the fixed-size header of a v2 record batch.
type Header struct {
	BaseOffset      Offset
	BatchLength     int32 // bytes following the BatchLength field
	LeaderEpoch     Epoch
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// Size is the number of bytes the whole batch occupies.
func (h *Header) Size() int { return int(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record (it may be a gap after
// compaction or quarantine).
func (h *Header) LastOffset() Offset { return h.BaseOffset + Offset(h.LastOffsetDelta) }

// NextOffset is the offset following the batch.
func (h *Header) NextOffset() Offset { return h.LastOffset() + 1 }

// Compression returns the codec the batch's records are compressed with.
func (h *Header) Compression() Codec { return Codec(h.Attributes & AttrCompressionMask) }

// IsControl reports whether the batch carries transaction control markers.
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsTransactional reports whether the batch is part of a transaction.
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// LastSequence is the sequence number of the batch's last record.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return h.BaseSequence
	}
	// Sequences wrap at MaxInt32, as Kafka's DefaultRecordBatch does.
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (1 << 31))
}

// ParseHeader reads the header of the batch at the start of b. It checks only
// what the header itself can prove (magic, a sane length); it does not check
// that b holds the whole batch or that the CRC matches: see Check.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		// Enough to read the length and the magic? Then say which is wrong.
		if len(b) >= posMagic+1 && b[posMagic] != 2 {
			return h, fmt.Errorf("%w: magic %d", ErrBadMagic, int8(b[posMagic]))
		}
		return h, ErrShortBatch
	}
	be := binary.BigEndian
	h.BaseOffset = Offset(be.Uint64(b[posBaseOffset:]))
	h.BatchLength = int32(be.Uint32(b[posBatchLength:]))
	h.LeaderEpoch = Epoch(be.Uint32(b[posLeaderEpoch:]))
	h.Magic = int8(b[posMagic])
	h.CRC = be.Uint32(b[posCRC:])
	h.Attributes = int16(be.Uint16(b[posAttributes:]))
	h.LastOffsetDelta = int32(be.Uint32(b[posLastOffsetDelta:]))
	h.BaseTimestamp = int64(be.Uint64(b[posBaseTimestamp:]))
	h.MaxTimestamp = int64(be.Uint64(b[posMaxTimestamp:]))
	h.ProducerID = int64(be.Uint64(b[posProducerID:]))
	h.ProducerEpoch = int16(be.Uint16(b[posProducerEpoch:]))
	h.BaseSequence = int32(be.Uint32(b[posBaseSequence:]))
	h.NumRecords = int32(be.Uint32(b[posRecordCount:]))
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d", ErrBadMagic, h.Magic)
	}
	if int(h.BatchLength) < HeaderSize-LogOverhead {
		return h, fmt.Errorf("%w: %d", ErrBadLength, h.BatchLength)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("%w: last offset delta %d, %d records", ErrBadLength, h.LastOffsetDelta, h.NumRecords)
	}
	return h, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum computes the CRC-32C a v2 batch carries: over everything from the
// attributes to the end of the batch.
func Checksum(batch []byte) uint32 { return crc32.Checksum(batch[posAttributes:], castagnoli) }

// Check parses the header of the batch at the start of b, verifies that b holds
// the whole batch and that its CRC matches, and returns the header. Bytes in b
// beyond the batch are ignored.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if len(b) < h.Size() {
		return h, fmt.Errorf("%w: have %d of %d bytes", ErrShortBatch, len(b), h.Size())
	}
	if got := Checksum(b[:h.Size()]); got != h.CRC {
		return h, fmt.Errorf("%w: stored %08x, computed %08x", ErrCRC, h.CRC, got)
	}
	return h, nil
}

// SetBaseOffset rewrites the base offset of the batch at the start of b. The base
// offset lies outside the CRC, so the batch stays valid.
func SetBaseOffset(b []byte, o Offset) { binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(o)) }

// SetLeaderEpoch rewrites the partition leader epoch of the batch at the start of
// b; like the base offset, it lies outside the CRC.
func SetLeaderEpoch(b []byte, e Epoch) { binary.BigEndian.PutUint32(b[posLeaderEpoch:], uint32(e)) }
