package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/share"
)

// Share groups (KIP-932): what the share handlers (76–79) have in common.
// The state machines are internal/share's; the node hosts them
// (broker.ShareNode; on a cluster the share-partitions live on their
// partitions' leaders, membership on the group's coordinator and the state
// with the share coordinators, share_state.go).

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
	{share.ErrNotEmpty, kerr.NonEmptyGroup},
	{share.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch},
	{share.ErrFencedStateEpoch, kerr.FencedStateEpoch},
	{broker.ErrNotCoordinator, kerr.NotCoordinator},
	{broker.ErrCoordinatorLoading, kerr.CoordinatorLoadInProgress},
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
// share request is answered with when it serves none.
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

// alterShareGroupConfigs applies IncrementalAlterConfigs to a GROUP
// resource: share-group configs only, SET and DELETE.
func (s *Server) alterShareGroupConfigs(ctx context.Context, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	node, code := s.shareNode()
	if node == nil {
		return kerr.ErrorForCode(code)
	}
	set := map[string]*string{}
	for _, c := range rr.Configs {
		if _, dup := set[c.Name]; dup {
			return fmt.Errorf("%w: config %s listed twice", kerr.InvalidRequest, c.Name)
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return fmt.Errorf("%w: %s: null value", kerr.InvalidConfig, c.Name)
			}
			set[c.Name] = c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			set[c.Name] = nil
		default:
			return fmt.Errorf("%w: %s: group configs are not lists", kerr.InvalidConfig, c.Name)
		}
	}
	if err := node.Coordinator.AlterConfigs(ctx, rr.ResourceName, set, validateOnly); err != nil {
		if errors.Is(err, share.ErrInvalidConfig) {
			return fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
		}
		if errors.Is(err, cluster.ErrUnsupportedFeature) { // a cluster below metadata.version 4
			return fmt.Errorf("%w: %v", kerr.UnsupportedVersion, err)
		}
		return err
	}
	return nil
}

// shareGroupConfigs describes a GROUP resource: every share-group config
// with its effective value.
func (s *Server) shareGroupConfigs(group string) ([]broker.ConfigEntry, bool, error) {
	node, code := s.shareNode()
	if node == nil {
		return nil, true, kerr.ErrorForCode(code)
	}
	own := node.Coordinator.Configs(group)
	gc := node.Coordinator.GroupConfig(group)
	defaults := map[string]string{
		share.ConfigLockDuration:    strconv.FormatInt(gc.Partition.LockDuration.Milliseconds(), 10),
		share.ConfigDeliveryLimit:   strconv.Itoa(int(gc.Partition.DeliveryLimit)),
		share.ConfigAutoOffsetReset: gc.AutoOffsetReset,
		share.ConfigIsolationLevel:  "read_uncommitted",
		share.ConfigSessionTimeout:  "45000",
		share.ConfigHeartbeat:       "5000",
		share.ConfigDeadLetterTopic: gc.DeadLetterTopic,
	}
	var out []broker.ConfigEntry
	for _, name := range slices.Sorted(slices.Values(share.ConfigNames)) {
		e := broker.ConfigEntry{Name: name, Value: defaults[name], Source: broker.SourceDefault, Type: broker.TypeString}
		if v, ok := own[name]; ok {
			e.Value, e.Source = v, broker.ConfigSource(kmsg.ConfigSourceGroupConfig)
		}
		out = append(out, e)
	}
	return out, false, nil
}

// closeShareSessions closes the share sessions opened on a connection that
// closed and releases their members' acquired records, as Kafka does: the
// records go to other members at once, not when their locks expire.
func (s *Server) closeShareSessions(c *conn) {
	node, _ := s.shareNode()
	if node == nil {
		return
	}
	for _, m := range node.Sessions.DropOwner(c) {
		node.Manager.ReleaseMember(context.Background(), m.Group, m.ID)
	}
}

// connOf is the connection a share request came on (handlerContext).
func connOf(ctx context.Context) any {
	if c, ok := ctx.Value(connKey{}).(*conn); ok {
		return c
	}
	return nil
}

// emptyShareGroup is the share node for a request that may change a
// group's offsets only while the group has no members (asked of the
// group's coordinator: only it knows them); without it, the error code
// (and message) to answer.
func (s *Server) emptyShareGroup(group string) (*broker.ShareNode, int16, *string) {
	node, code := s.shareNode()
	if node == nil {
		return nil, code, nil
	}
	if code := s.shareCoordinatorCode(group); code != 0 { // only the group's coordinator knows its members
		return nil, code, nil
	}
	if err := node.Coordinator.CheckEmpty(group); err != nil {
		return nil, kerr.NonEmptyGroup.Code, shareMessage(err)
	}
	return node, 0, nil
}

// shareCoordinatorCode is 0 if this node coordinates group's membership
// (it leads the group's __consumer_offsets partition, as for KIP-848
// groups), else NOT_COORDINATOR (the client asks FindCoordinator again) or
// COORDINATOR_LOAD_IN_PROGRESS.
func (s *Server) shareCoordinatorCode(group string) int16 {
	if _, err := s.b.GroupCoordinator(group); err != nil {
		return shareCode(err)
	}
	return 0
}
