package record

import "testing"

// 100 records of 1 KiB, the shape of a typical producer batch.
func benchCodecs() []Codec { return []Codec{CodecNone, CodecLZ4, CodecZstd, CodecSnappy, CodecGzip} }

func BenchmarkEncode(b *testing.B) {
	records := sampleRecords(0, 100, 1024, 1)
	for _, c := range benchCodecs() {
		b.Run(c.String(), func(b *testing.B) {
			opts := withCodec(c)
			b.SetBytes(100 * 1024)
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				var err error
				if dst, err = AppendBatch(dst[:0], 0, records, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(dst)), "batch-bytes")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	records := sampleRecords(0, 100, 1024, 1)
	for _, c := range benchCodecs() {
		b.Run(c.String(), func(b *testing.B) {
			raw := mustEncode(b, 0, records, withCodec(c))
			b.SetBytes(100 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	raw := mustEncode(b, 0, sampleRecords(0, 100, 1024, 1), withCodec(CodecNone))
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Check(raw); err != nil {
			b.Fatal(err)
		}
	}
}
