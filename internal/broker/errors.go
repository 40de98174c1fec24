package broker

import (
	"errors"
	"fmt"
)

// Sentinel errors. Each maps to the Kafka error code of the same name in the
// wire layer; callers match them with errors.Is. Returned errors wrap them
// with context.
var (
	// ErrUnknownTopicOrPartition: the topic or partition does not exist.
	ErrUnknownTopicOrPartition = errors.New("broker: unknown topic or partition")
	// ErrUnknownTopicID: no topic has this id.
	ErrUnknownTopicID = errors.New("broker: unknown topic id")
	// ErrTopicExists: CreateTopic for a topic that already exists.
	ErrTopicExists = errors.New("broker: topic already exists")
	// ErrInvalidTopic: the name is not a legal Kafka topic name.
	ErrInvalidTopic = errors.New("broker: invalid topic name")
	// ErrInvalidPartitions: a partition count that is not positive, or not
	// larger than the current one (CreatePartitions).
	ErrInvalidPartitions = errors.New("broker: invalid number of partitions")
	// ErrInvalidReplicationFactor: a replication factor this cluster cannot
	// honour (a single node has exactly one replica).
	ErrInvalidReplicationFactor = errors.New("broker: invalid replication factor")
	// ErrInvalidReplicaAssignment: a manual assignment naming unknown nodes or
	// of the wrong shape.
	ErrInvalidReplicaAssignment = errors.New("broker: invalid replica assignment")
	// ErrInvalidConfig: an unknown config name or an invalid value; see
	// ConfigError.
	ErrInvalidConfig = errors.New("broker: invalid config")
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
	// ErrPolicyViolation: the request is well formed but Strand refuses it
	// (e.g. a config change Strand cannot apply).
	ErrPolicyViolation = errors.New("broker: policy violation")
	// ErrInternalTopic: the operation is not allowed on an internal topic
	// (deleting __consumer_offsets).
	ErrInternalTopic = errors.New("broker: not allowed on an internal topic")
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
	// ErrClosed: the broker is shut down.
	ErrClosed = errors.New("broker: closed")
)

// ConfigError says which config is wrong and why. It matches ErrInvalidConfig.
type ConfigError struct {
	Name   string
	Value  string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("broker: config %s: %s", e.Name, e.Reason)
	}
	return fmt.Sprintf("broker: config %s=%q: %s", e.Name, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }
