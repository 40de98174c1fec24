package schemareg

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

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

// first is the registered file's first message (index [0]), or nil.
func (c *Compiled) first() protoreflect.MessageDescriptor {
	if c.main == nil || c.main.Messages().Len() == 0 {
		return nil
	}
	return c.main.Messages().Get(0)
}

// Validate reports why rest (what follows the wire header) does not decode
// against the schema, or nil.
func (c *Compiled) Validate(rest []byte) error {
	if c.Type == Avro {
		return avroValid(c.p.avro, rest)
	}
	_, err := c.decode(rest)
	return err
}

// avroValid walks an Avro payload by its schema without building a value
// (the produce path judges every record; decoding each into Go values cost
// more than the append): every union branch, enum symbol and block must
// be in range, nothing may be missing and nothing left over. The reading
// itself is hamba/avro's.
func avroValid(s avro.Schema, payload []byte) error {
	r := avroReaders.Get().(*avro.Reader).Reset(payload)
	r.Error = nil // Reset keeps it
	defer func() {
		r.Reset(nil)
		avroReaders.Put(r)
	}()
	budget := len(payload) + 1024 // items a payload can hold: zero-size items (null) are bounded too
	walkAvro(r, s, 0, &budget)
	switch {
	case errors.Is(r.Error, io.EOF):
		return fmt.Errorf("avro: payload ends early (%d bytes)", len(payload))
	case r.Error != nil:
		return fmt.Errorf("avro: %w", r.Error)
	}
	if r.Peek(); r.Error == nil {
		return errors.New("avro: bytes left after the value")
	}
	return nil
}

// avroReaders are recycled: one per judged record otherwise.
var avroReaders = sync.Pool{New: func() any { return avro.NewReader(nil, 0) }}

func walkAvro(r *avro.Reader, s avro.Schema, depth int, budget *int) {
	if r.Error != nil {
		return
	}
	if depth > 64 {
		r.ReportError("validate", "nesting deeper than 64")
		return
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		walkAvro(r, s.Schema(), depth+1, budget)
	case *avro.RecordSchema:
		for _, f := range s.Fields() {
			walkAvro(r, f.Type(), depth+1, budget)
		}
	case *avro.UnionSchema:
		i := r.ReadLong()
		if types := s.Types(); r.Error == nil && (i < 0 || i >= int64(len(types))) {
			r.ReportError("validate", fmt.Sprintf("union branch %d of %d", i, len(types)))
		} else if r.Error == nil {
			walkAvro(r, types[i], depth+1, budget)
		}
	case *avro.EnumSchema:
		if i := r.ReadInt(); r.Error == nil && (i < 0 || int(i) >= len(s.Symbols())) {
			r.ReportError("validate", fmt.Sprintf("enum %s symbol %d of %d", s.FullName(), i, len(s.Symbols())))
		}
	case *avro.FixedSchema:
		r.SkipNBytes(s.Size())
	case *avro.ArraySchema:
		walkBlocks(r, budget, func() { walkAvro(r, s.Items(), depth+1, budget) })
	case *avro.MapSchema:
		walkBlocks(r, budget, func() { r.SkipString(); walkAvro(r, s.Values(), depth+1, budget) })
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			r.ReadBool()
		case avro.Int:
			r.ReadInt()
		case avro.Long:
			r.ReadLong()
		case avro.Float:
			r.SkipFloat()
		case avro.Double:
			r.SkipDouble()
		case avro.String:
			r.SkipString()
		case avro.Bytes:
			r.SkipBytes()
		}
	default:
		r.ReportError("validate", fmt.Sprintf("schema type %s", s.Type()))
	}
}

// walkBlocks reads an array's or a map's blocks, calling item for each.
func walkBlocks(r *avro.Reader, budget *int, item func()) {
	for r.Error == nil {
		n, _ := r.ReadBlockHeader()
		if n == 0 || r.Error != nil {
			return
		}
		if *budget -= int(n); n < 0 || *budget < 0 {
			r.ReportError("validate", fmt.Sprintf("a block of %d items", n))
			return
		}
		for range n {
			if item(); r.Error != nil {
				return
			}
		}
	}
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
		// The walk first: it bounds block counts (a generic decode would
		// allocate for whatever count a payload claims). Not
		// avro.Unmarshal: it takes running out of bytes for success.
		if err := avroValid(c.p.avro, rest); err != nil {
			return nil, err
		}
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
		if err == nil {
			m := dynamicpb.NewMessage(md)
			if err = proto.Unmarshal(payload, m); err == nil {
				return m, nil
			}
			err = fmt.Errorf("protobuf %s: %w", md.FullName(), err)
		} else {
			err = fmt.Errorf("protobuf: %w", err)
		}
		// @kafkajs/confluent-schema-registry writes no message indexes:
		// the first message follows the id directly. Its first byte is a
		// field tag (8 or more), which Confluent's framing would read as
		// a count of 4 or more nested indexes: a value that fails as
		// indexed is tried as that client's framing before it is refused.
		if first := c.first(); first != nil && len(rest) > 0 && rest[0] >= 8 {
			m := dynamicpb.NewMessage(first)
			if proto.Unmarshal(rest, m) == nil {
				return m, nil
			}
		}
		return nil, err
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
