package record

import (
	"slices"
	"testing"
)

// TestDeleteHorizon pins KIP-534's encoding: the horizon is BaseTimestamp
// under attribute bit 6, record timestamps stay what the producer gave, and
// Options carries the horizon through a rewrite.
func TestDeleteHorizon(t *testing.T) {
	t.Parallel()
	records := sampleRecords(10, 5, 40, 3)
	records[2].Value = nil // a tombstone
	const horizon = 1_800_000_000_000
	for _, codec := range []Codec{CodecNone, CodecZstd} {
		opts := DefaultBatchOptions()
		opts.Codec, opts.DeleteHorizon = codec, horizon
		b, err := Decode(mustEncode(t, 10, records, opts))
		if err != nil {
			t.Fatal(err)
		}
		if b.Attributes&AttrDeleteHorizon == 0 || b.BaseTimestamp != horizon || b.DeleteHorizon() != horizon {
			t.Fatalf("%v: attributes %#x base timestamp %d horizon %d", codec, b.Attributes, b.BaseTimestamp, b.DeleteHorizon())
		}
		if b.Options().DeleteHorizon != horizon {
			t.Fatalf("%v: Options lost the horizon", codec)
		}
		for i, r := range b.Records {
			w := records[i]
			if r.Offset != w.Offset || r.Timestamp != w.Timestamp || !slices.Equal(r.Key, w.Key) ||
				!slices.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
				t.Fatalf("%v: record %d = %+v, want %+v", codec, i, r, w)
			}
		}
		want := slices.MaxFunc(records, func(x, y Record) int { return int(x.Timestamp - y.Timestamp) }).Timestamp
		if b.MaxTimestamp != want {
			t.Fatalf("%v: max timestamp %d, want %d", codec, b.MaxTimestamp, want)
		}
	}
	plain := mustEncode(t, 0, records[:1], DefaultBatchOptions())
	h, _ := Check(plain)
	if h.DeleteHorizon() != 0 {
		t.Fatal("a batch without the attribute reports a horizon")
	}
}
