package dlq

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

// TestAllValidAgreesWithDecode: screen's fast path judges a batch exactly as
// validating every decoded record does, for any records, codec and
// validation settings.
func TestAllValidAgreesWithDecode(t *testing.T) {
	values := []string{`{"a":1}`, `[1,2]`, `"s"`, `nope`, `{"a":`, ``, `12`, `{"amount":"x"}`}
	rapid.Check(t, func(t *rapid.T) {
		spec := ingest.Spec{
			Mode:        rapid.SampledFrom([]ingest.Mode{ingest.ModeJSON, ingest.ModeJSONSchema}).Draw(t, "mode"),
			Schema:      `{"type":"object","properties":{"amount":{"type":"number"}}}`,
			KeyRequired: rapid.Bool().Draw(t, "keyRequired"),
		}
		v, err := ingest.Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 20).Draw(t, "n")
		recs := make([]record.Record, n)
		for i := range recs {
			r := record.Record{Offset: record.Offset(i), Timestamp: 1000}
			if rapid.Bool().Draw(t, "hasKey") {
				r.Key = []byte(rapid.StringN(0, 5, -1).Draw(t, "key"))
			}
			if !rapid.Bool().Draw(t, "null") {
				r.Value = []byte(rapid.SampledFrom(values).Draw(t, "value"))
			}
			if rapid.Bool().Draw(t, "header") {
				r.Headers = []record.RecordHeader{{Key: "h", Value: []byte("v")}}
			}
			recs[i] = r
		}
		opts := record.DefaultBatchOptions()
		opts.Codec = rapid.SampledFrom([]record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}).Draw(t, "codec")
		batch, err := record.Encode(0, recs, opts)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseHeader(batch)
		want := true
		for _, r := range recs {
			if v.Validate(r.Key, r.Value) != "" {
				want = false
			}
		}
		if got, _ := allValid(batch, h, v); got != want {
			t.Fatalf("allValid %v, decoding says %v", got, want)
		}
		if ok, _ := allValid(batch[:len(batch)-1], h, v); len(batch) > record.HeaderSize+1 && ok {
			t.Fatal("allValid accepted a truncated batch")
		}
	})
}
