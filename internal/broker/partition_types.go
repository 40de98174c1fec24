package broker

import "github.com/strandmq/strand/internal/partition"

// The partition runtime's types under the names the layers above have
// always used (package partition owns them).
type (
	NodeID        = partition.NodeID
	PartitionID   = partition.PartitionID
	Partition     = partition.Partition
	Acks          = partition.Acks
	Role          = partition.Role
	AppendResult  = partition.AppendResult
	Commit        = partition.Commit
	Enlister      = partition.Enlister
	ReadResult    = partition.ReadResult
	SpanResult    = partition.SpanResult
	FollowerFetch = partition.FollowerFetch
	FollowerRead  = partition.FollowerRead
	FollowerLag   = partition.FollowerLag
)

// Kafka's acks values and ListOffsets timestamp sentinels, and the roles.
const (
	AcksNone     = partition.AcksNone
	AcksLeader   = partition.AcksLeader
	AcksAll      = partition.AcksAll
	RoleLeader   = partition.RoleLeader
	RoleFollower = partition.RoleFollower

	TimestampLatest                = partition.TimestampLatest
	TimestampEarliest              = partition.TimestampEarliest
	TimestampMax                   = partition.TimestampMax
	TimestampEarliestLocal         = partition.TimestampEarliestLocal
	TimestampLatestTiered          = partition.TimestampLatestTiered
	TimestampEarliestPendingUpload = partition.TimestampEarliestPendingUpload
)

// ErrNoSpan and ErrInvalidTxnState are the partition runtime's.
var (
	ErrNoSpan          = partition.ErrNoSpan
	ErrInvalidTxnState = partition.ErrInvalidTxnState
)
