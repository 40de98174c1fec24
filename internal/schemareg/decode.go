package schemareg

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/bufbuild/protocompile/linker"
	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Records that name their schema carry Confluent's wire format before the
// payload, so a reader can find the schema in a registry:
//
//	+-------+-----------------+----------------------------+-----------+
//	| magic | schema id       | message indexes            | payload   |
//	| 0x00  | uint32, big end | Protobuf only: zigzag      | Avro      |
//	|       |                 | varint count, then count   | binary,   |
//	|       |                 | zigzag varints; count 0    | Protobuf, |
//	|       |                 | means [0] (the first msg)  | JSON text |
//	+-------+-----------------+----------------------------+-----------+

// WireHeaderSize is the magic byte and the schema id.
const WireHeaderSize = 5

var (
	// ErrNoWireHeader: a value without the magic byte and schema id.
	ErrNoWireHeader = errors.New("no Confluent wire-format header (magic byte 0 and a 4-byte schema id)")
	// ErrUnknownID: no live schema has the id.
	ErrUnknownID = errors.New("unknown schema id")
)

// SplitWire returns a wire-format value's schema id and what follows the
// header (for Protobuf, the message indexes and the payload).
func SplitWire(b []byte) (id int, rest []byte, err error) {
	if len(b) < WireHeaderSize || b[0] != 0 {
		return 0, nil, ErrNoWireHeader
	}
	return int(binary.BigEndian.Uint32(b[1:WireHeaderSize])), b[WireHeaderSize:], nil
}

// Compiled is a registered schema ready to validate and decode payloads.
// It is immutable and safe for concurrent use.
type Compiled struct {
	ID   int
	Type SchemaType
	// Subjects are the subjects with a live version of this schema, sorted.
	Subjects []string
	p        *parsed
	main     protoreflect.FileDescriptor // Protobuf: the registered file
}

// Compile returns the schema with id compiled (with its references), or an
// error wrapping ErrUnknownID if no live version has it.
func (s *State) Compile(id int) (*Compiled, error) {
	e := s.byID(id)
	if e == nil || e.Deleted {
		return nil, fmt.Errorf("%w %d", ErrUnknownID, id)
	}
	p, err := compile(s, entryRequest(e))
	if err != nil {
		return nil, fmt.Errorf("schema id %d: %w", id, err)
	}
	c := &Compiled{ID: id, Type: SchemaType(e.SchemaType), p: p}
	if c.Type == "" {
		c.Type = Avro
	}
	for subj, vs := range s.subjects {
		for _, v := range vs {
			if v.ID == id && !v.Deleted {
				c.Subjects = append(c.Subjects, subj)
				break
			}
		}
	}
	slices.Sort(c.Subjects)
	if p.proto != nil {
		c.main = mainFile(p.proto)
	}
	return c, nil
}

// mainFile is the registered file among the compiled ones (the others are
// its references and the standard imports).
func mainFile(fs linker.Files) protoreflect.FileDescriptor {
	for _, f := range fs {
		if f.Path() == "schema.proto" {
			return f
		}
	}
	return nil
}

// HasSubject reports whether subject has a live version of the schema.
func (c *Compiled) HasSubject(subject string) bool {
	_, ok := slices.BinarySearch(c.Subjects, subject)
	return ok
}

// RecordName is the name RecordNameStrategy derives a subject from: an
// Avro named type's full name, the Protobuf message's full name (the one
// rest's message indexes select), a JSON Schema's "title". "" if it has
// none.
func (c *Compiled) RecordName(rest []byte) string {
	switch c.Type {
	case Avro:
		if n, ok := c.p.avro.(avro.NamedSchema); ok {
			return n.FullName()
		}
	case Protobuf:
		if md, _, err := c.message(rest); err == nil {
			return string(md.FullName())
		}
	case JSON:
		if t, ok := c.p.json["title"].(string); ok {
			return t
		}
	}
	return ""
}

// message reads Protobuf message indexes and returns the message they
// select and the payload after them.
func (c *Compiled) message(rest []byte) (protoreflect.MessageDescriptor, []byte, error) {
	if c.main == nil {
		return nil, nil, errors.New("no registered .proto file")
	}
	n, w := binary.Varint(rest)
	if w <= 0 || n < 0 || n > 64 {
		return nil, nil, errors.New("bad message indexes")
	}
	rest = rest[w:]
	idx := []int64{0}
	if n > 0 {
		idx = idx[:0]
		for range n {
			i, w := binary.Varint(rest)
			if w <= 0 {
				return nil, nil, errors.New("bad message indexes")
			}
			idx = append(idx, i)
			rest = rest[w:]
		}
	}
	msgs := c.main.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i < 0 || int(i) >= msgs.Len() {
			return nil, nil, fmt.Errorf("message index %d out of range", i)
		}
		md = msgs.Get(int(i))
		msgs = md.Messages()
	}
	return md, rest, nil
}

// Validate reports why rest (what follows the wire header) does not decode
// against the schema, or nil.
func (c *Compiled) Validate(rest []byte) error {
	_, err := c.decode(rest)
	return err
}

// Decode returns rest decoded as JSON: Avro's generic form, Protobuf's
// canonical JSON mapping, or the JSON document itself.
func (c *Compiled) Decode(rest []byte) (json.RawMessage, error) {
	v, err := c.decode(rest)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case json.RawMessage:
		return v, nil
	case proto.Message:
		return protojson.Marshal(v)
	default:
		return json.Marshal(v)
	}
}

func (c *Compiled) decode(rest []byte) (any, error) {
	switch c.Type {
	case Avro:
		// Not avro.Unmarshal: it takes running out of bytes for success,
		// so a truncated payload would pass.
		r := avro.NewReader(nil, 0).Reset(rest)
		v := r.ReadNext(c.p.avro)
		switch {
		case errors.Is(r.Error, io.EOF):
			return nil, fmt.Errorf("avro: payload ends early (%d bytes)", len(rest))
		case r.Error != nil:
			return nil, fmt.Errorf("avro: %w", r.Error)
		}
		if r.Peek(); r.Error == nil {
			return nil, errors.New("avro: bytes left after the value")
		}
		return v, nil
	case Protobuf:
		md, payload, err := c.message(rest)
		if err != nil {
			return nil, fmt.Errorf("protobuf: %w", err)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(payload, m); err != nil {
			return nil, fmt.Errorf("protobuf %s: %w", md.FullName(), err)
		}
		return m, nil
	case JSON:
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(rest))
		if err != nil {
			return nil, fmt.Errorf("json: %w", err)
		}
		if err := c.p.jsonSchema.Validate(doc); err != nil {
			return nil, fmt.Errorf("jsonschema: %s", oneLine(err.Error()))
		}
		return json.RawMessage(rest), nil
	}
	return nil, fmt.Errorf("unknown schema type %q", c.Type)
}

func oneLine(s string) string {
	return string(bytes.Join(bytes.Fields([]byte(s)), []byte(" ")))
}
