// Package partlog owns one partition's durable log: an append-only sequence of
// Kafka v2 record batches, addressed by absolute offsets that are assigned once
// and never renumbered.
//
// # On disk
//
// A log is a directory of segments, each named by the offset of its first
// batch, plus small checkpoint files:
//
//	<dir>/
//	  00000000000000000000.log        batches, byte for byte as produced
//	  00000000000000000000.index      sparse offset → position index
//	  00000000000000000000.timeindex  sparse max-timestamp → offset index
//	  00000000000000004711.log        the active segment: the only one written
//	  ...
//	  log-start-offset                start offset, when inside the first segment
//	  leader-epoch-checkpoint         leader epoch → first offset (KIP-101)
//	  .clean-shutdown                 present only between Close and Open
//	  <segment file>.deleted          retention's, removed outside the lock
//
// A .log file is batches back to back; each is stored exactly as the producer
// sent it except for its base offset (and leader epoch), which lie outside the
// batch CRC:
//
//	+------------+--------+-------+-------+------+------------------------+
//	| baseOffset | length | epoch | magic | crc  | attributes … records   |
//	| int64      | int32  | int32 | 2     | u32  | (covered by the crc)   |
//	+------------+--------+-------+-------+------+------------------------+
//
// Index formats are drawn in index.go.
//
// # Invariants
//
//   - The end offset never moves backwards, except through TruncateTo (a
//     follower's truncation after a leader change).
//   - The start offset never moves backwards. Retention by time and size deletes
//     whole segments; retention by record count and DeleteRecordsBefore move it
//     inside a segment.
//   - Readers never see a batch at or past the high watermark, nor a partial
//     batch: sizes and offsets are published only after the bytes are written.
//   - Gaps are allowed (a batch may cover offsets none of its records hold, after
//     compaction or quarantine); overlaps are not.
//
// # Durability and recovery
//
// Appends go to the page cache; the flush policy (flush.messages, flush.ms)
// or an explicit Sync fsyncs them. An append the flush policy fsyncs is
// group-committed (groupsync.go): it is written under the writer lock, then
// waits outside it for an fsync shared with the appends around it, and is
// published to readers only once that fsync succeeds. A rolled segment is fsynced before the next
// one is created, so after a crash only the newest segment can hold a torn
// tail. Open therefore verifies every batch's CRC in the newest segment after
// an unclean shutdown and truncates at the first torn or corrupt batch, and
// for older segments walks only the tail after the last index entry. Index
// files that fail validation are rebuilt from the log. A failed write is cut
// back off the file before Append returns; a failed fsync leaves the log
// refusing appends until it is reopened and recovered.
//
// # Concurrency
//
// One writer at a time (Append, Roll, retention and truncation serialise on an
// internal lock) and any number of concurrent readers (Read, OffsetForTimestamp,
// the offset getters). Readers hold a shared lock on the segment list only for
// the length of one read, so retention never closes a file under them.
//
// partlog never decodes records on the append or read path, and never knows
// about topics, producers or the wire protocol.
package partlog
