package ingest

import (
	"encoding/binary"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/schemareg"
)

// memSource is SchemaSource over a registry in memory.
type memSource struct{ s *schemareg.MemStore }

func (m memSource) Compiled(id int) (c *schemareg.Compiled, err error) {
	m.s.View(func(st *schemareg.State) { c, err = st.Compile(id) })
	return c, err
}

func registerSchema(t *testing.T, h *schemareg.Handler, subject, typ, schema string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"schema": schema, "schemaType": typ})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/subjects/"+subject+"/versions", strings.NewReader(string(body))))
	var out struct{ ID int }
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.ID == 0 {
		t.Fatalf("register %s: %d %s", subject, w.Code, w.Body)
	}
	return out.ID
}

func wire(id int, payload ...byte) []byte {
	b := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	return append(b, payload...)
}

const (
	avroOrder = `{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}`
	protoShop = `syntax = "proto3"; package shop; message A { int64 n = 1; } message B { string s = 1; }`
	jsonThing = `{"title":"shop.Thing","type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
)

// TestSchemaValidator judges wire-format records against a registry, in
// each format and under each subject name strategy.
func TestSchemaValidator(t *testing.T) {
	t.Parallel()
	store := schemareg.NewMemStore()
	h := schemareg.NewHandler(store)
	avroID := registerSchema(t, h, "orders-value", "AVRO", avroOrder)
	registerSchema(t, h, "shop.Order", "AVRO", avroOrder) // the same schema: the same id
	registerSchema(t, h, "orders-shop.Order", "AVRO", avroOrder)
	protoID := registerSchema(t, h, "orders-value", "PROTOBUF", protoShop)
	registerSchema(t, h, "shop.B", "PROTOBUF", protoShop)
	jsonID := registerSchema(t, h, "orders-value", "JSON", jsonThing)
	otherID := registerSchema(t, h, "other-value", "AVRO", `"string"`)
	src := memSource{store}

	bind := func(spec Spec) *Validator {
		spec.Mode = ModeSchema
		v, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		return v.Bind(src, "orders")
	}
	byTopic, byRecord, byTopicRecord := bind(Spec{}), bind(Spec{Strategy: RecordName}), bind(Spec{Strategy: TopicRecordName})
	protoB := append([]byte{0x02, 0x02}, 0x0a, 0x01, 'x') // indexes [1] (message B), s = "x"
	for _, c := range []struct {
		name  string
		v     *Validator
		value []byte
		want  string // "" valid, else a prefix of the reason
	}{
		{"avro", byTopic, wire(avroID, 0x02), ""},
		{"avro truncated", byTopic, wire(avroID), "schema: id 1 (AVRO): avro: payload ends early"},
		{"avro trailing bytes", byTopic, wire(avroID, 0x02, 0x02), "schema: id 1 (AVRO): avro: bytes left"},
		{"tombstone", byTopic, nil, ""},
		{"no header", byTopic, []byte(`{"n":1}`), "schema: no Confluent wire-format header"},
		{"unknown id", byTopic, wire(999, 0x02), "schema: id 999: unknown schema id"},
		{"other subject", byTopic, wire(otherID, 0x02, 'x'), `schema: id 4 is not a schema of subject "orders-value" (it is registered under other-value)`},
		{"protobuf first message", byTopic, wire(protoID, 0x00, 0x08, 0x05), ""},
		{"protobuf message B", byTopic, wire(protoID, protoB...), ""},
		{"protobuf without indexes (kafkajs)", byTopic, wire(protoID, 0x08, 0x05), ""},
		{"protobuf without indexes, bad", byTopic, wire(protoID, 0x08), "schema: id 2 (PROTOBUF): protobuf: bad message indexes"},
		{"protobuf truncated", byTopic, wire(protoID, 0x02, 0x02, 0x0a, 0x05, 'x'), "schema: id 2 (PROTOBUF): protobuf shop.B:"},
		{"protobuf bad index", byTopic, wire(protoID, 0x02, 0x08), "schema: id 2 (PROTOBUF): protobuf: message index 4 out of range"},
		{"json", byTopic, wire(jsonID, []byte(`{"n":1}`)...), ""},
		{"json invalid", byTopic, wire(jsonID, []byte(`{"n":"x"}`)...), "schema: id 3 (JSON): jsonschema:"},
		{"record name avro", byRecord, wire(avroID, 0x02), ""},
		{"record name protobuf", byRecord, wire(protoID, protoB...), ""},
		{"record name protobuf A", byRecord, wire(protoID, 0x00, 0x08, 0x05), `schema: id 2 is not a schema of subject "shop.A"`},
		{"record name json", byRecord, wire(jsonID, []byte(`{"n":1}`)...), `schema: id 3 is not a schema of subject "shop.Thing"`},
		{"record name of a primitive", byRecord, wire(otherID, 0x02, 'x'), "schema: id 4: AVRO schema has no record name"},
		{"topic record name", byTopicRecord, wire(avroID, 0x02), ""},
		{"topic record name protobuf", byTopicRecord, wire(protoID, protoB...), `schema: id 2 is not a schema of subject "orders-shop.B"`},
	} {
		got := c.v.Validate([]byte("k"), c.value)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	keys := bind(Spec{KeySchema: true})
	if got := keys.Validate([]byte("plain"), wire(avroID, 0x02)); !strings.HasPrefix(got, "key schema: no Confluent") {
		t.Errorf("plain key: %q", got)
	}
	registerSchema(t, h, "orders-key", "AVRO", `"long"`)
	keyID := 5
	if got := keys.Validate(wire(keyID, 0x04), wire(avroID, 0x02)); got != "" {
		t.Errorf("wire-format key: %q", got)
	}
	if got := keys.Validate(nil, wire(avroID, 0x02)); got != "" {
		t.Errorf("null key: %q", got)
	}

	unbound, _ := Compile(Spec{Mode: ModeSchema})
	if got := unbound.Validate(nil, wire(999)); got != "" {
		t.Errorf("unbound: %q, want only the header checked", got)
	}
	if got := unbound.Validate(nil, []byte("x")); !strings.HasPrefix(got, "schema: no Confluent") {
		t.Errorf("unbound without header: %q", got)
	}
}

func TestParseStrategy(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Strategy{
		"TopicNameStrategy": TopicName,
		"io.confluent.kafka.serializers.subject.RecordNameStrategy": RecordName,
		" topicrecordnamestrategy ":                                 TopicRecordName,
	} {
		if got, err := ParseStrategy(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseStrategy("Nope"); err == nil {
		t.Error("Nope: want an error")
	}
}
