package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Legacy message sets are what Produce v0–v2 carry: messages of magic 0 or 1,
// back to back, each with its own CRC-32 (IEEE, not Castagnoli):
//
//	+--------+------+-------+-------+-------+-----------------+-----+-------+
//	| offset | size | crc   | magic | attrs | timestamp       | key | value |
//	| int64  | int32| u32   | 0/1   | int8  | int64 (magic 1) |bytes| bytes |
//	+--------+------+-------+-------+-------+-----------------+-----+-------+
//
// A compressed message is a wrapper whose value is a compressed inner message
// set. Strand stores only v2 batches, so it up-converts on produce, as Kafka's
// log validator does. Old librdkafka clients (before 2.11) compress only when a
// broker advertises Produce v0, which is why the old versions matter.

const (
	legacyOverhead = 12 // offset + size
	legacyMinSize  = 14 // crc, magic, attributes, key length, value length (magic 0)
	legacyMaxDepth = 1  // a wrapper's inner messages may not be compressed again
)

// FromMessageSet converts a legacy message set into one v2 batch holding the
// same records in order, compressed with the codec the producer used. now
// (milliseconds) stamps records that carry no timestamp (magic 0) and those
// whose wrapper asks for LogAppendTime. It rejects any message whose CRC fails,
// a truncated message, nested compression, and an empty set.
func FromMessageSet(set []byte, now int64) ([]byte, error) {
	var recs []Record
	codec, err := appendLegacy(&recs, set, now, 0)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: empty message set", ErrInvalid)
	}
	for i := range recs {
		recs[i].Offset = Offset(i)
	}
	opts := DefaultBatchOptions()
	opts.Codec = codec
	return Encode(0, recs, opts)
}

// appendLegacy decodes the messages of set into recs and returns the codec of
// the outermost compressed message (CodecNone when none was).
func appendLegacy(recs *[]Record, set []byte, now int64, depth int) (Codec, error) {
	codec := CodecNone
	for pos := 0; pos < len(set); {
		if len(set)-pos < legacyOverhead {
			return codec, fmt.Errorf("%w: legacy message header at %d", ErrShortBatch, pos)
		}
		size := int(int32(binary.BigEndian.Uint32(set[pos+8:])))
		if size < legacyMinSize || size > len(set)-pos-legacyOverhead {
			return codec, fmt.Errorf("%w: legacy message of %d bytes at %d", ErrShortBatch, size, pos)
		}
		msg := set[pos : pos+legacyOverhead+size]
		pos += len(msg)
		ts, attrs, key, value, err := parseLegacy(msg, now)
		if err != nil {
			return codec, err
		}
		c := Codec(attrs & AttrCompressionMask)
		if c == CodecNone {
			*recs = append(*recs, Record{Timestamp: ts, Key: key, Value: value})
			continue
		}
		if depth >= legacyMaxDepth {
			return codec, fmt.Errorf("%w: nested compressed message", ErrInvalid)
		}
		inner, err := Decompress(c, value)
		if err != nil {
			return codec, fmt.Errorf("legacy message: %w", err)
		}
		first := len(*recs)
		if _, err := appendLegacy(recs, inner, now, depth+1); err != nil {
			return codec, err
		}
		if attrs&AttrTimestampType != 0 { // the wrapper's LogAppendTime rules
			for i := first; i < len(*recs); i++ {
				(*recs)[i].Timestamp = ts
			}
		}
		codec = c
	}
	return codec, nil
}

// parseLegacy checks one message's CRC and returns its fields. Magic 0 has
// no timestamp; a LogAppendTime message's timestamp is the broker's.
func parseLegacy(msg []byte, now int64) (ts int64, attrs int8, key, value []byte, err error) {
	crc := binary.BigEndian.Uint32(msg[legacyOverhead:])
	if got := crc32.ChecksumIEEE(msg[legacyOverhead+4:]); got != crc {
		return 0, 0, nil, nil, fmt.Errorf("%w: legacy message stored %08x, computed %08x", ErrCRC, crc, got)
	}
	switch magic := msg[legacyOverhead+4]; magic {
	case 0:
		var m kmsg.MessageV0
		if err := m.ReadFrom(msg); err != nil {
			return 0, 0, nil, nil, fmt.Errorf("%w: legacy v0 message: %v", ErrCorrupt, err)
		}
		return now, m.Attributes, m.Key, m.Value, nil
	case 1:
		var m kmsg.MessageV1
		if err := m.ReadFrom(msg); err != nil {
			return 0, 0, nil, nil, fmt.Errorf("%w: legacy v1 message: %v", ErrCorrupt, err)
		}
		ts := m.Timestamp
		if m.Attributes&AttrTimestampType != 0 {
			ts = now
		}
		return ts, m.Attributes, m.Key, m.Value, nil
	default:
		return 0, 0, nil, nil, fmt.Errorf("%w: magic %d in a legacy message set", ErrBadMagic, magic)
	}
}
