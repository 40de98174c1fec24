package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/strandmq/strand/internal/producer"
)

// The __transaction_state record schemas, as Kafka's TransactionLogKey.json
// and TransactionLogValue.json (transaction-coordinator/src/main/resources/
// common/message/) define them. Both are "version-prefixed": an int16 schema
// version, then the struct. Integers are big-endian.
//
//	key, version 0 (not flexible)
//	  int16  version = 0
//	  string TransactionalId        int16 length, bytes
//
//	value, version 0 (not flexible)             value, version 1 (flexible)
//	  int16  version = 0                          int16  version = 1
//	  int64  ProducerId                           int64  ProducerId
//	  int16  ProducerEpoch                        int16  ProducerEpoch
//	  int32  TransactionTimeoutMs                 int32  TransactionTimeoutMs
//	  int8   TransactionStatus                    int8   TransactionStatus
//	  array  TransactionPartitions (nullable)     compact array (uvarint n+1, 0 = null)
//	    int32 count, -1 = null                      compact string Topic (uvarint len+1)
//	    string Topic                                compact array of int32 PartitionIds
//	    int32 count, int32 PartitionIds…            uvarint 0 (the entry's tagged fields)
//	  int64  TransactionLastUpdateTimestampMs     int64  TransactionLastUpdateTimestampMs
//	  int64  TransactionStartTimestampMs          int64  TransactionStartTimestampMs
//	                                              tagged fields: uvarint count, then per
//	                                              field uvarint tag, uvarint size, bytes:
//	                                                tag 0 int64 PreviousProducerId (default -1)
//	                                                tag 1 int64 NextProducerId     (default -1)
//	                                                tag 2 int16 ClientTransactionVersion (default 0)
//
// A tagged field equal to its default is not written (Kafka's generated
// writers do the same), and unknown tags are skipped on read (tag 3,
// NextProducerEpoch, is KIP-939's, which Strand does not implement). An
// Empty state is written with a null partition array, as Kafka writes it,
// and partitions of an Empty value are ignored on read. A tombstone (nil
// value) removes the id: it is what expiry writes.
//
// Kafka writes value version 1 when the finalized transaction.version is 1
// or more and version 0 at 0 (TransactionVersion.transactionLogValueVersion:
// "Transactions V1 enables log version 0 (flexible fields)", i.e. v1).
// Kafka 4.0 leaves the producer-id tags at their defaults on write; Strand
// writes the state's Previous/NextProducerID so that a loaded PrepareX can
// finish a TV2 overflow and a TV2 EndTxn retry after an overflow is
// recognised after a coordinator move (readers that ignore them lose nothing).

// ErrCorrupt is returned (wrapped) for a record that does not decode.
var ErrCorrupt = errors.New("txn: corrupt __transaction_state record")

// KeyVersion and the value versions this package reads and writes.
const (
	KeyVersion    int16 = 0
	ValueVersion0 int16 = 0
	ValueVersion1 int16 = 1
)

// ValueVersionFor is the value version Kafka writes at a finalized
// transaction.version.
func ValueVersionFor(v Version) int16 {
	if v >= TV1 {
		return ValueVersion1
	}
	return ValueVersion0
}

// EncodeKey returns the record key for a transactional id.
func EncodeKey(transactionalID string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(KeyVersion))
	return appendString(b, transactionalID)
}

// DecodeKey returns the transactional id of a record key.
func DecodeKey(b []byte) (string, error) {
	r := reader{b: b}
	if v := r.int16(); r.err == nil && v != KeyVersion {
		return "", fmt.Errorf("%w: key version %d", ErrCorrupt, v)
	}
	id := r.string()
	if r.err == nil && r.off != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return "", fmt.Errorf("%w: key: %v", ErrCorrupt, r.err)
	}
	return id, nil
}

// EncodeValue returns m's record value at the given value version.
func EncodeValue(m Metadata, version int16) []byte {
	flexible := version >= ValueVersion1
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = binary.BigEndian.AppendUint64(b, uint64(m.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(m.Epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.TimeoutMs))
	b = append(b, byte(m.State))
	b = appendPartitions(b, m, flexible)
	b = binary.BigEndian.AppendUint64(b, uint64(m.LastUpdateMs))
	b = binary.BigEndian.AppendUint64(b, uint64(m.StartMs))
	if !flexible {
		return b
	}
	var tags [][]byte // tag order 0, 1, 2
	if m.PreviousProducerID != producer.NoID {
		tags = append(tags, binary.BigEndian.AppendUint64([]byte{0, 8}, uint64(m.PreviousProducerID)))
	}
	if m.NextProducerID != producer.NoID {
		tags = append(tags, binary.BigEndian.AppendUint64([]byte{1, 8}, uint64(m.NextProducerID)))
	}
	if m.Client != 0 {
		tags = append(tags, binary.BigEndian.AppendUint16([]byte{2, 2}, uint16(m.Client)))
	}
	b = binary.AppendUvarint(b, uint64(len(tags)))
	for _, t := range tags {
		b = append(b, t...)
	}
	return b
}

// appendPartitions writes TransactionPartitions grouped by topic, topics
// and ids ascending (Kafka's order is a hash map's; readers do not care).
func appendPartitions(b []byte, m Metadata, flexible bool) []byte {
	if m.State == Empty {
		if flexible {
			return append(b, 0)
		}
		return binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
	}
	var groups [][]Partition
	for i, p := range m.Partitions {
		if i == 0 || p.Topic != m.Partitions[i-1].Topic {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], p)
	}
	b = appendLen(b, len(groups), flexible)
	for _, g := range groups {
		if flexible {
			b = binary.AppendUvarint(b, uint64(len(g[0].Topic))+1)
			b = append(b, g[0].Topic...)
		} else {
			b = appendString(b, g[0].Topic)
		}
		b = appendLen(b, len(g), flexible)
		for _, p := range g {
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
		}
		if flexible {
			b = append(b, 0) // no tagged fields in the entry
		}
	}
	return b
}

func appendLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// DecodeValue decodes a non-nil record value for transactionalID. LastEpoch
// is NoEpoch (the log does not keep it); fields a version lacks take their
// defaults.
func DecodeValue(transactionalID string, b []byte) (Metadata, error) {
	r := reader{b: b}
	version := r.int16()
	if r.err == nil && version != ValueVersion0 && version != ValueVersion1 {
		return Metadata{}, fmt.Errorf("%w: value version %d", ErrCorrupt, version)
	}
	flexible := version >= ValueVersion1
	m := Metadata{TransactionalID: transactionalID, PreviousProducerID: producer.NoID, NextProducerID: producer.NoID, LastEpoch: NoEpoch}
	m.ProducerID = producer.ID(r.int64())
	m.Epoch = producer.Epoch(r.int16())
	m.TimeoutMs = r.int32()
	m.State = State(r.int8())
	if r.err == nil && !m.State.Valid() {
		r.fail(fmt.Sprintf("transaction status %d", m.State))
	}
	parts := r.partitions(flexible)
	m.LastUpdateMs = r.int64()
	m.StartMs = r.int64()
	if flexible {
		r.valueTags(&m)
	}
	if r.err == nil && r.off != len(b) {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return Metadata{}, fmt.Errorf("%w: value of %q: %v", ErrCorrupt, transactionalID, r.err)
	}
	if m.State != Empty {
		m.Partitions = union(nil, parts)
	}
	return m, nil
}

// reader decodes big-endian fields, remembering the first failure.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at byte %d", what, r.off)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail("short record")
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) int8() int8 {
	if p := r.take(1); p != nil {
		return int8(p[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *reader) int32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *reader) int64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	// Kafka's readUnsignedVarint reads at most 5 bytes into an int.
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 || n > 5 || v > math.MaxInt32 {
		r.fail("bad varint")
		return 0
	}
	r.off += n
	return v
}

func (r *reader) string() string {
	n := r.int16()
	if r.err == nil && n < 0 {
		r.fail("null string")
	}
	return string(r.take(int(n)))
}

func (r *reader) compactString() string {
	n := r.uvarint()
	if r.err == nil && n == 0 {
		r.fail("null string")
	}
	if n > uint64(len(r.b)) {
		r.fail("string length")
		return ""
	}
	return string(r.take(int(n) - 1))
}

// length reads an array length; -1 (or compact 0) is null.
func (r *reader) length(flexible bool) int {
	if flexible {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.fail("array length")
			return 0
		}
		return int(n) - 1
	}
	n := r.int32()
	if n < -1 || int64(n) > int64(len(r.b)) {
		r.fail("array length")
		return 0
	}
	return int(n)
}

func (r *reader) partitions(flexible bool) []Partition {
	n := r.length(flexible)
	var out []Partition
	for i := 0; i < n && r.err == nil; i++ {
		var topic string
		if flexible {
			topic = r.compactString()
		} else {
			topic = r.string()
		}
		k := r.length(flexible)
		if r.err == nil && k < 0 {
			r.fail("null partition ids")
		}
		for j := 0; j < k && r.err == nil; j++ {
			out = append(out, Partition{Topic: topic, Partition: r.int32()})
		}
		if flexible {
			r.skipTags()
		}
	}
	return out
}

func (r *reader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		r.take(int(min(r.uvarint(), math.MaxInt32)))
	}
}

func (r *reader) valueTags(m *Metadata) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := min(r.uvarint(), math.MaxInt32)
		data := r.take(int(size))
		if r.err != nil {
			return
		}
		// Tag 3 is Kafka's NextProducerEpoch: Strand does not write it
		// (its records are its own) but, as Kafka, refuses one of the
		// wrong size.
		want := map[uint64]int{0: 8, 1: 8, 2: 2, 3: 2}[tag]
		if want == 0 {
			continue // unknown tag
		}
		if len(data) != want {
			r.fail(fmt.Sprintf("tag %d has %d bytes", tag, len(data)))
			return
		}
		switch tag {
		case 0:
			m.PreviousProducerID = producer.ID(binary.BigEndian.Uint64(data))
		case 1:
			m.NextProducerID = producer.ID(binary.BigEndian.Uint64(data))
		case 2:
			m.Client = Version(binary.BigEndian.Uint16(data))
		}
	}
}
