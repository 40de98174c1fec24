package kafka

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/producer"
)

const apiKeyApiVersions = 18

// api is one served API key: the version range ApiVersions advertises and
// the handler. A handler returns the response (nil: send none, as for
// acks=0) or an error, which closes the connection.
type api struct {
	min, max int16
	handle   func(s *Server, ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// internalOnly are the keys served and advertised on a cluster node's
// internal listener only.
var internalOnly = map[int16]bool{apiKeyEnvelope: true, 83: true, 84: true, 85: true, 86: true, 87: true}

// nodeAPIs are the only keys an internal listener serves and advertises:
// what nodes send each other — a DLQ or _schemas write led elsewhere
// (Produce), replica Fetch and OffsetForLeaderEpoch, transaction
// verification (AddPartitionsToTxn v4+) and markers, Envelope, the
// share-coordinator RPCs (83–87, share_state.go) — and
// ApiVersions and Metadata (without auto-creation) to look around. Its
// peers hold ClusterAction and skip the ACL checks (node.go), so an admin
// request sent there bare would be done as no one; like Kafka's listeners,
// which each serve their own set of APIs, it closes the connection
// instead. Admin requests reach the controller inside an Envelope, as the
// client's principal.
var nodeAPIs = map[int16]bool{0: true, 1: true, 3: true, 18: true, 23: true, 24: true, 27: true, apiKeyEnvelope: true,
	83: true, 84: true, 85: true, 86: true, 87: true}

// serves reports whether this server serves API key on its listener.
func (s *Server) serves(key int16) bool {
	if s.cfg.Internal {
		return nodeAPIs[key]
	}
	return !internalOnly[key]
}

// Served reports whether this server answers API key (on some listener):
// metrics keep series for these only.
func Served(key int16) bool {
	_, ok := apis[key]
	return ok
}

// apis is everything this server serves; ApiVersions advertises exactly
// this table. Minimum versions are the oldest each handler honours: Produce
// v0–v2 carry legacy message sets, which are up-converted to v2 batches
// (librdkafka before 2.11 compresses only when a broker advertises Produce
// v0); Fetch v4 is the first with isolation levels and last stable offsets,
// and Strand never down-converts batches for older fetchers.
var apis map[int16]api

func init() {
	apis = map[int16]api{
		0:  {0, 13, (*Server).handleProduce},
		1:  {4, 18, (*Server).handleFetch},
		2:  {0, 11, (*Server).handleListOffsets},
		3:  {0, 13, (*Server).handleMetadata},
		8:  {0, 9, (*Server).handleOffsetCommit},
		9:  {0, 9, (*Server).handleOffsetFetch},
		10: {0, 6, (*Server).handleFindCoordinator},
		11: {0, 9, (*Server).handleJoinGroup},
		12: {0, 4, (*Server).handleHeartbeat},
		13: {0, 5, (*Server).handleLeaveGroup},
		14: {0, 5, (*Server).handleSyncGroup},
		15: {0, 6, (*Server).handleDescribeGroups},
		16: {0, 5, (*Server).handleListGroups},
		17: {0, 1, (*Server).handleSaslHandshake},
		18: {0, 5, (*Server).handleApiVersions},
		19: {0, 7, (*Server).handleCreateTopics},
		20: {0, 6, (*Server).handleDeleteTopics},
		21: {0, 2, (*Server).handleDeleteRecords},
		22: {0, 5, (*Server).handleInitProducerID},
		23: {0, 4, (*Server).handleOffsetForLeaderEpoch},
		24: {0, 5, (*Server).handleAddPartitionsToTxn},
		25: {0, 4, (*Server).handleAddOffsetsToTxn},
		26: {0, 5, (*Server).handleEndTxn},
		27: {0, 1, (*Server).handleWriteTxnMarkers},
		28: {0, 5, (*Server).handleTxnOffsetCommit},
		29: {0, 3, (*Server).handleDescribeACLs},
		30: {0, 3, (*Server).handleCreateACLs},
		31: {0, 3, (*Server).handleDeleteACLs},
		32: {0, 4, (*Server).handleDescribeConfigs},
		33: {0, 2, (*Server).handleAlterConfigs},
		35: {0, 4, (*Server).handleDescribeLogDirs},
		36: {0, 2, (*Server).handleSaslAuthenticate},
		37: {0, 3, (*Server).handleCreatePartitions},
		42: {0, 2, (*Server).handleDeleteGroups},
		43: {0, 2, (*Server).handleElectLeaders},
		44: {0, 1, (*Server).handleIncrementalAlterConfigs},
		45: {0, 1, (*Server).handleAlterPartitionReassignments},
		46: {0, 0, (*Server).handleListPartitionReassignments},
		47: {0, 0, (*Server).handleOffsetDelete},
		48: {0, 1, (*Server).handleDescribeClientQuotas},
		49: {0, 1, (*Server).handleAlterClientQuotas},
		50: {0, 0, (*Server).handleDescribeUserScramCredentials},
		51: {0, 0, (*Server).handleAlterUserScramCredentials},
		55: {0, 2, (*Server).handleDescribeQuorum},
		57: {0, 2, (*Server).handleUpdateFeatures},
		58: {0, 0, (*Server).handleEnvelope},
		60: {0, 2, (*Server).handleDescribeCluster},
		61: {0, 0, (*Server).handleDescribeProducers},
		65: {0, 0, (*Server).handleDescribeTransactions},
		66: {0, 2, (*Server).handleListTransactions},
		68: {0, 1, (*Server).handleConsumerGroupHeartbeat},
		69: {0, 1, (*Server).handleConsumerGroupDescribe},
		75: {0, 0, (*Server).handleDescribeTopicPartitions},
		76: {1, 1, (*Server).handleShareGroupHeartbeat},
		77: {1, 1, (*Server).handleShareGroupDescribe},
		78: {1, 2, (*Server).handleShareFetch},
		79: {1, 2, (*Server).handleShareAcknowledge},
		90: {0, 1, (*Server).handleDescribeShareGroupOffsets},
		91: {0, 0, (*Server).handleAlterShareGroupOffsets},
		92: {0, 0, (*Server).handleDeleteShareGroupOffsets},
		83: {0, 0, (*Server).handleInitializeShareGroupState},
		84: {0, 0, (*Server).handleReadShareGroupState},
		85: {0, 1, (*Server).handleWriteShareGroupState},
		86: {0, 0, (*Server).handleDeleteShareGroupState},
		87: {0, 1, (*Server).handleReadShareGroupStateSummary},
		80: {0, 1, (*Server).handleAddRaftVoter},
		81: {0, 0, (*Server).handleRemoveRaftVoter},
	}
	for key, a := range apis {
		if a.max > kmsg.RequestForKey(key).MaxVersion() {
			panic(fmt.Sprintf("kafka: %s advertised up to v%d but kmsg knows v%d", kmsg.NameForKey(key), a.max, kmsg.RequestForKey(key).MaxVersion()))
		}
	}
}

// errorCode maps an error from the broker (or a *kerr.Error a handler
// wraps) to the Kafka error code clients act on. Unknown errors become
// UNKNOWN_SERVER_ERROR (and should be logged by the caller).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return kerr.UnknownServerError.Code
}

var errorCodes = []struct {
	err  error
	code *kerr.Error
}{
	{broker.ErrUnknownTopicOrPartition, kerr.UnknownTopicOrPartition},
	{broker.ErrUnknownTopicID, kerr.UnknownTopicID},
	{broker.ErrTopicExists, kerr.TopicAlreadyExists},
	{broker.ErrInvalidTopic, kerr.InvalidTopicException},
	{broker.ErrInvalidPartitions, kerr.InvalidPartitions},
	{broker.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor},
	{broker.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment},
	{broker.ErrInvalidConfig, kerr.InvalidConfig},
	{broker.ErrCorruptMessage, kerr.CorruptMessage},
	{broker.ErrInvalidRecord, kerr.InvalidRecord},
	{broker.ErrUnsupportedMessageFormat, kerr.UnsupportedForMessageFormat},
	{broker.ErrMessageTooLarge, kerr.MessageTooLarge},
	{broker.ErrNotEnoughReplicasAfterAppend, kerr.NotEnoughReplicasAfterAppend},
	{broker.ErrNotEnoughReplicas, kerr.NotEnoughReplicas},
	{broker.ErrOffsetNotAvailable, kerr.OffsetNotAvailable},
	{broker.ErrInvalidTxnState, kerr.InvalidTxnState},
	{broker.ErrOffsetOutOfRange, kerr.OffsetOutOfRange},
	{broker.ErrOffsetMovedToTiered, kerr.OffsetMovedToTieredStorage},
	{broker.ErrPolicyViolation, kerr.PolicyViolation},
	{broker.ErrInternalTopic, kerr.InvalidRequest},
	{broker.ErrGroupNotEmpty, kerr.NonEmptyGroup},
	{broker.ErrStorage, kerr.KafkaStorageError},
	{broker.ErrClosed, kerr.NotLeaderForPartition},
	{broker.ErrNotLeader, kerr.NotLeaderForPartition},
	{broker.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{broker.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{cluster.ErrNoLeader, kerr.NotController},        // look for the controller elsewhere
	{cluster.ErrNotController, kerr.RequestTimedOut}, // no controller answered in time
	{producer.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber},
	{producer.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch},
	{context.Canceled, kerr.RequestTimedOut},
	{context.DeadlineExceeded, kerr.RequestTimedOut},
}

// logUnknown logs errors that map to UNKNOWN_SERVER_ERROR or
// KAFKA_STORAGE_ERROR: bugs and I/O failures, not client mistakes.
func (s *Server) logUnknown(op string, err error) {
	if err == nil {
		return
	}
	if code := errorCode(err); code == kerr.UnknownServerError.Code || code == kerr.KafkaStorageError.Code {
		if ok, suppressed := s.errLines.allow(op+": "+err.Error(), 10*time.Second); ok {
			s.logger.Error("kafka: "+op+" failed", "err", err, "repeats_not_logged", suppressed)
		}
	}
}

// errMessage returns err's text for a response's ErrorMessage field.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := pkgPrefix.ReplaceAllString(err.Error(), "$1")
	return &m
}

// pkgPrefix matches the Go package names that Strand's errors carry at the
// start of each wrapped segment ("broker: create topic …: broker: config
// …"): useful in a log, noise in a message a Kafka client shows its user.
var pkgPrefix = regexp.MustCompile(`(^|: )(?:broker|cluster|kafka|partlog|ingest|group|producer|strand): `)

// checkLeaderEpoch applies KIP-320 fencing to a client's current leader
// epoch (-1: not checked).
func checkLeaderEpoch(p *broker.Partition, current int32) int16 {
	switch {
	case current < 0 || current == int32(p.LeaderEpoch()):
		return 0
	case current > int32(p.LeaderEpoch()):
		return kerr.UnknownLeaderEpoch.Code
	default:
		return kerr.FencedLeaderEpoch.Code
	}
}
