package broker

import (
	"errors"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/topicconfig"
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
	ErrTopicExists  = errors.New("broker: topic already exists")
	ErrInvalidTopic = topicconfig.ErrInvalidTopic
	// ErrInvalidPartitions: a partition count that is not positive, or not
	// larger than the current one (CreatePartitions).
	ErrInvalidPartitions = errors.New("broker: invalid number of partitions")
	// ErrInvalidReplicationFactor: a replication factor this cluster cannot
	// honour (a single node has exactly one replica).
	ErrInvalidReplicationFactor = errors.New("broker: invalid replication factor")
	// ErrInvalidReplicaAssignment: a manual assignment naming unknown nodes or
	// of the wrong shape.
	ErrInvalidReplicaAssignment = errors.New("broker: invalid replica assignment")
	ErrInvalidConfig            = topicconfig.ErrInvalidConfig
	ErrCorruptMessage           = partition.ErrCorruptMessage
	ErrInvalidRecord            = partition.ErrInvalidRecord
	ErrUnsupportedMessageFormat = partition.ErrUnsupportedMessageFormat
	ErrMessageTooLarge          = partition.ErrMessageTooLarge
	ErrNotEnoughReplicas        = partition.ErrNotEnoughReplicas
	ErrOffsetOutOfRange         = partition.ErrOffsetOutOfRange
	ErrOffsetMovedToTiered      = partition.ErrOffsetMovedToTiered
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
