package broker

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/partition"
)

// Sentinel errors. Each maps to the Kafka error code of the same name in the
// wire layer; callers match them with errors.Is. Returned errors wrap them
// with context. Those of the append and read paths are package
// partition's.
var (
	ErrUnknownTopicOrPartition = partition.ErrUnknownTopicOrPartition
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
	ErrInvalidConfig            = errors.New("broker: invalid config")
	ErrCorruptMessage           = partition.ErrCorruptMessage
	ErrInvalidRecord            = partition.ErrInvalidRecord
	ErrUnsupportedMessageFormat = partition.ErrUnsupportedMessageFormat
	ErrMessageTooLarge          = partition.ErrMessageTooLarge
	ErrNotEnoughReplicas        = partition.ErrNotEnoughReplicas
	ErrOffsetOutOfRange         = partition.ErrOffsetOutOfRange
	// ErrPolicyViolation: the request is well formed but Strand refuses it
	// (e.g. a config change Strand cannot apply).
	ErrPolicyViolation = errors.New("broker: policy violation")
	// ErrInternalTopic: the operation is not allowed on an internal topic
	// (deleting __consumer_offsets).
	ErrInternalTopic                = errors.New("broker: not allowed on an internal topic")
	ErrStorage                      = partition.ErrStorage
	ErrNotLeader                    = partition.ErrNotLeader
	ErrFencedLeaderEpoch            = partition.ErrFencedLeaderEpoch
	ErrNotEnoughReplicasAfterAppend = partition.ErrNotEnoughReplicasAfterAppend
	ErrOffsetNotAvailable           = partition.ErrOffsetNotAvailable
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
