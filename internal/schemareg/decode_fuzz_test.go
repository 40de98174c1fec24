package schemareg

import (
	"context"
	"testing"

	"github.com/hamba/avro/v2"
)

// FuzzValidate: no payload panics the validating walk or the decoders, and
// what the Avro walk (what the produce path runs) accepts, the library's
// generic decoding decodes.
func FuzzValidate(f *testing.F) {
	store := NewMemStore()
	schemas := []struct{ typ, text string }{
		{"AVRO", `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long","string"]},` +
			`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},` +
			`{"name":"l","type":{"type":"array","items":"int"}},{"name":"m","type":{"type":"map","values":"boolean"}},` +
			`{"name":"f","type":{"type":"fixed","name":"F","size":2}},{"name":"d","type":"double"},{"name":"r","type":["null","R"]}]}`},
		{"PROTOBUF", `syntax = "proto3"; message A { int64 n = 1; repeated string s = 2; } message B { A a = 1; bytes b = 2; }`},
		{"JSON", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`},
	}
	for i, s := range schemas {
		subj := "s" + string(rune('a'+i))
		err := store.Write(context.Background(), Record{Key: Key{KeyType: KeySchema, Subject: &subj, Version: 1},
			Schema: &SchemaValue{Subject: subj, Version: 1, ID: i + 1, Schema: s.text, SchemaType: s.typ}})
		if err != nil {
			f.Fatal(err)
		}
	}
	var compiled []*Compiled
	store.View(func(st *State) {
		for i := range schemas {
			c, err := st.Compile(i + 1)
			if err != nil {
				f.Fatal(err)
			}
			compiled = append(compiled, c)
		}
	})
	f.Add(uint8(0), []byte{0x02, 0x02, 0x00, 0x00, 0x01, 'a', 'b', 0, 0, 0, 0, 0, 0, 0, 0, 0x00})
	f.Add(uint8(1), []byte{0x00, 0x08, 0x05})
	f.Add(uint8(1), []byte{0x02, 0x02, 0x0a, 0x02, 0x08, 0x01})
	f.Add(uint8(2), []byte(`{"n":1}`))
	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		c := compiled[int(which)%len(compiled)]
		verr := c.Validate(payload)
		_, derr := c.Decode(payload)
		if verr == nil && derr != nil {
			t.Fatalf("valid, but decoding says %v", derr)
		}
		c.RecordName(payload)
	})
}

// BenchmarkValidateAvro is the per-record cost of strand.validation=schema
// on a one-kilobyte Avro record (the walk the produce path runs), against
// decoding it into Go values as avro.Unmarshal does.
//
//	go test -run '^$' -bench ValidateAvro ./internal/schemareg
func BenchmarkValidateAvro(b *testing.B) {
	store := NewMemStore()
	subj := "orders-value"
	schema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"customer","type":"string"},` +
		`{"name":"amount","type":"double"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"note","type":"bytes"}]}`
	if err := store.Write(context.Background(), Record{Key: Key{KeyType: KeySchema, Subject: &subj, Version: 1},
		Schema: &SchemaValue{Subject: subj, Version: 1, ID: 1, Schema: schema}}); err != nil {
		b.Fatal(err)
	}
	var c *Compiled
	var err error
	store.View(func(st *State) { c, err = st.Compile(1) })
	if err != nil {
		b.Fatal(err)
	}
	payload, err := avro.Marshal(c.p.avro, map[string]any{"id": int64(7), "customer": "c-0007", "amount": 12.5,
		"tags": []any{"a", "b"}, "note": make([]byte, 960)})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Validate(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("generic-decode", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := avro.Unmarshal(c.p.avro, payload, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
