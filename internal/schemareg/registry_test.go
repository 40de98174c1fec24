package schemareg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

type client struct {
	t   *testing.T
	srv *httptest.Server
}

func newClient(t *testing.T, store Store) *client {
	srv := httptest.NewServer(NewHandler(store))
	t.Cleanup(srv.Close)
	return &client{t: t, srv: srv}
}

// do sends a request and returns the status and the decoded body.
func (c *client) do(method, path string, body any) (int, any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.srv.URL+path, rd)
	req.Header.Set("Content-Type", ContentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		c.t.Errorf("%s %s: content type %q", method, path, ct)
	}
	var v any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &v); err != nil {
		c.t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
	}
	return resp.StatusCode, v
}

// want checks a request's status and body (compared as JSON).
func (c *client) want(method, path string, body any, status int, wantBody string) any {
	c.t.Helper()
	got, v := c.do(method, path, body)
	var w any
	if err := json.Unmarshal([]byte(wantBody), &w); err != nil {
		c.t.Fatalf("bad want %q", wantBody)
	}
	if got != status || !reflect.DeepEqual(v, w) {
		c.t.Errorf("%s %s: got %d %v, want %d %s", method, path, got, v, status, wantBody)
	}
	return v
}

// wantCode checks only the status and the error_code.
func (c *client) wantCode(method, path string, body any, status, code int) {
	c.t.Helper()
	got, v := c.do(method, path, body)
	m, _ := v.(map[string]any)
	if got != status || m == nil || m["error_code"] != float64(code) || m["message"] == "" {
		c.t.Errorf("%s %s: got %d %v, want %d error_code %d", method, path, got, v, status, code)
	}
}

func avroRec(fields string) map[string]any {
	return map[string]any{"schema": `{"type":"record","name":"User","fields":[` + fields + `]}`}
}

const (
	fName    = `{"name":"name","type":"string"}`
	fAgeDef  = `{"name":"age","type":"int","default":0}`
	fAgeNo   = `{"name":"age","type":"int"}`
	fAgeLong = `{"name":"age","type":"long","default":0}`
)

func TestRoutesAndErrors(t *testing.T) {
	t.Parallel()
	c := newClient(t, NewMemStore())
	c.want("GET", "/subjects", nil, 200, `[]`)
	c.wantCode("GET", "/subjects/a/versions", nil, 404, 40401)
	c.wantCode("GET", "/subjects/a/versions/1", nil, 404, 40401)
	c.wantCode("GET", "/schemas/ids/1", nil, 404, 40403)
	c.wantCode("GET", "/nope", nil, 404, 404)
	c.want("POST", "/subjects/a/versions", avroRec(fName), 200, `{"id":1}`)
	c.want("POST", "/subjects/a/versions", avroRec(fName), 200, `{"id":1}`) // idempotent
	c.want("POST", "/subjects/a/versions", avroRec(fName+","+fAgeDef), 200, `{"id":2}`)
	c.want("POST", "/subjects/b/versions", avroRec(fName), 200, `{"id":1}`) // shared across subjects
	c.want("GET", "/subjects", nil, 200, `["a","b"]`)
	c.want("GET", "/subjects/a/versions", nil, 200, `[1,2]`)
	c.want("GET", "/subjects/a/versions/latest", nil, 200,
		`{"subject":"a","version":2,"id":2,"schema":"{\"type\":\"record\",\"name\":\"User\",\"fields\":[`+jsq(fName)+`,`+jsq(fAgeDef)+`]}"}`)
	c.want("GET", "/subjects/a/versions/1/schema", nil, 200, `{"type":"record","name":"User","fields":[`+fName+`]}`)
	c.wantCode("GET", "/subjects/a/versions/3", nil, 404, 40402)
	c.wantCode("GET", "/subjects/a/versions/0", nil, 422, 42202)
	c.wantCode("GET", "/subjects/a/versions/x", nil, 422, 42202)
	c.want("GET", "/schemas/ids/1/versions", nil, 200, `[{"subject":"a","version":1},{"subject":"b","version":1}]`)
	c.want("GET", "/schemas/ids/1", nil, 200, `{"schema":"{\"type\":\"record\",\"name\":\"User\",\"fields\":[`+jsq(fName)+`]}"}`)
	c.want("POST", "/subjects/a", avroRec(fName), 200,
		`{"subject":"a","version":1,"id":1,"schema":"{\"type\":\"record\",\"name\":\"User\",\"fields\":[`+jsq(fName)+`]}"}`)
	c.wantCode("POST", "/subjects/a", avroRec(fAgeDef), 404, 40403)
	c.wantCode("POST", "/subjects/zz", avroRec(fName), 404, 40401)
	c.wantCode("POST", "/subjects/a/versions", map[string]any{"schema": `{"type":"nope"}`}, 422, 42201)
	c.wantCode("POST", "/subjects/a/versions", map[string]any{"schema": `{}`, "schemaType": "XML"}, 422, 42201)
	// BACKWARD (default): a new field without a default is incompatible.
	c.wantCode("POST", "/subjects/a/versions", avroRec(fName+","+fAgeDef+","+`{"name":"x","type":"int"}`), 409, 409)
	c.want("GET", "/schemas/types", nil, 200, `["JSON","PROTOBUF","AVRO"]`)
}

func jsq(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestConfigAndCompatibilityRoute(t *testing.T) {
	t.Parallel()
	c := newClient(t, NewMemStore())
	c.want("GET", "/config", nil, 200, `{"compatibilityLevel":"BACKWARD"}`)
	c.wantCode("PUT", "/config", map[string]string{"compatibility": "SIDEWAYS"}, 422, 42203)
	c.want("PUT", "/config", map[string]string{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	c.want("GET", "/config", nil, 200, `{"compatibilityLevel":"FULL"}`)
	c.want("DELETE", "/config", nil, 200, `{"compatibilityLevel":"FULL"}`)
	c.want("GET", "/config", nil, 200, `{"compatibilityLevel":"BACKWARD"}`)
	c.want("DELETE", "/config", nil, 200, `{"compatibilityLevel":"BACKWARD"}`)
	c.want("PUT", "/config", map[string]string{"compatibility": "FULL"}, 200, `{"compatibility":"FULL"}`)
	c.wantCode("GET", "/config/s", nil, 404, 40408)
	c.want("GET", "/config/s?defaultToGlobal=true", nil, 200, `{"compatibilityLevel":"FULL"}`)
	c.want("PUT", "/config/s", map[string]string{"compatibility": "none"}, 200, `{"compatibility":"NONE"}`)
	c.want("GET", "/config/s", nil, 200, `{"compatibilityLevel":"NONE"}`)
	c.want("POST", "/subjects/s/versions", avroRec(fName), 200, `{"id":1}`)
	c.want("POST", "/subjects/s/versions", avroRec(fAgeNo), 200, `{"id":2}`) // NONE
	c.want("DELETE", "/config/s", nil, 200, `{"compatibilityLevel":"NONE"}`)
	c.wantCode("DELETE", "/config/s", nil, 404, 40408)
	c.want("POST", "/compatibility/subjects/s/versions/latest", avroRec(fAgeNo+","+fName), 200, `{"is_compatible":false}`)
	c.want("POST", "/compatibility/subjects/s/versions/latest", avroRec(fAgeNo), 200, `{"is_compatible":true}`)
	c.want("POST", "/compatibility/subjects/s/versions/1", avroRec(fName+","+fAgeDef), 200, `{"is_compatible":true}`)
	c.wantCode("POST", "/compatibility/subjects/s/versions/9", avroRec(fName), 404, 40402)
	c.wantCode("POST", "/compatibility/subjects/nope/versions/latest", avroRec(fName), 404, 40401)
	_, v := c.do("POST", "/compatibility/subjects/s/versions/latest?verbose=true", avroRec(fName))
	if m := v.(map[string]any); m["is_compatible"] != false || len(m["messages"].([]any)) == 0 {
		t.Errorf("verbose: %v", v)
	}
}

// TestAvroLevels registers v1 (name), v2 (name, age default 0) then tries
// candidates under each level; transitive levels also check v1.
func TestAvroLevels(t *testing.T) {
	t.Parallel()
	v1, v2 := fName, fName+","+fAgeDef
	cases := []struct {
		level, cand string
		ok          bool
	}{
		{"BACKWARD", fName + "," + fAgeDef + `,{"name":"x","type":"int"}`, false}, // new field, no default
		{"BACKWARD", fName + "," + fAgeLong, true},                                // int → long promotion
		{"BACKWARD", fName, true},                                                 // drop a field: reader ignores it
		{"FORWARD", fName, true},                                                  // removed field had a default
		{"FORWARD", fAgeDef, false},                                               // removed name (no default)
		{"FORWARD", fName + "," + fAgeLong, false},                                // old int reader can't read long
		{"FULL", fName + "," + fAgeDef + `,{"name":"x","type":"int","default":1}`, true},
		{"FULL", fName + "," + fAgeDef + `,{"name":"x","type":"int"}`, false},
		{"NONE", `{"name":"z","type":"bytes"}`, true},
		{"BACKWARD", fName + `,{"name":"age","type":"int"}`, true}, // against v2 only: v2 data carries age
		{"BACKWARD_TRANSITIVE", fName + `,{"name":"age","type":"int"}`, false},
		{"FORWARD_TRANSITIVE", fName + `,{"name":"age","type":"int","default":0},{"name":"y","type":"string","default":""}`, true},
		{"FULL_TRANSITIVE", fName + `,{"name":"age","type":"int"}`, false},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%d_%s", i, tc.level), func(t *testing.T) {
			t.Parallel()
			c := newClient(t, NewMemStore())
			c.want("PUT", "/config/s", map[string]string{"compatibility": "NONE"}, 200, `{"compatibility":"NONE"}`)
			c.do("POST", "/subjects/s/versions", avroRec(v1))
			c.do("POST", "/subjects/s/versions", avroRec(v2))
			c.do("PUT", "/config/s", map[string]string{"compatibility": tc.level})
			st, v := c.do("POST", "/subjects/s/versions", avroRec(tc.cand))
			if (st == 200) != tc.ok {
				t.Errorf("%s %s: %d %v, want ok=%v", tc.level, tc.cand, st, v, tc.ok)
			}
		})
	}
}

// TestTransitive: v1 {name}, v2 {name, age default}, candidate {name, age
// without default}: backward against v2 alone passes (v2 data has age), but
// v1 data lacks age and the candidate has no default.
func TestTransitive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		ok    bool
	}{{"BACKWARD", true}, {"BACKWARD_TRANSITIVE", false}, {"FULL", true}, {"FULL_TRANSITIVE", false}} {
		c := newClient(t, NewMemStore())
		c.do("POST", "/subjects/s/versions", avroRec(fName))
		c.do("POST", "/subjects/s/versions", avroRec(fName+","+fAgeDef))
		c.do("PUT", "/config/s", map[string]string{"compatibility": tc.level})
		st, v := c.do("POST", "/subjects/s/versions", avroRec(fName+","+fAgeNo))
		if (st == 200) != tc.ok {
			t.Errorf("%s: %d %v, want ok=%v", tc.level, st, v, tc.ok)
		}
	}
}
