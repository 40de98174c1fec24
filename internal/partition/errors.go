package partition

import "errors"

// Sentinel errors of the append and read paths. Each maps to the Kafka error
// code of the same name in the wire layer (through package broker, which
// re-exports them); callers match them with errors.Is. Returned errors wrap
// them with context. Their text keeps the "broker:" prefix users have seen
// in logs and client errors since before the partition runtime had its own
// package.
var (
	// ErrUnknownTopicOrPartition: the topic or partition does not exist.
	ErrUnknownTopicOrPartition = errors.New("broker: unknown topic or partition")
	// ErrCorruptMessage: the batch fails its CRC or cannot be parsed.
	ErrCorruptMessage = errors.New("broker: corrupt message")
	// ErrInvalidRecord: a well-formed batch that a producer must not send
	// (several batches, a control batch, a record count that does not match).
	ErrInvalidRecord = errors.New("broker: invalid record")
	// ErrUnsupportedMessageFormat: a batch that is not v2 (magic 2).
	ErrUnsupportedMessageFormat = errors.New("broker: unsupported message format")
	// ErrMessageTooLarge: the batch exceeds the topic's max.message.bytes.
	ErrMessageTooLarge = errors.New("broker: message too large")
	// ErrNotEnoughReplicas: acks=all and the ISR is smaller than
	// min.insync.replicas.
	ErrNotEnoughReplicas = errors.New("broker: not enough in-sync replicas")
	// ErrOffsetOutOfRange: an offset outside [log start, log end].
	ErrOffsetOutOfRange = errors.New("broker: offset out of range")
	// ErrOffsetMovedToTiered: a replica fetched below its leader's local
	// log start, and the remote tier holds that part
	// (OFFSET_MOVED_TO_TIERED_STORAGE, KIP-405): the replica starts its
	// log from the store's metadata instead of copying.
	ErrOffsetMovedToTiered = errors.New("broker: offset moved to tiered storage")
	// ErrStorage: the partition's disk failed the write or its fsync (full,
	// read-only, I/O error), or the log stopped taking appends after such a
	// failure (it recovers when the broker restarts). Nothing was
	// acknowledged; KAFKA_STORAGE_ERROR, which clients retry.
	ErrStorage = errors.New("broker: storage error")
	// ErrNotLeader: this node does not lead the partition
	// (NOT_LEADER_OR_FOLLOWER): clients refresh metadata and go to the
	// leader.
	ErrNotLeader = errors.New("broker: not the leader")
	// ErrFencedLeaderEpoch: a leader epoch older than the partition's
	// (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("broker: fenced leader epoch")
	// ErrNotEnoughReplicasAfterAppend: the batch was written, but the ISR
	// fell below min.insync.replicas before it was committed
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND); the producer retries.
	ErrNotEnoughReplicasAfterAppend = errors.New("broker: not enough in-sync replicas after the append")
	// ErrOffsetNotAvailable: a new leader's high watermark has not reached
	// the start of its epoch yet, so "latest" would go backwards
	// (OFFSET_NOT_AVAILABLE, KIP-207); clients retry.
	ErrOffsetNotAvailable = errors.New("broker: offset not available yet")
)
