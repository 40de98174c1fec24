// Package dlq is validation at ingress (DESIGN.md invariant 7) on the
// produce path, the dead-letter queue it fills, and the redrive that empties
// it: for a topic with strand.validation or
// strand.validation.key.required, Partition.Append decodes the batch and
// judges every record (Screener); invalid records go to the topic's DLQ with
// the reason attached, and the valid ones are appended in a batch that keeps
// the producer's offset range, so each quarantined offset is a gap, exactly
// like a compacted-away record, and every valid record has the offset its
// producer was told.
//
// Order under the source partition's lock (appendLocked): the idempotence
// check first (a retried batch is answered from producer state and
// quarantines nothing), then the DLQ append, then the source append. The DLQ
// goes first so that a failure leaves nothing acknowledged without its
// quarantined records: if the DLQ append fails, the produce fails and nothing
// was written; if the source append fails after it, the retry quarantines
// those records a second time (duplicates in the DLQ, never losses). The
// alternative order would lose poison records silently when the DLQ append
// failed after the producer's batch was already in the log.
//
// Lock order: source Partition.mu → DLQ Partition.mu. A DLQ topic must not
// itself be validated (the node's DLQPartition refuses it), so the DLQ append never nests
// further and two topics cannot be each other's DLQ.
//
// The node (package broker) provides what this needs of it through Node:
// the DLQ partition of a source partition (created on first use), the
// schema registry validators bind to, and a way to a DLQ partition led
// by another node.
package dlq
