package schemareg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The _schemas topic, as Confluent's registry writes it: one compacted
// topic whose keys say what a record is about and whose values are the
// latest state of that thing. A null value (tombstone) deletes the key.
//
//	key   {"keytype":"SCHEMA","subject":"s","version":3,"magic":1}
//	value {"subject":"s","version":3,"id":7,"schema":"...","schemaType":"PROTOBUF",
//	       "references":[...],"deleted":false}       (schemaType omitted for AVRO)
//	key   {"keytype":"CONFIG","subject":null|"s","magic":0}
//	value {"compatibilityLevel":"FULL"}              (tombstone: subject config removed)
//	key   {"keytype":"MODE","subject":null|"s","magic":0}
//	value {"mode":"READONLY"}
//	key   {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}
//	value {"subject":"s","version":3}                (every version ≤ 3 soft-deleted)
//	key   {"keytype":"NOOP","magic":0}               (ignored)
//
// A soft delete rewrites the SCHEMA value with "deleted":true; a hard delete
// is a tombstone for the SCHEMA key.

// KeyType names what a _schemas record is about.
type KeyType string

// The key types Confluent's registry writes.
const (
	KeySchema        KeyType = "SCHEMA"
	KeyConfig        KeyType = "CONFIG"
	KeyMode          KeyType = "MODE"
	KeyDeleteSubject KeyType = "DELETE_SUBJECT"
	KeyNoop          KeyType = "NOOP"
)

// Key is a _schemas record key.
type Key struct {
	KeyType KeyType `json:"keytype"`
	Subject *string `json:"subject,omitempty"`
	Version int     `json:"version,omitempty"`
	Magic   int     `json:"magic"`
	// Seq is the _schemas offset the writer planned this record for (the
	// position of the state it was decided on); a record that lands
	// elsewhere lost a race with another node's write and is ignored by
	// every reader (see State.ApplyAt). Nil (records written by other
	// registries) always applies. Being part of the key, it also keeps
	// compaction from dropping an applied record for an ignored one.
	Seq *int64 `json:"seq,omitempty"`
}

// SchemaValue is the value of a SCHEMA record.
type SchemaValue struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	Schema     string      `json:"schema"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Deleted    bool        `json:"deleted"`
}

// ConfigValue is the value of a CONFIG record.
type ConfigValue struct {
	CompatibilityLevel string `json:"compatibilityLevel"`
}

// ModeValue is the value of a MODE record.
type ModeValue struct {
	Mode string `json:"mode"`
}

// DeleteSubjectValue is the value of a DELETE_SUBJECT record.
type DeleteSubjectValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// Record is one _schemas record in decoded form. Exactly one of the value
// pointers is set for its key type, or none for a tombstone.
type Record struct {
	Key           Key
	Schema        *SchemaValue
	Config        *ConfigValue
	Mode          *ModeValue
	DeleteSubject *DeleteSubjectValue
}

// ErrBadRecord reports a _schemas record this package cannot decode.
var ErrBadRecord = errors.New("schemareg: bad _schemas record")

// Tombstone reports whether r deletes its key.
func (r Record) Tombstone() bool {
	return r.Schema == nil && r.Config == nil && r.Mode == nil && r.DeleteSubject == nil
}

// Encode returns the record's key and value bytes; value is nil for a tombstone.
func (r Record) Encode() (key, value []byte, err error) {
	k := r.Key
	if k.KeyType == KeySchema {
		k.Magic = 1
	}
	key, err = json.Marshal(k)
	if err != nil {
		return nil, nil, err
	}
	var v any
	switch {
	case r.Schema != nil:
		v = r.Schema
	case r.Config != nil:
		v = r.Config
	case r.Mode != nil:
		v = r.Mode
	case r.DeleteSubject != nil:
		v = r.DeleteSubject
	default:
		return key, nil, nil
	}
	value, err = json.Marshal(v)
	return key, value, err
}

// DecodeRecord decodes one _schemas record; a nil value is a tombstone.
// Unknown key types are an error wrapping ErrBadRecord.
func DecodeRecord(key, value []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(key, &r.Key); err != nil {
		return r, fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	subj := r.Key.Subject
	switch r.Key.KeyType {
	case KeySchema, KeyDeleteSubject:
		if subj == nil {
			return r, fmt.Errorf("%w: %s key without subject", ErrBadRecord, r.Key.KeyType)
		}
	case KeyConfig, KeyMode, KeyNoop:
	default:
		return r, fmt.Errorf("%w: unknown keytype %q", ErrBadRecord, r.Key.KeyType)
	}
	if value == nil || r.Key.KeyType == KeyNoop {
		return r, nil
	}
	var dst any
	switch r.Key.KeyType {
	case KeySchema:
		r.Schema = new(SchemaValue)
		dst = r.Schema
	case KeyConfig:
		r.Config = new(ConfigValue)
		dst = r.Config
	case KeyMode:
		r.Mode = new(ModeValue)
		dst = r.Mode
	case KeyDeleteSubject:
		r.DeleteSubject = new(DeleteSubjectValue)
		dst = r.DeleteSubject
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	if err := dec.Decode(dst); err != nil {
		return r, fmt.Errorf("%w: value: %v", ErrBadRecord, err)
	}
	if r.Schema != nil {
		if r.Schema.Subject != *subj || r.Schema.Version != r.Key.Version || r.Schema.ID <= 0 || r.Schema.Version <= 0 {
			return r, fmt.Errorf("%w: schema value disagrees with its key", ErrBadRecord)
		}
		if _, err := parseSchemaType(r.Schema.SchemaType); err != nil {
			return r, fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
	}
	if r.Config != nil {
		if _, ok := levels[r.Config.CompatibilityLevel]; !ok {
			return r, fmt.Errorf("%w: compatibility %q", ErrBadRecord, r.Config.CompatibilityLevel)
		}
	}
	if r.Mode != nil {
		if _, ok := modes[r.Mode.Mode]; !ok {
			return r, fmt.Errorf("%w: mode %q", ErrBadRecord, r.Mode.Mode)
		}
	}
	return r, nil
}
