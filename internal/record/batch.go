package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AttrDeleteHorizon is the attribute bit (KIP-534) saying that BaseTimestamp
// holds the time after which a compacted batch's tombstones may be removed.
const AttrDeleteHorizon = 0x40

// minRecordSize is the smallest encoded record: a one-byte varint for each of
// length, timestamp delta, offset delta, key length, value length and header
// count, plus the attributes byte. It bounds how many records a payload can
// hold before any allocation trusts NumRecords.
const minRecordSize = 7

// Errors about the records inside a batch, and about records given to Encode.
var (
	// ErrCorrupt means the batch's frame and CRC are fine but its records
	// section is not: it does not decompress, a record is malformed, the
	// count or offsets disagree with the header, or bytes are left over.
	ErrCorrupt = errors.New("record: corrupt records")
	// ErrCodec means the attributes name a compression codec Kafka does not
	// define (5, 6 or 7).
	ErrCodec = errors.New("record: unknown compression codec")
	// ErrTooLarge means a batch decompresses beyond the allowed size, or
	// would be too large to encode.
	ErrTooLarge = errors.New("record: too large")
	// ErrInvalid means Encode was given records or options that cannot form
	// a valid batch (offsets out of order, a transactional batch without a
	// producer, …).
	ErrInvalid = errors.New("record: invalid batch contents")
)

// RecordHeader is one user header of a record. A nil Value is a null value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch, with its absolute offset and timestamp.
//
// A nil Key is a null key; a nil Value is a null value, which in a compacted
// topic is a tombstone. Empty but non-nil slices are empty, not null, and stay
// so through Encode and Decode.
type Record struct {
	Offset    Offset
	Timestamp int64 // milliseconds since the Unix epoch
	Key       []byte
	Value     []byte
	Headers   []RecordHeader
}

// Batch is a decoded v2 record batch.
type Batch struct {
	Header
	Records []Record
}

// Decode fully validates the one batch at the start of b and decodes it. Bytes
// in b after the batch are ignored.
//
// It checks the frame and CRC (see Check), decompresses the records (at most
// MaxDecompressedSize bytes), and parses every record: each must be encoded
// exactly as Kafka's DefaultRecord writes it, their number must be NumRecords,
// their offset deltas must increase and not pass LastOffsetDelta (gaps are
// allowed), and no byte may be left over.
//
// Records get absolute offsets (BaseOffset+offsetDelta) and timestamps
// (BaseTimestamp+timestampDelta; for a LogAppendTime batch, MaxTimestamp, as
// Kafka's readers report). Keys, values and header values alias b for an
// uncompressed batch and a fresh buffer otherwise; b must not change while the
// Batch is in use.
func Decode(b []byte) (*Batch, error) { return DecodeLimit(b, MaxDecompressedSize) }

// DecodeLimit is Decode with a lower bound on the decompressed size of the
// records; see DecompressLimit.
func DecodeLimit(b []byte, limit int) (*Batch, error) {
	h, err := Check(b)
	if err != nil {
		return nil, err
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b[:h.Size()]); err != nil {
		// Check has proved the frame, so kmsg cannot run short.
		return nil, fmt.Errorf("%w: %w (batch at base offset %d)", ErrShortBatch, err, h.BaseOffset)
	}
	payload, err := DecompressLimit(h.Compression(), kb.Records, limit)
	if err != nil {
		return nil, fmt.Errorf("%w (batch at base offset %d)", err, h.BaseOffset)
	}
	records, err := decodeRecords(&h, payload)
	if err != nil {
		return nil, fmt.Errorf("%w (batch at base offset %d)", err, h.BaseOffset)
	}
	return &Batch{Header: h, Records: records}, nil
}

// decodeRecords parses the uncompressed records section p of the batch h.
func decodeRecords(h *Header, p []byte) ([]Record, error) {
	n := int(h.NumRecords)
	if n > len(p)/minRecordSize {
		return nil, fmt.Errorf("%w: %d records cannot fit in %d bytes", ErrCorrupt, n, len(p))
	}
	records := make([]Record, n)
	logAppendTime := h.LogAppendTime()
	var (
		kr      kmsg.Record
		scratch []byte
		prev    = int32(-1)
	)
	for i := range records {
		// kmsg.Record.ReadFrom does not say how much it consumed, so frame
		// the record by its length prefix first.
		size, m := binary.Varint(p)
		if m <= 0 {
			return nil, fmt.Errorf("%w: record %d: bad length varint", ErrCorrupt, i)
		}
		if size < minRecordSize-1 || size > int64(len(p)-m) {
			return nil, fmt.Errorf("%w: record %d: length %d with %d bytes left", ErrCorrupt, i, size, len(p)-m)
		}
		raw := p[:m+int(size)]
		p = p[len(raw):]
		if err := kr.ReadFrom(raw); err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrCorrupt, i, err)
		}
		// Re-encoding must give the same bytes. This rejects what ReadFrom
		// silently tolerates and Kafka does not (bytes left inside the
		// record, a negative header count, a null header key) as well as
		// padded varints, so what Strand stores is what any client reads.
		scratch = kr.AppendTo(scratch[:0])
		if !bytes.Equal(scratch, raw) {
			return nil, fmt.Errorf("%w: record %d: not a canonical Kafka record encoding", ErrCorrupt, i)
		}
		if kr.OffsetDelta <= prev || kr.OffsetDelta > h.LastOffsetDelta {
			return nil, fmt.Errorf("%w: record %d: offset delta %d after %d, last offset delta %d",
				ErrCorrupt, i, kr.OffsetDelta, prev, h.LastOffsetDelta)
		}
		prev = kr.OffsetDelta

		r := &records[i]
		r.Offset = h.BaseOffset + Offset(kr.OffsetDelta)
		r.Timestamp = h.BaseTimestamp + kr.TimestampDelta64
		if logAppendTime {
			r.Timestamp = h.MaxTimestamp
		}
		r.Key, r.Value = kr.Key, kr.Value
		if len(kr.Headers) > 0 {
			r.Headers = make([]RecordHeader, len(kr.Headers))
			for j, kh := range kr.Headers {
				r.Headers[j] = RecordHeader{Key: kh.Key, Value: kh.Value}
			}
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorrupt, len(p), n)
	}
	return records, nil
}

// BatchOptions are the batch-level fields Encode writes.
//
// Zero is a valid producer ID, so the zero BatchOptions describes an
// idempotent batch of producer 0: start from DefaultBatchOptions (or from
// Header.Options when rewriting a batch) instead.
type BatchOptions struct {
	Codec Codec
	// ProducerID is NoProducerID (or any negative value) for a batch of a
	// non-idempotent producer; then ProducerEpoch and BaseSequence are
	// written as -1, whatever they hold.
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Transactional bool
	// Control marks a batch of transaction markers (written by the broker).
	Control bool
	// LogAppendTime marks the timestamps as the broker's: readers then report
	// MaxTimestamp for every record. SetLogAppendTime does this to an
	// encoded batch.
	LogAppendTime bool
	LeaderEpoch   Epoch
	// LastOffset, when past the last record's offset, extends the batch's
	// offset range to it: the trailing gap compaction or quarantine leaves
	// when it removes a batch's last records.
	LastOffset Offset
	// DeleteHorizon, when positive, is the time (ms) after which the
	// compaction cleaner may remove the batch's tombstones (KIP-534): Encode
	// sets AttrDeleteHorizon and stores it as BaseTimestamp, the records'
	// timestamp deltas then being relative to it, so every reader still
	// computes each record's own timestamp.
	DeleteHorizon int64
}

// DefaultBatchOptions returns the options of an uncompressed batch from a
// non-idempotent producer, with no leader epoch.
func DefaultBatchOptions() BatchOptions {
	return BatchOptions{
		Codec:         CodecNone,
		ProducerID:    NoProducerID,
		ProducerEpoch: -1,
		BaseSequence:  -1,
		LeaderEpoch:   NoEpoch,
	}
}

// Options returns the options that re-encode a batch with the same producer,
// flags, codec, leader epoch and offset range as h: what compaction needs to
// rewrite a batch with some records removed.
func (h *Header) Options() BatchOptions {
	return BatchOptions{
		Codec:         h.Compression(),
		ProducerID:    h.ProducerID,
		ProducerEpoch: h.ProducerEpoch,
		BaseSequence:  h.BaseSequence,
		Transactional: h.IsTransactional(),
		Control:       h.IsControl(),
		LogAppendTime: h.LogAppendTime(),
		LeaderEpoch:   h.LeaderEpoch,
		LastOffset:    h.LastOffset(),
		DeleteHorizon: h.DeleteHorizon(),
	}
}

// DeleteHorizon returns the batch's delete horizon (ms; see
// BatchOptions.DeleteHorizon), or 0 if it has none.
func (h *Header) DeleteHorizon() int64 {
	if h.Attributes&AttrDeleteHorizon == 0 {
		return 0
	}
	return h.BaseTimestamp
}

// LogAppendTime reports whether the batch's timestamps were set by the broker
// (timestamp type LogAppendTime) rather than by the producer.
func (h *Header) LogAppendTime() bool { return h.Attributes&AttrTimestampType != 0 }

// Encode builds a v2 batch of records with base offset baseOffset.
//
// Record offsets are absolute: each must be at least baseOffset, and they must
// increase. They need not be consecutive; a gap is an offset with no record,
// and LastOffsetDelta is the last record's offset minus baseOffset (or
// opts.LastOffset minus baseOffset, if greater). A producer's batch uses
// offsets baseOffset, baseOffset+1, …; the broker then moves it with
// SetBaseOffset.
//
// BaseTimestamp is the first record's timestamp (or opts.DeleteHorizon) and
// MaxTimestamp the greatest (both -1 for an empty batch without a horizon). Encode compresses with opts.Codec and computes
// the CRC.
func Encode(baseOffset Offset, records []Record, opts BatchOptions) ([]byte, error) {
	return AppendBatch(nil, baseOffset, records, opts)
}

// AppendBatch is Encode appending the batch to dst. On error it returns dst
// unchanged.
func AppendBatch(dst []byte, baseOffset Offset, records []Record, opts BatchOptions) ([]byte, error) {
	attrs, err := opts.attributes()
	if err != nil {
		return dst, err
	}
	lastDelta, err := offsetSpan(baseOffset, records, opts.LastOffset)
	if err != nil {
		return dst, err
	}
	baseTs, maxTs := int64(-1), int64(-1)
	if len(records) > 0 {
		baseTs, maxTs = records[0].Timestamp, records[0].Timestamp
		for i := range records {
			maxTs = max(maxTs, records[i].Timestamp)
		}
	}
	if opts.DeleteHorizon > 0 {
		baseTs = opts.DeleteHorizon
	}
	pid, epoch, seq := opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence
	if pid < 0 {
		pid, epoch, seq = NoProducerID, -1, -1
	}

	start := len(dst)
	hdr := kmsg.RecordBatch{
		FirstOffset:          int64(baseOffset),
		PartitionLeaderEpoch: int32(opts.LeaderEpoch),
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      lastDelta,
		FirstTimestamp:       baseTs,
		MaxTimestamp:         maxTs,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(records)),
	}
	dst = hdr.AppendTo(dst) // Length and CRC are patched in below.

	if opts.Codec == CodecNone {
		dst, err = appendRecords(dst, baseOffset, baseTs, records)
	} else {
		buf := payloadBufs.Get().(*[]byte)
		var payload []byte
		payload, err = appendRecords((*buf)[:0], baseOffset, baseTs, records)
		if err == nil {
			dst, err = appendCompressed(dst, opts.Codec, payload)
		}
		if cap(payload) <= maxPooledPayload {
			*buf = payload
			payloadBufs.Put(buf)
		}
	}
	if err != nil {
		return dst[:start], err
	}

	size := len(dst) - start
	if size-LogOverhead > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: batch of %d bytes", ErrTooLarge, size)
	}
	batch := dst[start:]
	binary.BigEndian.PutUint32(batch[posBatchLength:], uint32(size-LogOverhead))
	binary.BigEndian.PutUint32(batch[posCRC:], Checksum(batch))
	return dst, nil
}

// attributes validates the options and returns the batch attributes.
func (o *BatchOptions) attributes() (int16, error) {
	if o.Codec < CodecNone || o.Codec > CodecZstd {
		return 0, fmt.Errorf("%w: %d", ErrCodec, int8(o.Codec))
	}
	if o.Transactional && o.ProducerID < 0 {
		return 0, fmt.Errorf("%w: a transactional batch needs a producer ID", ErrInvalid)
	}
	attrs := int16(o.Codec)
	if o.LogAppendTime {
		attrs |= AttrTimestampType
	}
	if o.Transactional {
		attrs |= AttrTransactional
	}
	if o.Control {
		attrs |= AttrControl
	}
	if o.DeleteHorizon > 0 {
		attrs |= AttrDeleteHorizon
	}
	return attrs, nil
}

// offsetSpan checks the record offsets against base and returns the batch's
// LastOffsetDelta.
func offsetSpan(base Offset, records []Record, lastOffset Offset) (int32, error) {
	if base < 0 {
		return 0, fmt.Errorf("%w: base offset %d", ErrInvalid, base)
	}
	if len(records) > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %d records", ErrTooLarge, len(records))
	}
	last := base
	for i := range records {
		o := records[i].Offset
		if o < base || (i > 0 && o <= records[i-1].Offset) {
			return 0, fmt.Errorf("%w: record %d has offset %d (base %d, previous %d)",
				ErrInvalid, i, o, base, last)
		}
		last = o
	}
	last = max(last, lastOffset)
	if last-base > math.MaxInt32 {
		return 0, fmt.Errorf("%w: offsets %d to %d span more than an int32", ErrInvalid, base, last)
	}
	return int32(last - base), nil
}

// appendRecords appends the records, encoded relative to base and baseTs, to
// dst with kmsg.
func appendRecords(dst []byte, base Offset, baseTs int64, records []Record) ([]byte, error) {
	var (
		kr      kmsg.Record
		headers []kmsg.Header // reused across records
	)
	for i := range records {
		r := &records[i]
		headers = headers[:0]
		for _, h := range r.Headers {
			headers = append(headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		tsDelta := r.Timestamp - baseTs
		kr = kmsg.Record{
			TimestampDelta64: tsDelta,
			TimestampDelta:   int32(tsDelta),
			OffsetDelta:      int32(r.Offset - base),
			Key:              r.Key,
			Value:            r.Value,
			Headers:          headers,
		}
		body := recordBodySize(&kr)
		if body > math.MaxInt32 {
			return dst, fmt.Errorf("%w: record %d is %d bytes", ErrTooLarge, i, body)
		}
		kr.Length = int32(body)
		dst = kr.AppendTo(dst)
	}
	return dst, nil
}

// recordBodySize is the encoded size of r after its Length field.
func recordBodySize(r *kmsg.Record) int {
	n := 1 + varintSize(r.TimestampDelta64) + varintSize(int64(r.OffsetDelta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}

// bytesSize is the encoded size of a varint-length-prefixed nullable byte string.
func bytesSize(b []byte) int {
	if b == nil {
		return 1 // varint -1
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the size of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// Uncompressed record sections being built for compression are pooled; a
// buffer that grew past maxPooledPayload is left to the garbage collector so
// that one huge batch does not pin its memory forever.
const maxPooledPayload = 4 << 20

var payloadBufs = sync.Pool{New: func() any { return new([]byte) }}

// SetLogAppendTime marks the batch at the start of b as timestamped by the
// broker at ts (milliseconds): it sets the LogAppendTime attribute bit and
// MaxTimestamp, then recomputes the CRC in place, as Kafka's
// DefaultRecordBatch.setMaxTimestamp does (BaseTimestamp and the records are
// left alone; readers report MaxTimestamp for every record).
//
// b must hold a whole batch, one Check has accepted; SetLogAppendTime panics
// if it is shorter than its length field says.
func SetLogAppendTime(b []byte, ts int64) {
	size := int(int32(binary.BigEndian.Uint32(b[posBatchLength:]))) + LogOverhead
	if size < HeaderSize || size > len(b) {
		panic(fmt.Sprintf("record: SetLogAppendTime on %d bytes of a %d-byte batch", len(b), size))
	}
	attrs := binary.BigEndian.Uint16(b[posAttributes:]) | AttrTimestampType
	binary.BigEndian.PutUint16(b[posAttributes:], attrs)
	binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[posCRC:], Checksum(b[:size]))
}
