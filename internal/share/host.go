package share

import (
	"context"

	"github.com/strandmq/strand/internal/record"
)

// StateTopic is the internal compacted topic holding share-partition state.
const StateTopic = "__share_group_state"

// TopicInfo is what the assignor and the manager need of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// TopicPartition names a partition by id and by name.
type TopicPartition struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// LogRead is a read of a partition's log.
type LogRead struct {
	Batches       []byte // whole v2 batches, the first holding the offset asked for
	Next          Offset // the offset after the last batch read
	LogStart      Offset
	HighWatermark Offset
}

// Host is what the node offers share groups: its topics, reads of the
// partitions it leads, and durable appends to __share_group_state and to
// dead-letter topics. Package sharenode implements it (on a cluster its
// Host is also a LeaderEpochs and share-partition state goes through a
// StateStore, remote.go).
type Host interface {
	// Topics lists the topics by name.
	Topics() map[string]TopicInfo
	// ReadLog reads whole batches from offset from on, at most about
	// maxBytes (at least one batch), never past the high watermark, into
	// buf when its capacity suffices (the batches then alias buf; buf may
	// be nil).
	ReadLog(buf []byte, tp TopicPartition, from Offset, maxBytes int) (LogRead, error)
	// Bounds returns a partition's log start offset and high watermark.
	Bounds(tp TopicPartition) (logStart, highWatermark Offset, err error)
	// AppendState appends key/value records to __share_group_state and
	// returns once they are durable (acks=all). A nil value is a tombstone.
	AppendState(ctx context.Context, recs []StateRecord) error
	// ReplayState calls fn on every record of __share_group_state, in order.
	ReplayState(fn func(key, value []byte)) error
	// AppendDeadLetters appends records taken from src to the dead-letter
	// topic (the partition src's number maps to; the topic is created with
	// src's partition count if it is missing) and returns once they are
	// durable.
	AppendDeadLetters(ctx context.Context, topic string, src TopicPartition, recs []record.Record) error
}

// StateRecord is one key/value record of __share_group_state.
type StateRecord struct{ Key, Value []byte }
