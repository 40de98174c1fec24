package record

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// sampleRecords returns n records with offsets base, base+1, … and values of
// roughly size bytes of semi-compressible, log-like text.
func sampleRecords(base Offset, n, size int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	records := make([]Record, n)
	for i := range records {
		var v []byte
		for len(v) < size {
			v = fmt.Appendf(v, `{"user":%d,"event":"click","path":"/item/%d","ms":%d},`,
				rng.IntN(1000), rng.IntN(100000), rng.IntN(5000))
		}
		records[i] = Record{
			Offset:    base + Offset(i),
			Timestamp: 1_700_000_000_000 + int64(i)*3 - int64(rng.IntN(5)),
			Key:       fmt.Appendf(nil, "user-%d", rng.IntN(1000)),
			Value:     v[:size],
		}
		if i%3 == 0 {
			records[i].Headers = []RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}}
		}
	}
	return records
}

// mustEncode encodes or fails the test.
func mustEncode(tb testing.TB, base Offset, records []Record, opts BatchOptions) []byte {
	tb.Helper()
	b, err := Encode(base, records, opts)
	if err != nil {
		tb.Fatalf("Encode: %v", err)
	}
	return b
}

// withCodec returns DefaultBatchOptions with codec c.
func withCodec(c Codec) BatchOptions {
	o := DefaultBatchOptions()
	o.Codec = c
	return o
}

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}
