package ingest

import (
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/record"
)

const amountSchema = `{"type":"object","properties":{"amount":{"type":"number"}},"required":["amount"]}`

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		spec       Spec
		key, value []byte
		want       string // substring of the reason; "" means valid
	}{
		{"none", Spec{Mode: ModeNone}, nil, []byte("{"), ""},
		{"json ok", Spec{Mode: ModeJSON}, nil, []byte(`{"a":1}`), ""},
		{"json tombstone", Spec{Mode: ModeJSON}, nil, nil, ""},
		{"json bad", Spec{Mode: ModeJSON}, nil, []byte(`{"a":}`), "json: byte 6: invalid character '}'"},
		{"json truncated", Spec{Mode: ModeJSON}, nil, []byte(`{"a":1`), "json: unexpected end of input"},
		{"json empty", Spec{Mode: ModeJSON}, nil, []byte{}, "json: empty value"},
		{"json two docs", Spec{Mode: ModeJSON}, nil, []byte(`1 2`), "more than one JSON document"},
		{"schema ok", Spec{Mode: ModeJSONSchema, Schema: amountSchema}, nil, []byte(`{"amount":3.5}`), ""},
		{"schema type", Spec{Mode: ModeJSONSchema, Schema: amountSchema}, nil, []byte(`{"amount":"3"}`), "jsonschema: /amount: got string, want number"},
		{"schema missing", Spec{Mode: ModeJSONSchema, Schema: amountSchema}, nil, []byte(`{}`), "jsonschema: /: missing property 'amount'"},
		{"schema not json", Spec{Mode: ModeJSONSchema, Schema: amountSchema}, nil, []byte(`nope`), "json: byte 2: invalid character"},
		{"key required null", Spec{Mode: ModeNone, KeyRequired: true}, nil, []byte(`x`), "key: required, got null"},
		{"key required empty", Spec{Mode: ModeJSON, KeyRequired: true}, []byte{}, []byte(`1`), "key: required, got an empty key"},
		{"key required ok", Spec{Mode: ModeJSON, KeyRequired: true}, []byte("k"), []byte(`1`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := Compile(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := v.Validate(tc.key, tc.value)
			switch {
			case tc.want == "" && got != "":
				t.Fatalf("reason %q, want valid", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Fatalf("reason %q, want it to contain %q", got, tc.want)
			}
		})
	}
}

func TestCompile(t *testing.T) {
	t.Parallel()
	a, err := Compile(Spec{Mode: ModeJSONSchema, Schema: amountSchema})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compile(Spec{Mode: ModeJSONSchema, Schema: amountSchema})
	if a != b {
		t.Fatal("the same spec compiled twice")
	}
	if v, err := Compile(Spec{Mode: ModeNone}); v != nil || err != nil {
		t.Fatalf("inactive spec: %v, %v", v, err)
	}
	for _, bad := range []string{"", "{", `{"type":"nonsense"}`, `{"$ref":"file:///etc/passwd"}`, `{"$ref":"https://example.com/s.json"}`} {
		if _, err := Compile(Spec{Mode: ModeJSONSchema, Schema: bad}); err == nil {
			t.Errorf("schema %q compiled", bad)
		}
	}
	if _, err := ParseMode("xml"); err == nil {
		t.Error("mode xml accepted")
	}
}

func TestQuarantineRoundTrip(t *testing.T) {
	t.Parallel()
	r := record.Record{Timestamp: 42, Key: []byte("k"), Value: []byte("v"),
		Headers: []record.RecordHeader{{Key: "trace", Value: []byte("1")}}}
	q := Quarantine(r, "json: bad", Source{Topic: "orders", Partition: 2, Offset: 17})
	if q.Timestamp != 42 || string(q.Key) != "k" || string(q.Value) != "v" || len(q.Headers) != 5 {
		t.Fatalf("quarantined %+v", q)
	}
	in := Inspect(q.Headers)
	if !in.OK || in.Reason != "json: bad" || in.Source != (Source{"orders", 2, 17}) || len(in.Headers) != 1 || in.Headers[0].Key != "trace" {
		t.Fatalf("inspected %+v", in)
	}
	if Inspect(r.Headers).OK {
		t.Fatal("a record without DLQ headers inspected OK")
	}
}
