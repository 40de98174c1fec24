// Package compact owns Strand's keyed-log-as-table semantics: View, the
// compacted view of a log (the latest value per key; a tombstone, i.e. a null
// value, deletes the key), and the Cleaner, which rewrites a partition log's
// sealed segments so that reading the log from its start gives that same view
// in far fewer records.
//
// # Invariants
//
//   - Folding the cleaned log gives exactly View of the log before cleaning
//     (tombstones aside, once their delete horizon has passed: then the key is
//     simply absent, which View also reports for a deleted key).
//   - No offset ever changes. A kept record keeps its offset; a kept batch
//     keeps its base offset, its last offset (so a trailing gap stays inside
//     it), its producer id, epoch and base sequence, its codec, its
//     transactional and timestamp-type flags and its leader epoch. A batch
//     whose records are all removed disappears, leaving a gap, unless it is
//     its producer's last batch in the cleaned range: then it stays as an
//     empty batch so that the producer's sequence state survives a rebuild
//     from the log (Kafka does the same).
//   - The active segment is never touched: the cleaner works on sealed
//     segments only, through partlog's ScanSegment and ReplaceSegments, whose
//     swap is crash-atomic (the old set of segments or the new one survives,
//     never a mix).
//   - A transaction marker stays while any batch of its transaction does
//     and while it is its producer's last batch. A marker whose
//     transaction the cleaner emptied gets a delete horizon, as a
//     tombstone's batch does, and goes in the first clean after it.
//
// # Algorithm (Kafka's LogCleaner, simplified)
//
// A per-partition checkpoint, <dir>/cleaner-offset-checkpoint, records the
// first dirty offset: everything below it has been cleaned. One Clean:
//
//  1. Choose the cleanable range: sealed segments from the log start up to,
//     not including, the first dirty segment younger than
//     min.compaction.lag.ms (its newest record is newer than now minus the
//     lag). Skip the partition unless dirty bytes / (clean + dirty bytes) ≥
//     min.cleanable.dirty.ratio, or the oldest dirty segment is older than
//     max.compaction.lag.ms, or a kept tombstone's delete horizon has passed.
//  2. Offset map: read the dirty segments of the range and map every key to
//     its latest offset (and every producer to its last batch). The map is
//     bounded (Cleaner.MapBytes, Kafka's log.cleaner.dedupe.buffer.size):
//     when a dirty segment would overflow it, that segment is taken back out
//     and the range ends before it (the first dirty segment is always kept,
//     so every Clean progresses); the next Clean goes on from there.
//  3. Rewrite the range in groups of consecutive segments whose total size
//     fits segment.bytes, each group becoming one segment: a record survives
//     if no later offset of its key is in the map, it has a key (Kafka drops
//     keyless records in a compacted topic, so does Strand), and it is not a
//     tombstone whose batch's delete horizon has passed. A batch with nothing
//     removed and no horizon to set is copied byte for byte.
//  4. Write the checkpoint: the end of the range and the earliest pending
//     delete horizon. A crash before this step only makes the next Clean
//     redo work; cleaning is idempotent.
//
// Tombstones follow KIP-534: the first clean that keeps a tombstone stamps
// its batch with a delete horizon (now + delete.retention.ms) in
// BaseTimestamp under attribute bit 6 (record.AttrDeleteHorizon); record
// timestamps are unchanged, being stored relative to it. A later clean after
// the horizon drops the tombstone. So a consumer that starts from the log
// start and reads to the end within delete.retention.ms of a tombstone's
// first clean is sure to see it.
//
// Deviations from Kafka, on purpose: the offset map is a Go map from the
// whole key (exact, where Kafka's fixed array of 16-byte key hashes can
// collide), with its memory estimated per key against the bound, and it may
// pass the bound by the keys of the first dirty segment (Kafka refuses to
// clean a segment whose keys alone do not fit); records of aborted
// transactions are removed and never supersede a key (as Kafka), and the
// range ends at the last stable offset; max.compaction.lag.ms is
// measured from a dirty segment's newest record, not its oldest (a clean may
// come up to one segment.ms later than Kafka's).
//
// # Thread-safety
//
// View and Fold are pure. A Cleaner may clean different logs concurrently but
// must not clean the same log from two goroutines at once (the broker runs one
// cleaner loop). Cleaning never blocks appends or reads of the log.
//
// The package never speaks the wire protocol and never knows about topics.
package compact
