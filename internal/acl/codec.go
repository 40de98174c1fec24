package acl

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The persisted form of a Set, for the cluster metadata:
//
//	+------+------+------+------+---------+----------------+-----------+-----------+
//	| 'S'  | 'A'  | 'C'  | 'L'  | version | count (uvarint)| binding 1 | binding … |
//	+------+------+------+------+---------+----------------+-----------+-----------+
//
//	binding (version 1):
//	+---------+---------+------+-----------+------+-----------+------------+
//	| rtype   | ptype   | name | principal | host | operation | permission |
//	| 1 byte  | 1 byte  | str  | str       | str  | 1 byte    | 1 byte     |
//	+---------+---------+------+-----------+------+-----------+------------+
//	str = uvarint byte length, then the bytes
//
// Enumerations are Kafka's wire numbers. Bindings appear in the Set's
// canonical order with no duplicates, so one Set has exactly one encoding:
// Encode is deterministic, and Decode refuses any input that is not an
// encoding Encode could have produced (bad magic, unknown version, an
// invalid or non-canonical binding, bindings out of order or repeated,
// trailing bytes, a varint longer than needed), so a replicated log can
// never hold two spellings of one state. Integrity (checksums) belongs to
// the log that carries the bytes.
//
// A new field means a new version: Decode keeps reading every version it
// ever wrote, Encode writes the newest.

// codecMagic opens every encoded Set.
const codecMagic = "SACL"

// CodecVersion is the version Encode writes.
const CodecVersion = 1

// minBindingLen is the smallest encoded binding: four one-byte enums and
// three strings of at least one length byte each.
const minBindingLen = 4 + 3

// ErrCorrupt is wrapped by every Decode error.
var ErrCorrupt = errors.New("acl: corrupt ACL set encoding")

// CorruptError says where and why Decode gave up.
type CorruptError struct {
	Offset int    // byte offset of the problem
	Reason string // what was wrong
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("acl: corrupt ACL set encoding at byte %d: %s", e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Encode appends s's persisted form to dst.
func (s *Set) Encode(dst []byte) []byte {
	dst = append(dst, codecMagic...)
	dst = append(dst, CodecVersion)
	dst = binary.AppendUvarint(dst, uint64(s.Len()))
	for _, b := range s.bindingsOrNil() {
		dst = append(dst, byte(b.Pattern.Type), byte(b.Pattern.PatternType))
		dst = appendString(dst, b.Pattern.Name)
		dst = appendString(dst, string(b.Entry.Principal))
		dst = appendString(dst, b.Entry.Host)
		dst = append(dst, byte(b.Entry.Operation), byte(b.Entry.Permission))
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Decode reads a Set that Encode wrote. Its errors are *CorruptError.
func Decode(data []byte) (*Set, error) {
	d := decoder{data: data}
	if len(data) < len(codecMagic)+1 || string(data[:len(codecMagic)]) != codecMagic {
		return nil, d.fail("bad magic")
	}
	d.off = len(codecMagic)
	if v := data[d.off]; v != CodecVersion {
		return nil, d.fail(fmt.Sprintf("unknown version %d", v))
	}
	d.off++
	n, ok := d.uvarint()
	if !ok {
		return nil, d.fail("bad count")
	}
	if n > uint64(len(data)-d.off)/minBindingLen {
		return nil, d.fail(fmt.Sprintf("count %d exceeds what %d bytes can hold", n, len(data)-d.off))
	}
	bindings := make([]Binding, 0, n)
	for range n {
		start := d.off
		b, err := d.binding()
		if err != nil {
			return nil, err
		}
		if err := b.Validate(); err != nil {
			d.off = start
			return nil, d.fail(err.Error())
		}
		if b.canonical() != b {
			d.off = start
			return nil, d.fail("host not in canonical form")
		}
		if k := len(bindings); k > 0 && compareBindings(bindings[k-1], b) >= 0 {
			d.off = start
			return nil, d.fail("bindings out of order or repeated")
		}
		bindings = append(bindings, b)
	}
	if d.off != len(data) {
		return nil, d.fail(fmt.Sprintf("%d trailing bytes", len(data)-d.off))
	}
	return build(bindings), nil
}

type decoder struct {
	data    []byte
	off     int
	scratch [binary.MaxVarintLen64]byte
}

func (d *decoder) fail(reason string) error { return &CorruptError{Offset: d.off, Reason: reason} }

func (d *decoder) uvarint() (uint64, bool) {
	v, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 || n != len(binary.AppendUvarint(d.scratch[:0], v)) {
		return 0, false // malformed, or not minimal: one value, one spelling
	}
	d.off += n
	return v, true
}

func (d *decoder) byte() (byte, bool) {
	if d.off >= len(d.data) {
		return 0, false
	}
	d.off++
	return d.data[d.off-1], true
}

// string reads a length-prefixed string, checking the length against the
// bytes left before allocating.
func (d *decoder) string() (string, bool) {
	n, ok := d.uvarint()
	if !ok || n > uint64(len(d.data)-d.off) {
		return "", false
	}
	s := string(d.data[d.off : d.off+int(n)])
	d.off += int(n)
	return s, true
}

func (d *decoder) binding() (Binding, error) {
	var b Binding
	rt, ok1 := d.byte()
	pt, ok2 := d.byte()
	if !ok1 || !ok2 {
		return b, d.fail("truncated binding")
	}
	name, ok1 := d.string()
	principal, ok2 := d.string()
	host, ok3 := d.string()
	op, ok4 := d.byte()
	perm, ok5 := d.byte()
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return b, d.fail("truncated binding")
	}
	b.Pattern = Pattern{Type: ResourceType(rt), Name: name, PatternType: PatternType(pt)}
	b.Entry = Entry{Principal: Principal(principal), Host: host, Operation: Operation(op), Permission: Permission(perm)}
	return b, nil
}
