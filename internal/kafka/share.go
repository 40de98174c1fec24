package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/share"
)

// Share groups (KIP-932): what the share handlers (76–79) have in common.
// The state machines are internal/share's; the node hosts them
// (broker.ShareNode; nil on a cluster member, see shareNode).

// shareCodes maps internal/share's errors to Kafka's codes.
var shareCodes = []struct {
	err  error
	code *kerr.Error
}{
	{share.ErrUnknownMember, kerr.UnknownMemberID},
	{share.ErrFencedEpoch, kerr.FencedMemberEpoch},
	{share.ErrInvalidMessage, kerr.InvalidRequest},
	{share.ErrInvalidRequest, kerr.InvalidRequest},
	{share.ErrInvalidRecordState, kerr.InvalidRecordState},
	{share.ErrSessionNotFound, kerr.ShareSessionNotFound},
	{share.ErrSessionEpoch, kerr.InvalidShareSessionEpoch},
	{share.ErrInvalidConfig, kerr.InvalidConfig},
	{share.ErrGroupNotFound, kerr.GroupIDNotFound},
}

// shareCode is the Kafka error code of err.
func shareCode(err error) int16 {
	for _, m := range shareCodes {
		if errors.Is(err, m.err) {
			return m.code.Code
		}
	}
	return errorCode(err)
}

// shareMessage is err's text for an ErrorMessage field (nil for no error).
func shareMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// shareNode returns this node's share groups, or nil with the code every
// share request is answered with when it serves none (a cluster member:
// share groups are single-node for now, docs/SHARE.md).
func (s *Server) shareNode() (*broker.ShareNode, int16) {
	if n := s.b.Share(); n != nil {
		return n, 0
	}
	return nil, kerr.UnsupportedVersion.Code
}

// shareTP resolves a topic id and partition to a share.TopicPartition.
func (s *Server) shareTP(id [16]byte, partition int32) (share.TopicPartition, error) {
	t, err := s.b.TopicByID(broker.TopicID(id))
	if err != nil {
		return share.TopicPartition{}, err
	}
	if partition < 0 || partition >= t.Partitions() {
		return share.TopicPartition{}, broker.ErrUnknownTopicOrPartition
	}
	return share.TopicPartition{TopicID: id, Topic: t.Name, Partition: partition}, nil
}
