package ingest

import (
	"encoding/json"
	"strings"
	"testing"
)

var jsonCases = []string{
	``, ` `, `1`, `-0`, `-`, `01`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e10`, `.5`, `+1`,
	`"`, `""`, `"a`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00"`, `"\x"`, "\"tab\there\"", "\"\x01\"",
	`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"aaaaaaaaaaaaaa"`, `"aaaaaaaaaaaaaaaa\naaaaaaaaaaaaaaa"`, "\"héllo wörld ünïcode\"",
	`true`, `tru`, `false`, `null`, `nul`, `nulll`, `true false`,
	`{}`, `{`, `}`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":{"b":[1,2,{"c":null}]}}`,
	`[]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[1]]`, `{"a":[}`, `[{]}`, ` [ 1 , 2 ] `,
	"\t{\n\"k\" : \"v\"\r}\n", `{"a":"b"}x`, `{"":""}`, `[1,"2",true,false,null,{},[]]`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range jsonCases {
		if got, want := validJSON([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validJSON(%.40q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%.80q) = %v, encoding/json says %v", b, got, want)
		}
	})
}
