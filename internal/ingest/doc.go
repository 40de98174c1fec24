// Package ingest owns validation at ingress and the dead-letter queue's
// record shape (DESIGN.md invariant 7: poison never blocks the pipeline).
//
// A Validator checks one record (its key and value) against a topic's
// validation settings — Spec, built from the topic configs strand.validation,
// strand.validation.schema and strand.validation.key.required — and says
// why a record is invalid in a human-readable reason naming the rule and
// where it failed (`jsonschema: /amount: got string, want number`).
// Validators are compiled once per distinct Spec and cached (Compile), so a
// config change compiles once and the produce path never compiles.
//
// Quarantine builds the record that goes to the DLQ topic: the original key,
// value, headers and timestamp plus the strand.dlq.* headers carrying the
// reason and the source coordinates (topic, partition, offset). Redrive
// strips those headers again (Restore) and records where a redriven record
// came from (HeaderRedriveSource).
//
// ingest never touches a log or a network connection: the broker decides
// where records go, ingest only judges and shapes them. All functions and a
// compiled Validator are safe for concurrent use.
package ingest
