package schemareg

import "testing"

// FuzzParse: no schema text, in any format, panics the libraries' parsers
// or the compatibility rules.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), `{"type":"record","name":"U","fields":[{"name":"a","type":"int","default":0}]}`)
	f.Add(uint8(1), `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`)
	f.Add(uint8(2), "syntax = \"proto3\";\nmessage M { string a = 1; }\n")
	f.Fuzz(func(t *testing.T, kind uint8, text string) {
		typ := []SchemaType{Avro, JSON, Protobuf}[int(kind)%3]
		p, err := parse(resolved{typ: typ, text: text})
		if err != nil {
			return
		}
		for level := range levels {
			checkCompatible(level, p, []*parsed{p})
		}
	})
}
