package schemareg

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestDeleteRules(t *testing.T) {
	t.Parallel()
	c := newClient(t, NewMemStore())
	c.do("POST", "/subjects/s/versions", avroRec(fName))
	c.do("POST", "/subjects/s/versions", avroRec(fName+","+fAgeDef))
	c.do("POST", "/subjects/s/versions", avroRec(fName+","+fAgeDef+`,{"name":"c","type":"int","default":1}`))
	c.wantCode("DELETE", "/subjects/s/versions/1?permanent=true", nil, 404, 40407) // not soft-deleted first
	c.want("DELETE", "/subjects/s/versions/1", nil, 200, `1`)
	c.wantCode("DELETE", "/subjects/s/versions/1", nil, 404, 40406)
	c.wantCode("GET", "/subjects/s/versions/1", nil, 404, 40402)
	c.want("GET", "/subjects/s/versions/1?deleted=true", nil, 200,
		`{"subject":"s","version":1,"id":1,"schema":"{\"type\":\"record\",\"name\":\"User\",\"fields\":[`+jsq(fName)+`]}"}`)
	c.want("GET", "/subjects/s/versions", nil, 200, `[2,3]`)
	c.want("GET", "/subjects/s/versions?deleted=true", nil, 200, `[1,2,3]`)
	c.want("DELETE", "/subjects/s/versions/1?permanent=true", nil, 200, `1`)
	c.want("GET", "/subjects/s/versions?deleted=true", nil, 200, `[2,3]`)
	c.wantCode("GET", "/schemas/ids/1", nil, 404, 40403)
	c.wantCode("DELETE", "/subjects/s/versions/7", nil, 404, 40402)
	c.wantCode("DELETE", "/subjects/s?permanent=true", nil, 404, 40405)
	c.want("DELETE", "/subjects/s", nil, 200, `[2,3]`)
	c.wantCode("DELETE", "/subjects/s", nil, 404, 40404)
	c.want("GET", "/subjects", nil, 200, `[]`)
	c.want("GET", "/subjects?deleted=true", nil, 200, `["s"]`)
	c.wantCode("GET", "/subjects/s/versions", nil, 404, 40401)
	// The id survives a soft delete; a re-registration gets a new version.
	c.want("GET", "/schemas/ids/2", nil, 200, `{"schema":"{\"type\":\"record\",\"name\":\"User\",\"fields\":[`+jsq(fName)+`,`+jsq(fAgeDef)+`]}"}`)
	c.want("POST", "/subjects/s/versions", avroRec(fName+","+fAgeDef), 200, `{"id":2}`)
	c.want("GET", "/subjects/s/versions", nil, 200, `[4]`)
	c.want("DELETE", "/subjects/s", nil, 200, `[4]`)
	c.want("DELETE", "/subjects/s?permanent=true", nil, 200, `[2,3,4]`)
	c.wantCode("DELETE", "/subjects/s?permanent=true", nil, 404, 40401)
	c.want("GET", "/subjects?deleted=true", nil, 200, `[]`)
	// Ids are not reused after a hard delete.
	c.want("POST", "/subjects/t/versions", avroRec(fAgeNo), 200, `{"id":4}`)
}

func TestModes(t *testing.T) {
	t.Parallel()
	c := newClient(t, NewMemStore())
	c.want("GET", "/mode", nil, 200, `{"mode":"READWRITE"}`)
	c.wantCode("PUT", "/mode", map[string]string{"mode": "SLEEPY"}, 422, 42204)
	c.wantCode("GET", "/mode/s", nil, 404, 40409)
	c.wantCode("POST", "/subjects/s/versions", map[string]any{"schema": `"string"`, "id": 5}, 422, 42205)
	c.want("POST", "/subjects/s/versions", map[string]any{"schema": `"string"`}, 200, `{"id":1}`)
	c.wantCode("PUT", "/mode", map[string]string{"mode": "IMPORT"}, 422, 42205) // subjects exist
	c.want("PUT", "/mode/s", map[string]string{"mode": "READONLY"}, 200, `{"mode":"READONLY"}`)
	c.wantCode("POST", "/subjects/s/versions", map[string]any{"schema": `"int"`}, 422, 42205)
	c.wantCode("DELETE", "/subjects/s", nil, 422, 42205)
	c.want("POST", "/subjects/t/versions", map[string]any{"schema": `"int"`}, 200, `{"id":2}`) // other subjects write
	c.want("DELETE", "/mode/s", nil, 200, `{"mode":"READONLY"}`)
	c.want("PUT", "/mode", map[string]string{"mode": "READONLY"}, 200, `{"mode":"READONLY"}`)
	c.wantCode("POST", "/subjects/t/versions", map[string]any{"schema": `"long"`}, 422, 42205)
	c.want("GET", "/mode/t?defaultToGlobal=true", nil, 200, `{"mode":"READONLY"}`)
	c.want("PUT", "/mode?force=true", map[string]string{"mode": "IMPORT"}, 200, `{"mode":"IMPORT"}`)
	// IMPORT: ids and versions as given, no compatibility check.
	c.want("POST", "/subjects/u/versions", map[string]any{"schema": `"bytes"`, "id": 100, "version": 7}, 200, `{"id":100}`)
	c.want("GET", "/subjects/u/versions", nil, 200, `[7]`)
	c.want("GET", "/schemas/ids/100", nil, 200, `{"schema":"\"bytes\""}`)
	c.wantCode("POST", "/subjects/v/versions", map[string]any{"schema": `"float"`, "id": 100, "version": 1}, 422, 42205)
	c.wantCode("POST", "/subjects/u/versions", map[string]any{"schema": `"float"`, "id": 101, "version": 7}, 422, 42205)
	c.want("PUT", "/mode", map[string]string{"mode": "READWRITE"}, 200, `{"mode":"READWRITE"}`)
	c.want("POST", "/subjects/w/versions", map[string]any{"schema": `"double"`}, 200, `{"id":101}`)
}

func TestReferences(t *testing.T) {
	t.Parallel()
	c := newClient(t, NewMemStore())
	addr := `{"type":"record","name":"Address","namespace":"x","fields":[{"name":"city","type":"string"}]}`
	c.want("POST", "/subjects/addr/versions", map[string]any{"schema": addr}, 200, `{"id":1}`)
	user := map[string]any{
		"schema":     `{"type":"record","name":"User","namespace":"x","fields":[{"name":"home","type":"x.Address"}]}`,
		"references": []Reference{{Name: "x.Address", Subject: "addr", Version: 1}},
	}
	c.want("POST", "/subjects/user/versions", user, 200, `{"id":2}`)
	c.want("POST", "/subjects/user/versions", user, 200, `{"id":2}`)
	_, v := c.do("GET", "/subjects/user/versions/1", nil)
	if refs := v.(map[string]any)["references"]; !reflect.DeepEqual(refs, []any{map[string]any{"name": "x.Address", "subject": "addr", "version": float64(1)}}) {
		t.Errorf("references: %v", v)
	}
	noRef := map[string]any{"schema": user["schema"]}
	c.wantCode("POST", "/subjects/other/versions", noRef, 422, 42201) // x.Address unknown
	bad := map[string]any{"schema": user["schema"], "references": []Reference{{Name: "x.Address", Subject: "addr", Version: 9}}}
	c.wantCode("POST", "/subjects/other/versions", bad, 422, 42201)
	c.wantCode("DELETE", "/subjects/addr/versions/1", nil, 422, 42206)
	c.wantCode("DELETE", "/subjects/addr", nil, 422, 42206)
	c.want("DELETE", "/subjects/user", nil, 200, `[1]`)
	c.want("DELETE", "/subjects/addr", nil, 200, `[1]`)
}

func TestProtobufAndJSON(t *testing.T) {
	t.Parallel()
	proto := func(body string) map[string]any {
		return map[string]any{"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\npackage p;\nmessage M {\n" + body + "\n}\n"}
	}
	js := func(s string) map[string]any { return map[string]any{"schemaType": "JSON", "schema": s} }
	c := newClient(t, NewMemStore())
	c.want("PUT", "/config", map[string]string{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	c.want("POST", "/subjects/p/versions", proto("string a = 1; int32 b = 2;"), 200, `{"id":1}`)
	c.want("POST", "/subjects/p/versions", proto("string a = 1; int32 b = 2;"), 200, `{"id":1}`)
	c.wantCode("POST", "/subjects/p/versions", proto("string a = 1; int32 b = "), 422, 42201)
	c.wantCode("POST", "/subjects/p/versions", proto("string a = 1;"), 409, 409)               // removed
	c.wantCode("POST", "/subjects/p/versions", proto("string a = 1; int32 b = 3;"), 409, 409)  // renumbered
	c.wantCode("POST", "/subjects/p/versions", proto("string a = 1; string b = 2;"), 409, 409) // type changed
	c.wantCode("POST", "/subjects/p/versions", proto("string a = 1; repeated int32 b = 2;"), 409, 409)
	c.want("POST", "/subjects/p/versions", proto("string a = 1; reserved 2;"), 200, `{"id":2}`)
	c.want("POST", "/subjects/p/versions", proto("string a = 1; reserved 2; bool c = 3;"), 200, `{"id":3}`)
	_, v := c.do("GET", "/subjects/p/versions/1", nil)
	if v.(map[string]any)["schemaType"] != "PROTOBUF" {
		t.Errorf("schemaType: %v", v)
	}

	c.want("PUT", "/config/j", map[string]string{"compatibility": "BACKWARD"}, 200, `{"compatibility":"BACKWARD"}`)
	base := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`
	c.want("POST", "/subjects/j/versions", js(base), 200, `{"id":4}`)
	c.wantCode("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","b"]}`), 409, 409)
	c.wantCode("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":"integer"}}}`), 409, 409)
	c.wantCode("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":false}`), 409, 409)
	c.wantCode("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":7}}}`), 422, 42201)
	c.want("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}`), 200, `{"id":5}`)
	c.want("PUT", "/config/j", map[string]string{"compatibility": "FORWARD"}, 200, `{"compatibility":"FORWARD"}`)
	// FORWARD: the old schema (requires a) cannot read data the new one allows without a.
	c.wantCode("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`), 409, 409)
	c.want("POST", "/subjects/j/versions", js(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`), 200, `{"id":6}`)
}

// TestReplay: a second store rebuilt from the first's records (and from
// their encoded bytes) answers every read the same.
func TestReplay(t *testing.T) {
	t.Parallel()
	mem := NewMemStore()
	c := newClient(t, mem)
	c.do("POST", "/subjects/a/versions", avroRec(fName))
	c.do("POST", "/subjects/a/versions", avroRec(fName+","+fAgeDef))
	c.do("POST", "/subjects/b/versions", avroRec(fName))
	c.do("PUT", "/config", map[string]string{"compatibility": "FULL"})
	c.do("PUT", "/config/b", map[string]string{"compatibility": "NONE"})
	c.do("PUT", "/mode/b", map[string]string{"mode": "READONLY"})
	c.do("DELETE", "/subjects/a/versions/1", nil)
	c.do("DELETE", "/subjects/a/versions/1?permanent=true", nil)
	c.do("POST", "/subjects/d/versions", avroRec(fAgeNo))
	c.do("DELETE", "/subjects/d", nil)
	var pairs [][2][]byte
	for _, r := range mem.Log() {
		k, v, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, [2][]byte{k, v})
	}
	fromBytes, err := ReplayEncoded(pairs)
	if err != nil {
		t.Fatal(err)
	}
	reads := []string{"/subjects", "/subjects?deleted=true", "/subjects/a/versions", "/subjects/a/versions?deleted=true",
		"/subjects/a/versions/1", "/subjects/a/versions/2", "/subjects/b/versions/latest", "/subjects/d/versions?deleted=true",
		"/schemas/ids/1", "/schemas/ids/2", "/schemas/ids/3", "/schemas/ids/1/versions", "/config", "/config/b", "/config/a",
		"/mode", "/mode/b"}
	for _, store := range []*MemStore{Replay(mem.Log()), fromBytes} {
		r := newClient(t, store)
		for _, path := range reads {
			s1, v1 := c.do("GET", path, nil)
			s2, v2 := r.do("GET", path, nil)
			if s1 != s2 || !reflect.DeepEqual(v1, v2) {
				t.Errorf("%s: live %d %v, replayed %d %v", path, s1, v1, s2, v2)
			}
		}
		// The next id continues after the replayed ones.
		r.want("POST", "/subjects/e/versions", avroRec(fName+","+fAgeLong), 200, `{"id":4}`)
	}
	c.want("POST", "/subjects/e/versions", avroRec(fName+","+fAgeLong), 200, `{"id":4}`)
}

func TestRecordCodec(t *testing.T) {
	t.Parallel()
	s := "sub"
	k, v, err := Record{Key: Key{KeyType: KeySchema, Subject: &s, Version: 2},
		Schema: &SchemaValue{Subject: s, Version: 2, ID: 9, Schema: `"int"`, SchemaType: "AVRO"}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(k) != `{"keytype":"SCHEMA","subject":"sub","version":2,"magic":1}` {
		t.Errorf("key %s", k)
	}
	var m map[string]any
	_ = json.Unmarshal(v, &m)
	if m["id"] != float64(9) || m["deleted"] != false {
		t.Errorf("value %s", v)
	}
	k, v, _ = Record{Key: Key{KeyType: KeyConfig}, Config: &ConfigValue{CompatibilityLevel: "FULL"}}.Encode()
	if string(k) != `{"keytype":"CONFIG","magic":0}` || string(v) != `{"compatibilityLevel":"FULL"}` {
		t.Errorf("config %s %s", k, v)
	}
	// Confluent's own bytes, including a null subject, decode.
	for _, kv := range [][2]string{
		{`{"keytype":"CONFIG","subject":null,"magic":0}`, `{"compatibilityLevel":"BACKWARD"}`},
		{`{"keytype":"MODE","subject":"x","magic":0}`, `{"mode":"IMPORT"}`},
		{`{"keytype":"DELETE_SUBJECT","subject":"x","magic":0}`, `{"subject":"x","version":3}`},
		{`{"keytype":"NOOP","magic":0}`, ``},
		{`{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}`, `{"subject":"x","version":1,"id":1,"schema":"\"int\"","deleted":false}`},
	} {
		var val []byte
		if kv[1] != "" {
			val = []byte(kv[1])
		}
		if _, err := DecodeRecord([]byte(kv[0]), val); err != nil {
			t.Errorf("%s: %v", kv[0], err)
		}
	}
	for _, kv := range [][2]string{
		{`{"keytype":"WHAT","magic":0}`, `{}`},
		{`{"keytype":"SCHEMA","version":1,"magic":1}`, `{}`},
		{`{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}`, `{"subject":"y","version":1,"id":1,"schema":"\"int\""}`},
		{`{"keytype":"CONFIG","magic":0}`, `{"compatibilityLevel":"SOMETIMES"}`},
		{`not json`, `{}`},
	} {
		if _, err := DecodeRecord([]byte(kv[0]), []byte(kv[1])); err == nil {
			t.Errorf("%s %s: decoded", kv[0], kv[1])
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}`), []byte(`{"subject":"x","version":1,"id":1,"schema":"\"int\"","deleted":true}`))
	f.Add([]byte(`{"keytype":"CONFIG","subject":null,"magic":0}`), []byte(`{"compatibilityLevel":"FULL"}`))
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"x","version":1,"magic":0}`), []byte(`{"subject":"x","version":1,"id":1,"schema":"\"int\""}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"x","magic":0}`), []byte(`{"subject":"x","version":2}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := DecodeRecord(key, value)
		if err != nil {
			return
		}
		// A decoded record re-encodes to one that decodes the same, and
		// applying it never panics.
		k, v, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeRecord(k, v)
		if err != nil {
			t.Fatalf("re-decode %s %s: %v", k, v, err)
		}
		// Encode writes magic 1 on every SCHEMA key (as Confluent's
		// registry does), whatever magic the decoded key carried.
		if r.Key.KeyType == KeySchema {
			r.Key.Magic = 1
		}
		if !reflect.DeepEqual(r, r2) && r.Key.KeyType != KeyNoop {
			t.Fatalf("round trip: %+v != %+v", r, r2)
		}
		k2, v2, err := r2.Encode()
		if err != nil || !bytes.Equal(k, k2) || !bytes.Equal(v, v2) {
			t.Fatalf("encoding is not a fixed point: %s %s -> %s %s (%v)", k, v, k2, v2, err)
		}
		newState().Apply(r)
	})
}
