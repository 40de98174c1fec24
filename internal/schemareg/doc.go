// Package schemareg is the core of Strand's Confluent-compatible schema
// registry (issue 17): the REST API as an http.Handler over a Store, the
// compatibility checks per format, and the codec of the compacted
// _schemas topic's records with their replay into a Store.
//
// It owns subjects, versions, global ids (one id per distinct schema,
// shared across subjects), compatibility levels and modes. It imports no
// other internal package; the broker will supply a Store over _schemas.
//
// Compatibility: Avro uses hamba/avro's reader/writer schema resolution
// (SchemaCompatibility: missing defaults, type promotions, enum symbols,
// names, fixed sizes, unions). Protobuf (compiled with bufbuild/protocompile)
// checks, in both directions at once, that no message is removed and that
// every field number keeps its kind, cardinality and message type, is not
// renumbered, and is not removed unless reserved; it does not check enum
// values, oneof moves, package or file renames, or wire-compatible kind
// changes (int32↔int64, which Confluent allows). JSON Schema (compiled
// with santhosh-tekuri/jsonschema) checks top-level object rules only:
// newly required properties, properties removed or forbidden under
// additionalProperties:false, and changed "type" keywords; see jsonReadable.
//
// Thread-safety: Handler is safe for concurrent use; writes are serialized
// by its mutex so each id and version is assigned once. MemStore is safe
// for concurrent use.
package schemareg
