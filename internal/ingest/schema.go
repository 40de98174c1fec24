package ingest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strandmq/strand/internal/schemareg"
)

// Schema validation (strand.validation=schema): each record's value (and
// key, with strand.validation.key=schema) must carry Confluent's wire
// format — magic byte 0 and a 4-byte schema id — and the id must be a
// live schema of the registry, registered under the subject the topic's
// subject name strategy derives, and the payload must decode against it.
// A null value (a tombstone) and a null key pass, as in the other modes.
//
// The registry is the broker's: a Validator compiled from a Spec knows no
// registry, and Bind gives it one and the topic name (TopicNameStrategy
// needs it). An unbound schema Validator checks the wire-format header
// only (a client-side pre-check, e.g. before a redrive).

// Strategy is strand.validation.subject.strategy: how a record's subject
// is named, as Confluent's serializers' subject.name.strategy.
type Strategy string

// The subject name strategies.
const (
	// TopicName: "<topic>-value" ("<topic>-key" for keys); the default.
	TopicName Strategy = "TopicNameStrategy"
	// RecordName: the schema's fully-qualified record name.
	RecordName Strategy = "RecordNameStrategy"
	// TopicRecordName: "<topic>-<record name>".
	TopicRecordName Strategy = "TopicRecordNameStrategy"
)

// Action is strand.validation.action: what happens to an invalid record.
type Action string

// The actions.
const (
	// ActionDLQ sends invalid records to the topic's DLQ (the default):
	// the producer is not failed, their offsets are gaps.
	ActionDLQ Action = "dlq"
	// ActionReject fails the whole batch with INVALID_RECORD and one
	// error per invalid record; nothing of it is written.
	ActionReject Action = "reject"
)

// SchemaSource finds the registry's schemas by id.
type SchemaSource interface {
	// Compiled returns the live schema with id, compiled; an error
	// wrapping schemareg.ErrUnknownID if there is none.
	Compiled(id int) (*schemareg.Compiled, error)
}

// Bind returns v checking schemas against src, for topic. Other modes
// return v itself.
func (v *Validator) Bind(src SchemaSource, topic string) *Validator {
	if v == nil || v.spec.Mode != ModeSchema {
		return v
	}
	b := *v
	b.schemas, b.topic = src, topic
	return &b
}

// schemaReason judges one wire-format key or value ("" when valid).
func (v *Validator) schemaReason(b []byte, key bool) string {
	what := "schema"
	if key {
		what = "key schema"
	}
	id, rest, err := schemareg.SplitWire(b)
	if err != nil {
		return what + ": " + err.Error()
	}
	if v.schemas == nil {
		return ""
	}
	c, err := v.schemas.Compiled(id)
	if errors.Is(err, schemareg.ErrUnknownID) {
		return fmt.Sprintf("%s: id %d: unknown schema id", what, id)
	}
	if err != nil {
		return fmt.Sprintf("%s: id %d: %v", what, id, err)
	}
	subject, err := v.subject(c, rest, key)
	if err != nil {
		return fmt.Sprintf("%s: id %d: %v", what, id, err)
	}
	if !c.HasSubject(subject) {
		return fmt.Sprintf("%s: id %d is not a schema of subject %q (it is registered under %s)",
			what, id, subject, subjectList(c.Subjects))
	}
	if err := c.Validate(rest); err != nil {
		return fmt.Sprintf("%s: id %d (%s): %v", what, id, c.Type, err)
	}
	return ""
}

// subject is the subject a record must belong to under the strategy.
func (v *Validator) subject(c *schemareg.Compiled, rest []byte, key bool) (string, error) {
	suffix := "-value"
	if key {
		suffix = "-key"
	}
	if v.spec.Strategy == TopicName || v.spec.Strategy == "" {
		return v.topic + suffix, nil
	}
	name := c.RecordName(rest)
	if name == "" {
		return "", fmt.Errorf("%s schema has no record name for %s", c.Type, v.spec.Strategy)
	}
	if v.spec.Strategy == TopicRecordName {
		return v.topic + "-" + name, nil
	}
	return name, nil
}

func subjectList(s []string) string {
	if len(s) == 0 {
		return "no live subject"
	}
	const most = 5
	if len(s) > most {
		return fmt.Sprintf("%s and %d more", strings.Join(s[:most], ", "), len(s)-most)
	}
	return strings.Join(s, ", ")
}

// ParseStrategy normalises a strand.validation.subject.strategy value
// (the Java class's simple or full name).
func ParseStrategy(s string) (Strategy, error) {
	s = strings.TrimSpace(s)
	s = s[strings.LastIndexByte(s, '.')+1:]
	for _, st := range []Strategy{TopicName, RecordName, TopicRecordName} {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("ingest: subject strategy %q: must be TopicNameStrategy, RecordNameStrategy or TopicRecordNameStrategy", s)
}
