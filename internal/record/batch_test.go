package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRoundTripEveryCodec(t *testing.T) {
	t.Parallel()
	records := sampleRecords(1000, 50, 700, 1)
	// Null and empty keys, values and header values, side by side.
	records[1].Key, records[1].Value = nil, nil
	records[2].Key, records[2].Value = []byte{}, []byte{}
	records[3].Headers = []RecordHeader{{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}}, {Key: "", Value: []byte("v")}}
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			opts := withCodec(c)
			raw := mustEncode(t, 1000, records, opts)
			b, err := Decode(raw)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(b.Records, records) {
				t.Fatalf("records differ after round trip")
			}
			h := b.Header
			if h.Compression() != c || h.NumRecords != 50 || h.BaseOffset != 1000 || h.LastOffsetDelta != 49 {
				t.Fatalf("header %+v", h)
			}
			if h.BaseTimestamp != records[0].Timestamp {
				t.Errorf("base timestamp %d, want %d", h.BaseTimestamp, records[0].Timestamp)
			}
			var maxTs int64
			for _, r := range records {
				maxTs = max(maxTs, r.Timestamp)
			}
			if h.MaxTimestamp != maxTs {
				t.Errorf("max timestamp %d, want %d", h.MaxTimestamp, maxTs)
			}
			if h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.LeaderEpoch != NoEpoch {
				t.Errorf("producer fields %d/%d/%d, leader epoch %d", h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LeaderEpoch)
			}
			if c != CodecNone && len(raw) >= HeaderSize+50*700 {
				t.Errorf("%v batch of %d bytes did not compress", c, len(raw))
			}
		})
	}
}

func TestNullVersusEmpty(t *testing.T) {
	t.Parallel()
	records := []Record{
		{Offset: 0, Key: nil, Value: nil},
		{Offset: 1, Key: []byte{}, Value: []byte{}},
		{Offset: 2, Key: []byte("k"), Value: nil}, // a tombstone
	}
	b, err := Decode(mustEncode(t, 0, records, DefaultBatchOptions()))
	if err != nil {
		t.Fatal(err)
	}
	got := b.Records
	if got[0].Key != nil || got[0].Value != nil {
		t.Errorf("null key/value decoded as %q/%q", got[0].Key, got[0].Value)
	}
	if got[1].Key == nil || got[1].Value == nil {
		t.Errorf("empty key/value decoded as null")
	}
	if got[2].Value != nil || string(got[2].Key) != "k" {
		t.Errorf("tombstone decoded as %q=%q", got[2].Key, got[2].Value)
	}
}

// TestDecodeKmsgBuiltBatch decodes a batch assembled field by field with kmsg
// and hash/crc32, without Encode.
func TestDecodeKmsgBuiltBatch(t *testing.T) {
	t.Parallel()
	recs := []kmsg.Record{
		{OffsetDelta: 0, TimestampDelta64: 0, Key: []byte("a"), Value: []byte("one")},
		{OffsetDelta: 1, TimestampDelta64: 5, Key: nil, Value: []byte("two"),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}},
		{OffsetDelta: 2, TimestampDelta64: -3, Key: []byte("c"), Value: nil},
	}
	var payload []byte
	for i := range recs {
		body := recs[i].AppendTo(nil)[1:] // Length 0 encodes in one byte
		recs[i].Length = int32(len(body))
		payload = recs[i].AppendTo(payload)
	}
	rb := kmsg.RecordBatch{
		FirstOffset: 42, PartitionLeaderEpoch: 7, Magic: 2,
		Attributes: 0, LastOffsetDelta: 2, FirstTimestamp: 1000, MaxTimestamp: 1005,
		ProducerID: 9, ProducerEpoch: 1, FirstSequence: 100, NumRecords: 3,
		Length: int32(49 + len(payload)), Records: payload,
	}
	raw := rb.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(raw[17:], crc)

	b, err := Decode(raw)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := []Record{
		{Offset: 42, Timestamp: 1000, Key: []byte("a"), Value: []byte("one")},
		{Offset: 43, Timestamp: 1005, Value: []byte("two"), Headers: []RecordHeader{{Key: "h", Value: []byte("x")}}},
		{Offset: 44, Timestamp: 997, Key: []byte("c")},
	}
	if !reflect.DeepEqual(b.Records, want) {
		t.Fatalf("got %+v\nwant %+v", b.Records, want)
	}
	if b.ProducerID != 9 || b.ProducerEpoch != 1 || b.BaseSequence != 100 || b.LastSequence() != 102 || b.LeaderEpoch != 7 {
		t.Fatalf("header %+v", b.Header)
	}
	// Our encoder makes the very same bytes.
	opts := BatchOptions{ProducerID: 9, ProducerEpoch: 1, BaseSequence: 100, LeaderEpoch: 7}
	if again := mustEncode(t, 42, want, opts); !bytes.Equal(again, raw) {
		t.Fatalf("Encode differs from the kmsg-built batch:\n%x\n%x", again, raw)
	}
}

func TestGapBatch(t *testing.T) {
	t.Parallel()
	records := []Record{
		{Offset: 11, Timestamp: 5, Value: []byte("a")}, // leading gap: 10
		{Offset: 12, Timestamp: 6, Value: []byte("b")},
		{Offset: 15, Timestamp: 7, Value: []byte("c")}, // gap: 13, 14
	}
	opts := DefaultBatchOptions()
	opts.LastOffset = 17 // trailing gap: 16, 17
	for _, c := range allCodecs {
		opts.Codec = c
		raw := mustEncode(t, 10, records, opts)
		b, err := Decode(raw)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if b.NumRecords != 3 || b.LastOffsetDelta != 7 || b.NextOffset() != 18 {
			t.Fatalf("%v: %d records, last offset delta %d, next %d", c, b.NumRecords, b.LastOffsetDelta, b.NextOffset())
		}
		if !reflect.DeepEqual(b.Records, records) {
			t.Fatalf("%v: records %+v", c, b.Records)
		}
		// Re-encoding with the batch's own options keeps its offset range.
		again := mustEncode(t, b.BaseOffset, b.Records[1:], b.Options())
		h, err := Check(again)
		if err != nil || h.LastOffsetDelta != 7 || h.NumRecords != 2 || h.Compression() != c {
			t.Fatalf("%v: re-encoded header %+v, %v", c, h, err)
		}
	}
}

func TestEmptyBatch(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		raw := mustEncode(t, 5, nil, withCodec(c))
		b, err := Decode(raw)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if len(b.Records) != 0 || b.NumRecords != 0 || b.MaxTimestamp != -1 || b.NextOffset() != 6 {
			t.Fatalf("%v: %+v", c, b)
		}
	}
}

func TestEncodeProducerFields(t *testing.T) {
	t.Parallel()
	records := sampleRecords(0, 3, 10, 2)
	opts := BatchOptions{Codec: CodecLZ4, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 9, Transactional: true, LeaderEpoch: 4}
	h, err := Check(mustEncode(t, 0, records, opts))
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 77 || h.ProducerEpoch != 3 || h.BaseSequence != 9 || !h.IsTransactional() || h.IsControl() || h.LeaderEpoch != 4 {
		t.Fatalf("header %+v", h)
	}
	if got := h.Options(); got != (BatchOptions{Codec: CodecLZ4, ProducerID: 77, ProducerEpoch: 3, BaseSequence: 9, Transactional: true, LeaderEpoch: 4, LastOffset: 2}) {
		t.Fatalf("Options() = %+v", got)
	}
	// A negative producer ID forces epoch and sequence to -1.
	h, err = Check(mustEncode(t, 0, records, BatchOptions{ProducerID: -5, ProducerEpoch: 3, BaseSequence: 9}))
	if err != nil || h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 {
		t.Fatalf("non-idempotent header %+v, %v", h, err)
	}
}

func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	ok := []Record{{Offset: 0}, {Offset: 1}}
	tests := []struct {
		name    string
		base    Offset
		records []Record
		opts    BatchOptions
		want    error
	}{
		{"offset below base", 5, []Record{{Offset: 4}}, DefaultBatchOptions(), ErrInvalid},
		{"offsets repeat", 0, []Record{{Offset: 1}, {Offset: 1}}, DefaultBatchOptions(), ErrInvalid},
		{"offsets decrease", 0, []Record{{Offset: 2}, {Offset: 1}}, DefaultBatchOptions(), ErrInvalid},
		{"negative base", -1, nil, DefaultBatchOptions(), ErrInvalid},
		{"span over int32", 0, []Record{{Offset: 1 << 31}}, DefaultBatchOptions(), ErrInvalid},
		{"transactional without producer", 0, ok, BatchOptions{ProducerID: -1, Transactional: true}, ErrInvalid},
		{"unknown codec", 0, ok, BatchOptions{Codec: 5, ProducerID: -1}, ErrCodec},
	}
	for _, tt := range tests {
		dst := []byte("prefix")
		out, err := AppendBatch(dst, tt.base, tt.records, tt.opts)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
		if string(out) != "prefix" {
			t.Errorf("%s: dst changed to %q", tt.name, out)
		}
	}
}

func TestAppendBatchAppends(t *testing.T) {
	t.Parallel()
	a := mustEncode(t, 0, sampleRecords(0, 4, 100, 3), withCodec(CodecZstd))
	b := mustEncode(t, 4, sampleRecords(4, 2, 100, 4), withCodec(CodecNone))
	both, err := AppendBatch(append([]byte(nil), a...), 4, sampleRecords(4, 2, 100, 4), withCodec(CodecNone))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(both, append(append([]byte(nil), a...), b...)) {
		t.Fatal("AppendBatch did not append the same bytes as Encode")
	}
}

func TestSetLogAppendTime(t *testing.T) {
	t.Parallel()
	for _, c := range allCodecs {
		records := sampleRecords(0, 5, 50, 5)
		raw := mustEncode(t, 0, records, withCodec(c))
		SetLogAppendTime(raw, 1_800_000_000_000)
		b, err := Decode(raw)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if !b.LogAppendTime() || b.MaxTimestamp != 1_800_000_000_000 || b.BaseTimestamp != records[0].Timestamp {
			t.Fatalf("%v: header %+v", c, b.Header)
		}
		for _, r := range b.Records {
			if r.Timestamp != 1_800_000_000_000 {
				t.Fatalf("%v: record timestamp %d, want the log append time", c, r.Timestamp)
			}
		}
		if b.Compression() != c {
			t.Fatalf("%v: codec bits changed to %v", c, b.Compression())
		}
	}
}

func TestBrokerRewritesKeepCRC(t *testing.T) {
	t.Parallel()
	raw := mustEncode(t, 0, sampleRecords(0, 3, 20, 6), withCodec(CodecSnappy))
	SetBaseOffset(raw, 1234)
	SetLeaderEpoch(raw, 9)
	b, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b.BaseOffset != 1234 || b.LeaderEpoch != 9 || b.Records[2].Offset != 1236 {
		t.Fatalf("header %+v, last record offset %d", b.Header, b.Records[2].Offset)
	}
}

func TestCRCMismatch(t *testing.T) {
	t.Parallel()
	raw := mustEncode(t, 0, sampleRecords(0, 3, 20, 7), DefaultBatchOptions())
	for _, pos := range []int{posAttributes, posMaxTimestamp + 3, HeaderSize + 5, len(raw) - 1} {
		bad := bytes.Clone(raw)
		bad[pos] ^= 0x10
		if _, err := Decode(bad); !errors.Is(err, ErrCRC) {
			t.Errorf("flipped byte %d: err %v, want ErrCRC", pos, err)
		}
	}
}

// corrupt applies f to a copy of raw's records section and fixes the CRC, so
// that only the record-level checks can catch it.
func corrupt(raw []byte, f func(b []byte) []byte) []byte {
	b := f(bytes.Clone(raw))
	binary.BigEndian.PutUint32(b[posBatchLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[posCRC:], Checksum(b))
	return b
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	records := []Record{{Offset: 0, Key: []byte("k"), Value: []byte("v")}, {Offset: 1, Value: []byte("w")}}
	raw := mustEncode(t, 0, records, DefaultBatchOptions())
	first := 1 + int(raw[HeaderSize])>>1 // size of the first record
	big := mustEncode(t, 0, sampleRecords(0, 3, 100, 9), DefaultBatchOptions())
	setU32 := func(pos int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[pos:], v); return b }
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrShortBatch},
		{"header only", raw[:HeaderSize-1], ErrShortBatch},
		{"cut", raw[:len(raw)-1], ErrShortBatch},
		{"magic 1", func() []byte { b := bytes.Clone(raw); b[posMagic] = 1; return b }(), ErrBadMagic},
		{"length below header", func() []byte { b := bytes.Clone(raw); binary.BigEndian.PutUint32(b[posBatchLength:], 10); return b }(), ErrBadLength},
		{"negative count", corrupt(raw, setU32(posRecordCount, 0xffffffff)), ErrBadLength},
		{"count too big to fit", corrupt(raw, setU32(posRecordCount, 1<<30)), ErrCorrupt},
		{"count one too many", corrupt(big, setU32(posRecordCount, 4)), ErrCorrupt},
		{"count one too few", corrupt(raw, setU32(posRecordCount, 1)), ErrCorrupt},
		{"trailing byte", corrupt(raw, func(b []byte) []byte { return append(b, 0) }), ErrCorrupt},
		{"offset past last delta", corrupt(raw, setU32(posLastOffsetDelta, 0)), ErrCorrupt},
		{"unknown codec", corrupt(raw, func(b []byte) []byte { b[posAttributes+1] |= 5; return b }), ErrCodec},
		{"gzip garbage", corrupt(raw, func(b []byte) []byte { b[posAttributes+1] |= byte(CodecGzip); return b }), ErrCorrupt},
		{"zstd garbage", corrupt(raw, func(b []byte) []byte { b[posAttributes+1] |= byte(CodecZstd); return b }), ErrCorrupt},
		{"repeated offset", corrupt(raw, func(b []byte) []byte {
			// Second record's offset delta (after length, attributes and a
			// one-byte timestamp delta) from 1 to 0.
			b[HeaderSize+first+3] = 0
			return b
		}), ErrCorrupt},
		{"padded varint", corrupt(raw, func(b []byte) []byte {
			// The first record's timestamp delta 0 written as 0x80 0x00, and
			// its length grown by one to match.
			p := HeaderSize
			out := append(bytes.Clone(b[:p+3]), 0x80)
			out = append(out, b[p+3:]...)
			out[p] += 2
			return out
		}), ErrCorrupt},
		{"negative header count", corrupt(raw, func(b []byte) []byte {
			b[HeaderSize+first-1] = 0x01 // varint -1 in place of 0
			return b
		}), ErrCorrupt},
	}
	for _, tt := range tests {
		b, err := Decode(tt.in)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err %v, want %v", tt.name, err, tt.want)
		}
		if b != nil {
			t.Errorf("%s: non-nil batch with error", tt.name)
		}
	}
}

func TestDecodeLimit(t *testing.T) {
	t.Parallel()
	records := []Record{{Offset: 0, Value: make([]byte, 64<<10)}} // zeros: tiny compressed
	for _, c := range allCodecs[1:] {
		raw := mustEncode(t, 0, records, withCodec(c))
		if _, err := DecodeLimit(raw, 32<<10); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: err %v, want ErrTooLarge", c, err)
		}
		if _, err := DecodeLimit(raw, 128<<10); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

func TestScanner(t *testing.T) {
	t.Parallel()
	var log []byte
	var starts []int
	for i := range 3 {
		starts = append(starts, len(log))
		log = append(log, mustEncode(t, Offset(i*10), sampleRecords(Offset(i*10), 10, 30, uint64(i)), withCodec(allCodecs[i]))...)
	}
	clean := len(log)

	t.Run("clean end", func(t *testing.T) {
		s := Batches(log)
		var got []Offset
		for s.Next() {
			if _, err := Check(s.Batch()); err != nil {
				t.Fatal(err)
			}
			got = append(got, s.Header().BaseOffset)
		}
		if s.Err() != nil || s.Pos() != clean || !reflect.DeepEqual(got, []Offset{0, 10, 20}) {
			t.Fatalf("err %v, pos %d, bases %v", s.Err(), s.Pos(), got)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		for _, cut := range []int{1, HeaderSize - 1, HeaderSize + 3, clean - starts[2] - 1} {
			s := Batches(log[:clean-cut])
			n := 0
			for s.Next() {
				n++
			}
			if !errors.Is(s.Err(), ErrShortBatch) || n != 2 || s.Pos() != starts[2] {
				t.Errorf("cut %d: %d batches, err %v, pos %d", cut, n, s.Err(), s.Pos())
			}
		}
	})
	t.Run("bad magic", func(t *testing.T) {
		bad := bytes.Clone(log)
		bad[starts[1]+posMagic] = 0
		s := Batches(bad)
		n := 0
		for s.Next() {
			n++
		}
		if !errors.Is(s.Err(), ErrBadMagic) || n != 1 || s.Pos() != starts[1] {
			t.Errorf("%d batches, err %v, pos %d", n, s.Err(), s.Pos())
		}
	})
}

func TestRecordBodySize(t *testing.T) {
	t.Parallel()
	for _, r := range []kmsg.Record{
		{},
		{TimestampDelta64: -1 << 40, OffsetDelta: 1 << 30, Key: make([]byte, 300), Value: []byte{}},
		{Headers: []kmsg.Header{{Key: "k"}, {Key: string(make([]byte, 200)), Value: make([]byte, 70000)}}},
	} {
		if got, want := recordBodySize(&r), len(r.AppendTo(nil))-1; got != want {
			t.Errorf("recordBodySize = %d, encoded body is %d bytes", got, want)
		}
	}
}
