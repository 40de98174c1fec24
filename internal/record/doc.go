// Package record owns Strand's unit of storage and transfer: Kafka v2 record
// batches ("magic 2", KIP-98), the records inside them, and the codecs that
// compress them. It encodes, decodes, validates (CRC-32C, framing, record
// varints, counts, offsets) and rewrites the broker-owned header fields of a
// batch in place.
//
// # Invariants
//
//   - Pure: the package never does I/O, never starts a goroutine, never logs,
//     and keeps no state beyond pools of reusable codec buffers. Every
//     function is safe for concurrent use.
//   - Any byte string is a safe input: decoders return an error wrapping one
//     of the ErrXxx sentinels and never panic, and they never allocate what a
//     length or count field merely claims. A record needs at least 7 bytes, so
//     a count larger than the bytes can hold is rejected before allocating,
//     and decompression stops at MaxDecompressedSize (or a smaller limit the
//     caller gives), so a "zip bomb" costs at most that much memory.
//   - Byte layouts come from github.com/twmb/franz-go/pkg/kmsg (RecordBatch,
//     Record), never from a second hand-written codec. Decode re-encodes each
//     record with kmsg and requires the very same bytes, so only canonical
//     records are accepted: whatever Strand stores, any Kafka client can read.
//   - Offsets are absolute. A record's Offset is BaseOffset+offsetDelta; a
//     batch may leave gaps (offsets with no record), which is how compaction
//     and DLQ quarantine remove records without renumbering the others.
//
// # Batch layout
//
// All integers are big-endian. BatchLength counts the bytes after itself; the
// CRC-32C (Castagnoli) covers everything from Attributes to the end. The
// broker rewrites BaseOffset and PartitionLeaderEpoch, which the CRC does not
// cover, without recomputing it (SetBaseOffset, SetLeaderEpoch).
//
//	offset  size  field
//	     0     8  BaseOffset             first offset of the batch
//	     8     4  BatchLength            = total size - 12
//	    12     4  PartitionLeaderEpoch
//	    16     1  Magic                  = 2
//	    17     4  CRC                    CRC-32C of bytes [21, end)
//	    21     2  Attributes             bits 0-2 codec, 3 LogAppendTime,
//	                                     4 transactional, 5 control,
//	                                     6 delete horizon in BaseTimestamp
//	    23     4  LastOffsetDelta        last offset - BaseOffset (gaps allowed)
//	    27     8  BaseTimestamp          timestamp of the first record (ms)
//	    35     8  MaxTimestamp           greatest record timestamp (ms)
//	    43     8  ProducerID             -1 if not idempotent
//	    51     2  ProducerEpoch          -1 if not idempotent
//	    53     4  BaseSequence           -1 if not idempotent
//	    57     4  NumRecords
//	    61     …  Records                NumRecords records, compressed as a
//	                                     whole by the codec in Attributes
//
// # Record layout
//
// Inside the (decompressed) records section each record is a run of zigzag
// varints (varint), zigzag varlongs (varlong) and raw bytes; a negative length
// stands for null:
//
//	Length          varint   bytes that follow in this record
//	Attributes      int8     unused, 0
//	TimestampDelta  varlong  timestamp - BaseTimestamp
//	OffsetDelta     varint   offset - BaseOffset
//	KeyLength       varint   -1 = null key
//	Key             bytes
//	ValueLength     varint   -1 = null value (a tombstone)
//	Value           bytes
//	HeaderCount     varint
//	Headers         HeaderCount × { KeyLength varint, Key bytes,
//	                                ValueLength varint (-1 = null), Value bytes }
//
// # Compression
//
// gzip, snappy, lz4 and zstd are Kafka's codecs 1-4. Snappy comes in two
// dialects: the raw block format (what Compress emits, and what every Kafka
// client reads) and the xerial framing the Java client and librdkafka may send
// ("\x82SNAPPY\x00", two 4-byte version words, then blocks each prefixed by a
// 4-byte big-endian length); Decompress reads both. lz4 is the LZ4 frame
// format, as Kafka uses since v2. Codec state that is costly to build (zstd
// encoders and decoders, gzip and lz4 readers and writers) is pooled or shared
// at package level.
package record
