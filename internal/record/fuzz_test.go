package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedBatches returns valid batches covering every codec, gaps, headers,
// null and empty fields, producers and log-append time.
func seedBatches(tb testing.TB) [][]byte {
	var seeds [][]byte
	for i, c := range allCodecs {
		seeds = append(seeds, mustEncode(tb, Offset(i*100), sampleRecords(Offset(i*100), 4, 40, uint64(i)), withCodec(c)))
	}
	gap := DefaultBatchOptions()
	gap.LastOffset = 9
	seeds = append(seeds, mustEncode(tb, 0, []Record{
		{Offset: 1, Key: nil, Value: nil},
		{Offset: 4, Key: []byte{}, Value: []byte{}, Headers: []RecordHeader{{Key: "k", Value: nil}, {Key: "", Value: []byte("v")}}},
	}, gap))
	idem := BatchOptions{Codec: CodecZstd, ProducerID: 3, ProducerEpoch: 1, BaseSequence: 40, Transactional: true, LeaderEpoch: 2}
	seeds = append(seeds, mustEncode(tb, 7, sampleRecords(7, 3, 10, 9), idem))
	lat := mustEncode(tb, 0, sampleRecords(0, 2, 10, 10), withCodec(CodecGzip))
	SetLogAppendTime(lat, 123456)
	seeds = append(seeds, lat, mustEncode(tb, 0, nil, DefaultBatchOptions()))
	return seeds
}

// FuzzDecode: any input either fails to decode, or is a batch whose CRC checks,
// whose kmsg.RecordBatch re-encodes to the same bytes, and whose records
// survive Encode and Decode again. It never panics.
//
// With fix set, the input's batch length and CRC are first made to match the
// input, so that the fuzzer gets past the checksum to the record parser.
func FuzzDecode(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s, false)
		f.Add(s[:len(s)-1], false)
		f.Add(s[:len(s)-1], true)
	}
	f.Fuzz(func(t *testing.T, in []byte, fix bool) {
		if fix && len(in) >= HeaderSize {
			in = corrupt(in, func(b []byte) []byte { return b })
		}
		b, err := DecodeLimit(in, 1<<20)
		if err != nil {
			if b != nil {
				t.Fatal("batch returned with an error")
			}
			for _, s := range []error{ErrShortBatch, ErrBadMagic, ErrBadLength, ErrCRC, ErrCorrupt, ErrCodec, ErrTooLarge} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		h, err := Check(in)
		if err != nil {
			t.Fatalf("Decode accepted what Check rejects: %v", err)
		}
		raw := in[:h.Size()]
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(raw); err != nil {
			t.Fatalf("kmsg: %v", err)
		}
		if again := kb.AppendTo(nil); !bytes.Equal(again, raw) {
			t.Fatalf("kmsg round trip differs:\n%x\n%x", raw, again)
		}
		if len(b.Records) != int(h.NumRecords) {
			t.Fatalf("%d records, header says %d", len(b.Records), h.NumRecords)
		}

		// Record-level round trip through our own encoder.
		opts := b.Options()
		if b.BaseOffset < 0 || (opts.Transactional && opts.ProducerID < 0) {
			return // not encodable by design
		}
		enc, err := Encode(b.BaseOffset, b.Records, opts)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		b2, err := Decode(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded batch: %v", err)
		}
		if !reflect.DeepEqual(b2.Records, b.Records) && !(len(b.Records) == 0 && len(b2.Records) == 0) {
			t.Fatalf("records changed through Encode:\n%+v\n%+v", b.Records, b2.Records)
		}
		wantAttrs := b.Attributes & (AttrCompressionMask | AttrTimestampType | AttrTransactional | AttrControl)
		if b.DeleteHorizon() > 0 { // KIP-534: the horizon travels through Options
			wantAttrs |= AttrDeleteHorizon
		}
		if b2.LastOffsetDelta != b.LastOffsetDelta || b2.Attributes != wantAttrs {
			t.Fatalf("header changed through Encode:\n%+v\n%+v", b.Header, b2.Header)
		}
	})
}

// FuzzDecompress: every codec on any input either errors or yields at most the
// limit, which compresses and decompresses back to itself. It never panics.
func FuzzDecompress(f *testing.F) {
	text := textPayload(3000)
	for _, c := range allCodecs {
		z, err := Compress(c, text)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(c), z)
		f.Add(uint8(c), z[:len(z)/2])
	}
	f.Add(uint8(CodecSnappy), xerialFrame(text[:100], text[100:]))
	f.Fuzz(func(t *testing.T, codec uint8, in []byte) {
		const limit = 1 << 20
		c := Codec(codec % 8)
		out, err := DecompressLimit(c, in, limit)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrCodec) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%d bytes out, over the limit", len(out))
		}
		z, err := Compress(c, out)
		if err != nil {
			t.Fatalf("Compress: %v", err)
		}
		back, err := DecompressLimit(c, z, limit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip: %d bytes of %d, %v", len(back), len(out), err)
		}
	})
}

// FuzzBatches: scanning never panics, batches tile the input, and it stops
// either at the end or at a framing error.
func FuzzBatches(f *testing.F) {
	var log []byte
	for _, s := range seedBatches(f) {
		log = append(log, s...)
	}
	f.Add(log)
	f.Add(log[:len(log)-7])
	f.Fuzz(func(t *testing.T, in []byte) {
		s := Batches(in)
		pos := 0
		for s.Next() {
			h := s.Header()
			if s.Pos() != pos || !bytes.Equal(s.Batch(), in[pos:pos+len(s.Batch())]) || len(s.Batch()) != h.Size() {
				t.Fatalf("batch at %d is not where the previous ended (%d)", s.Pos(), pos)
			}
			pos += len(s.Batch())
		}
		if s.Pos() != pos {
			t.Fatalf("stopped at %d, after batches ending at %d", s.Pos(), pos)
		}
		if (s.Err() == nil) != (pos == len(in)) {
			t.Fatalf("err %v at %d of %d", s.Err(), pos, len(in))
		}
	})
}
