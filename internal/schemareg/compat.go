package schemareg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SchemaType is a registered schema's format.
type SchemaType string

// The formats Confluent's registry knows.
const (
	Avro     SchemaType = "AVRO"
	JSON     SchemaType = "JSON"
	Protobuf SchemaType = "PROTOBUF"
)

func parseSchemaType(s string) (SchemaType, error) {
	switch s {
	case "", "AVRO":
		return Avro, nil
	case "JSON", "PROTOBUF":
		return SchemaType(s), nil
	}
	return "", fmt.Errorf("unknown schema type %q", s)
}

// Reference names another registered schema a schema uses.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// resolved is a schema with its references' texts, depth first.
type resolved struct {
	typ  SchemaType
	text string
	refs []namedText
}

type namedText struct{ name, text string }

// parsed is a schema compiled by its format's library.
type parsed struct {
	avro  avro.Schema
	proto linker.Files
	json  map[string]any
	// jsonSchema is json compiled, to validate documents against.
	jsonSchema *jsonschema.Schema
}

// parse compiles a schema with its references, or returns why it is invalid.
func parse(r resolved) (*parsed, error) {
	switch r.typ {
	case Avro:
		cache := &avro.SchemaCache{}
		for _, ref := range r.refs {
			if _, err := avro.ParseWithCache(ref.text, "", cache); err != nil {
				return nil, fmt.Errorf("reference %s: %w", ref.name, err)
			}
		}
		s, err := avro.ParseWithCache(r.text, "", cache)
		if err != nil {
			return nil, err
		}
		return &parsed{avro: s}, nil
	case Protobuf:
		files := map[string]string{"schema.proto": r.text}
		for _, ref := range r.refs {
			files[ref.name] = ref.text
		}
		c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: func(path string) (io.ReadCloser, error) {
				if t, ok := files[path]; ok {
					return io.NopCloser(strings.NewReader(t)), nil
				}
				return nil, fmt.Errorf("%s: not found", path)
			},
		})}
		fs, err := c.Compile(context.Background(), "schema.proto")
		if err != nil {
			return nil, err
		}
		return &parsed{proto: fs}, nil
	case JSON:
		c := jsonschema.NewCompiler()
		// A registered schema must not make the broker read its disk or
		// call out: references are registered subjects, nothing else.
		c.UseLoader(noLoader{})
		var doc any
		for _, ref := range r.refs {
			d, err := jsonschema.UnmarshalJSON(strings.NewReader(ref.text))
			if err != nil {
				return nil, fmt.Errorf("reference %s: %w", ref.name, err)
			}
			if err := c.AddResource(ref.name, d); err != nil {
				return nil, err
			}
		}
		d, err := jsonschema.UnmarshalJSON(strings.NewReader(r.text))
		if err != nil {
			return nil, err
		}
		if err := c.AddResource("schema.json", d); err != nil {
			return nil, err
		}
		js, err := c.Compile("schema.json")
		if err != nil {
			return nil, err
		}
		doc = d
		m, _ := doc.(map[string]any)
		return &parsed{json: m, jsonSchema: js}, nil
	}
	return nil, fmt.Errorf("unknown schema type %q", r.typ)
}

// canonical is the text two registrations are compared by: compact JSON
// for Avro and JSON Schema, the text itself for Protobuf.
func canonical(typ SchemaType, text string) string {
	if typ == Protobuf {
		return strings.TrimSpace(text)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return text
	}
	return b.String()
}

// readable reports why data written with writer cannot be read with
// reader, or nil. Both have the same type.
func readable(reader, writer *parsed) error {
	switch {
	case reader.avro != nil:
		return avro.NewSchemaCompatibility().Compatible(reader.avro, writer.avro)
	case reader.proto != nil:
		return protoCompatible(reader.proto, writer.proto)
	default:
		return jsonReadable(reader.json, writer.json)
	}
}

// protoCompatible compares two compiled Protobuf schemas. The rules are
// checked in both directions at once (Protobuf readers skip unknown
// fields, so adding is safe either way): every message of writer must
// still exist in reader; every field number of a writer message must exist
// in reader with the same kind and cardinality, unless reader reserves the
// number; a field name kept under a different number is a renumbering.
func protoCompatible(reader, writer linker.Files) error {
	rmsgs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	for _, f := range reader {
		collectMessages(f.Messages(), rmsgs)
	}
	wmsgs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	for _, f := range writer {
		collectMessages(f.Messages(), wmsgs)
	}
	for name, wm := range wmsgs {
		rm, ok := rmsgs[name]
		if !ok {
			return fmt.Errorf("message %s removed", name)
		}
		wf := wm.Fields()
		for i := 0; i < wf.Len(); i++ {
			w := wf.Get(i)
			r := rm.Fields().ByNumber(w.Number())
			if r == nil {
				if byName := rm.Fields().ByName(w.Name()); byName != nil {
					return fmt.Errorf("field %s.%s renumbered %d → %d", name, w.Name(), w.Number(), byName.Number())
				}
				if rm.ReservedRanges().Has(w.Number()) {
					continue
				}
				return fmt.Errorf("field %s.%s (%d) removed", name, w.Name(), w.Number())
			}
			if r.Kind() != w.Kind() || r.Cardinality() != w.Cardinality() {
				return fmt.Errorf("field %s %d changed type %s %s → %s %s", name, w.Number(), w.Cardinality(), w.Kind(), r.Cardinality(), r.Kind())
			}
			if w.Kind() == protoreflect.MessageKind && r.Message().FullName() != w.Message().FullName() {
				return fmt.Errorf("field %s %d changed message type %s → %s", name, w.Number(), w.Message().FullName(), r.Message().FullName())
			}
		}
	}
	return nil
}

func collectMessages(ms protoreflect.MessageDescriptors, into map[protoreflect.FullName]protoreflect.MessageDescriptor) {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if m.IsMapEntry() {
			continue
		}
		into[m.FullName()] = m
		collectMessages(m.Messages(), into)
	}
}

// jsonReadable checks the top-level object rules of JSON Schema: data
// valid under writer must be valid under reader. Checked: a property
// required by reader but not by writer; a property writer allows that
// reader forbids (reader has additionalProperties:false and does not list
// it; or writer allows any additional property and reader does not); a
// property whose "type" keyword changed (widening "integer" → "number" is
// allowed); a changed top-level "type". Not checked: nested objects beyond
// the property's "type", $ref targets, enums, numeric and string bounds,
// combinators (allOf/anyOf/oneOf), patternProperties.
func jsonReadable(reader, writer map[string]any) error {
	if !sameType(reader["type"], writer["type"]) {
		return fmt.Errorf("type changed %v → %v", writer["type"], reader["type"])
	}
	rprops, _ := reader["properties"].(map[string]any)
	wprops, _ := writer["properties"].(map[string]any)
	wreq := stringSet(writer["required"])
	for name := range stringSet(reader["required"]) {
		if !wreq[name] {
			return fmt.Errorf("property %q newly required", name)
		}
	}
	if closed(reader) {
		if !closed(writer) {
			return fmt.Errorf("additional properties no longer allowed")
		}
		for name := range wprops {
			if _, ok := rprops[name]; !ok {
				return fmt.Errorf("property %q removed under additionalProperties:false", name)
			}
		}
	}
	for name, w := range wprops {
		r, ok := rprops[name]
		if !ok {
			continue
		}
		rm, _ := r.(map[string]any)
		wm, _ := w.(map[string]any)
		if !sameType(rm["type"], wm["type"]) {
			return fmt.Errorf("property %q type changed %v → %v", name, wm["type"], rm["type"])
		}
	}
	return nil
}

func closed(s map[string]any) bool {
	b, ok := s["additionalProperties"].(bool)
	return ok && !b
}

// sameType reports whether every value of writer's "type" is allowed by
// reader's; a missing reader type allows everything.
func sameType(reader, writer any) bool {
	if reader == nil {
		return true
	}
	allowed := stringSet(reader)
	if s, ok := reader.(string); ok {
		allowed = map[string]bool{s: true}
	}
	if allowed["number"] {
		allowed["integer"] = true
	}
	if writer == nil {
		return false
	}
	ws := stringSet(writer)
	if s, ok := writer.(string); ok {
		ws = map[string]bool{s: true}
	}
	for t := range ws {
		if !allowed[t] {
			return false
		}
	}
	return true
}

func stringSet(v any) map[string]bool {
	out := map[string]bool{}
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}

// Compatibility levels and the directions each checks.
var levels = map[string]struct{ backward, forward, transitive bool }{
	"NONE":                {},
	"BACKWARD":            {backward: true},
	"BACKWARD_TRANSITIVE": {backward: true, transitive: true},
	"FORWARD":             {forward: true},
	"FORWARD_TRANSITIVE":  {forward: true, transitive: true},
	"FULL":                {backward: true, forward: true},
	"FULL_TRANSITIVE":     {backward: true, forward: true, transitive: true},
}

// checkCompatible checks candidate against existing (oldest first) under
// level and returns the reasons it fails; none means compatible.
func checkCompatible(level string, candidate *parsed, existing []*parsed) []string {
	l := levels[level]
	if !l.transitive && len(existing) > 1 {
		existing = existing[len(existing)-1:]
	}
	var msgs []string
	for _, old := range existing {
		if candidate.proto != nil {
			// Protobuf's rules are symmetric: checked once, new against old.
			if l.backward || l.forward {
				if err := protoCompatible(candidate.proto, old.proto); err != nil {
					msgs = append(msgs, err.Error())
				}
			}
			continue
		}
		if l.backward {
			if err := readable(candidate, old); err != nil {
				msgs = append(msgs, "backward: "+err.Error())
			}
		}
		if l.forward {
			if err := readable(old, candidate); err != nil {
				msgs = append(msgs, "forward: "+err.Error())
			}
		}
	}
	return msgs
}

// noLoader refuses every $ref that is not a registered reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: only registered references may be used", url)
}
