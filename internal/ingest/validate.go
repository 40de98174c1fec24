package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Mode is a topic's strand.validation value.
type Mode string

// The validation modes.
const (
	// ModeNone accepts every record (the default).
	ModeNone Mode = "none"
	// ModeJSON requires every non-null value to be one JSON document.
	ModeJSON Mode = "json"
	// ModeJSONSchema requires every non-null value to be a JSON document
	// satisfying the topic's JSON Schema.
	ModeJSONSchema Mode = "jsonschema"
	// ModeSchema requires every non-null value to carry a schema id of
	// the registry and decode against that schema (see schema.go).
	ModeSchema Mode = "schema"
)

// ParseMode normalises a strand.validation value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeNone, ModeJSON, ModeJSONSchema, ModeSchema:
		return m, nil
	}
	return "", fmt.Errorf("ingest: validation %q: must be one of none, json, jsonschema, schema", s)
}

// Spec is a topic's validation settings. It is comparable: equal Specs
// share one compiled Validator.
type Spec struct {
	Mode Mode
	// Schema is the JSON Schema text (ModeJSONSchema).
	Schema string
	// KeyRequired rejects records with a null or empty key.
	KeyRequired bool
	// KeySchema (ModeSchema) checks non-null keys against the registry too.
	KeySchema bool
	// Strategy (ModeSchema) names the subject a schema must belong to.
	Strategy Strategy
	// Action is what happens to an invalid record (the broker acts on it).
	Action Action
}

// Active reports whether the Spec checks anything: a topic whose Spec is
// inactive takes the produce path's fast lane (batches are not decoded).
func (s Spec) Active() bool { return s.Mode != ModeNone && s.Mode != "" || s.KeyRequired }

// Validator checks records against one Spec. A nil *Validator accepts
// everything.
type Validator struct {
	spec   Spec
	schema *jsonschema.Schema
	// ModeSchema, set by Bind: the registry and the topic.
	schemas SchemaSource
	topic   string
}

// Spec returns the settings the validator was compiled from.
func (v *Validator) Spec() Spec { return v.spec }

// Validate returns "" when the record is valid, else the reason it is not.
//
// A null value (a tombstone) passes the value checks: deleting a key of a
// compacted topic must stay possible whatever its schema. An empty,
// non-null value is not a JSON document and fails them.
func (v *Validator) Validate(key, value []byte) string {
	if v == nil {
		return ""
	}
	if v.spec.KeyRequired && len(key) == 0 {
		if key == nil {
			return "key: required, got null"
		}
		return "key: required, got an empty key"
	}
	if v.spec.Mode == ModeSchema && v.spec.KeySchema && key != nil {
		if reason := v.schemaReason(key, true); reason != "" {
			return reason
		}
	}
	if value == nil {
		return ""
	}
	switch v.spec.Mode {
	case ModeSchema:
		return v.schemaReason(value, false)
	case ModeJSON:
		if validJSON(value) {
			return ""
		}
		return "json: " + syntaxReason(value)
	case ModeJSONSchema:
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
		if err != nil {
			return "json: " + syntaxReason(value)
		}
		if err := v.schema.Validate(doc); err != nil {
			return "jsonschema: " + schemaReason(err)
		}
	}
	return ""
}

// syntaxReason says where value stops being JSON (only called on the slow
// path, once a record is known to be invalid).
func syntaxReason(value []byte) string {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(value))
	err := dec.Decode(&doc)
	if err == nil {
		if _, terr := dec.Token(); terr == nil || dec.More() {
			return fmt.Sprintf("more than one JSON document (extra data after byte %d)", dec.InputOffset())
		}
		return "not a JSON document"
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("byte %d: %s", se.Offset, se.Error())
	case errors.Is(err, io.EOF):
		return "empty value"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("unexpected end of input after %d bytes", len(value))
	}
	return err.Error()
}

// schemaReason renders a jsonschema validation error as one line: each
// failing leaf as `<instance location>: <message>`, joined by "; ".
func schemaReason(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(u *jsonschema.OutputUnit)
	walk = func(u *jsonschema.OutputUnit) {
		if u.Error != nil && len(u.Errors) == 0 {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			parts = append(parts, loc+": "+u.Error.String())
		}
		for i := range u.Errors {
			walk(&u.Errors[i])
		}
	}
	walk(ve.BasicOutput())
	if len(parts) == 0 {
		return strings.ReplaceAll(ve.Error(), "\n", " ")
	}
	const maxParts = 5
	if len(parts) > maxParts {
		parts = append(parts[:maxParts], fmt.Sprintf("and %d more", len(parts)-maxParts))
	}
	return strings.Join(parts, "; ")
}

// Compile returns the Validator for spec, compiling it on first use and
// caching it. It returns nil (accept everything) for an inactive Spec.
// Errors say what is wrong with the schema.
func Compile(spec Spec) (*Validator, error) {
	if !spec.Active() {
		return nil, nil
	}
	cache.Lock()
	defer cache.Unlock()
	if v, ok := cache.m[spec]; ok {
		return v, nil
	}
	v := &Validator{spec: spec}
	if spec.Mode == ModeJSONSchema {
		s, err := compileSchema(spec.Schema)
		if err != nil {
			return nil, err
		}
		v.schema = s
	}
	// Specs are few (one per distinct topic configuration); a bound still
	// keeps a client that alters configs in a loop from growing the cache
	// forever. Clearing it only costs recompilation.
	if len(cache.m) >= maxCached {
		clear(cache.m)
	}
	cache.m[spec] = v
	return v, nil
}

const maxCached = 1024

var cache = struct {
	sync.Mutex
	m map[Spec]*Validator
}{m: make(map[Spec]*Validator)}

// schemaURL is the name the topic's schema is compiled under; a $ref must
// stay inside the schema text (see noLoader).
const schemaURL = "strand:///topic-schema.json"

func compileSchema(text string) (*jsonschema.Schema, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("ingest: strand.validation=jsonschema needs strand.validation.schema")
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("ingest: schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	// Refuse to fetch any $ref from files or the network: a topic config
	// must not make the broker read its disk or call out.
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("ingest: schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("ingest: schema: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return s, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("ingest: schema may not load %s: only references inside the schema are allowed", url)
}
