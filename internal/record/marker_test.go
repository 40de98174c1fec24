package record

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A marker Strand writes must read back as Kafka's ControlRecordKey and
// EndTxnMarker (kmsg decodes them as a client does), and DecodeMarker
// must read what it wrote.
func TestMarkerRoundTrip(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b, err := EncodeMarker(42, 7, Marker{Commit: commit, CoordinatorEpoch: 3}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 7 || h.BaseSequence != -1 || h.NumRecords != 1 {
			t.Fatalf("header %+v", h)
		}
		m, err := DecodeMarker(b)
		if err != nil || m.Commit != commit || m.CoordinatorEpoch != 3 {
			t.Fatalf("DecodeMarker = %+v, %v", m, err)
		}
		dec, _ := Decode(b)
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(dec.Records[0].Key); err != nil {
			t.Fatal(err)
		}
		want := kmsg.ControlRecordKeyTypeAbort
		if commit {
			want = kmsg.ControlRecordKeyTypeCommit
		}
		if key.Type != want {
			t.Fatalf("kmsg reads type %v, want %v", key.Type, want)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(dec.Records[0].Value); err != nil || val.CoordinatorEpoch != 3 {
			t.Fatalf("EndTxnMarker %+v %v", val, err)
		}
	}
	plain, _ := Encode(0, []Record{{Key: []byte("k")}}, DefaultBatchOptions())
	if _, err := DecodeMarker(plain); !errors.Is(err, ErrNotMarker) {
		t.Fatalf("plain batch: %v", err)
	}
}

// FuzzDecodeMarker: no byte string panics DecodeMarker, and a marker it
// reads encodes back to one that reads the same.
func FuzzDecodeMarker(f *testing.F) {
	for _, commit := range []bool{false, true} {
		b, _ := EncodeMarker(7, 2, Marker{Commit: commit, CoordinatorEpoch: 5}, 1)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMarker(b)
		if err != nil {
			return
		}
		again, err := EncodeMarker(1, 0, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := DecodeMarker(again); err != nil || m2 != m {
			t.Fatalf("re-encoded marker reads %+v, %v; want %+v", m2, err, m)
		}
	})
}
