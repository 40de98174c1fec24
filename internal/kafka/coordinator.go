package kafka

import (
	"context"
	"errors"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/group/consumer"
)

// groupAPI is what the group handlers ask of a coordinator.
type groupAPI interface {
	Join(ctx context.Context, req group.JoinRequest) group.JoinResponse
	Sync(ctx context.Context, req group.SyncRequest) group.SyncResponse
	Heartbeat(ctx context.Context, req group.HeartbeatRequest) group.Code
	Leave(ctx context.Context, req group.LeaveRequest) group.LeaveResponse
	Describe(ctx context.Context, groupIDs []string) []group.GroupDescription
	Delete(ctx context.Context, groupIDs []string) map[string]group.Code
	CommitOffsets(ctx context.Context, req group.OffsetCommitRequest) map[group.TopicPartition]group.Code
	FetchOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code)
	DeleteOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) (group.Code, map[group.TopicPartition]group.Code)
	FetchMemberOffsets(ctx context.Context, groupID string, memberID *string, epoch int32, partitions []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code)
	ConsumerHeartbeat(ctx context.Context, req consumer.Request) consumer.Response
	ConsumerDescribe(ctx context.Context, groupIDs []string) []group.ConsumerGroupDescription
}

// groupsFor returns the coordinator of group id if this node runs it, or
// one that answers every request for the group NOT_COORDINATOR (another
// node leads its __consumer_offsets partition: clients ask FindCoordinator
// again) or COORDINATOR_LOAD_IN_PROGRESS (this node is replaying it:
// clients retry).
func (s *Server) groupsFor(id string) groupAPI {
	g, err := s.b.GroupCoordinator(id)
	switch {
	case err == nil:
		return g
	case errors.Is(err, broker.ErrCoordinatorLoading):
		return elsewhere{group.CodeCoordinatorLoadInProgress}
	}
	return elsewhere{group.CodeNotCoordinator}
}

// elsewhere answers for a group this node does not (yet) coordinate.
type elsewhere struct{ notHere group.Code }

func (e elsewhere) Join(_ context.Context, req group.JoinRequest) group.JoinResponse {
	return group.JoinResponse{Code: e.notHere, MemberID: req.MemberID, Generation: group.NoGeneration}
}

func (e elsewhere) Sync(context.Context, group.SyncRequest) group.SyncResponse {
	return group.SyncResponse{Code: e.notHere}
}

func (e elsewhere) Heartbeat(context.Context, group.HeartbeatRequest) group.Code { return e.notHere }

func (e elsewhere) Leave(context.Context, group.LeaveRequest) group.LeaveResponse {
	return group.LeaveResponse{Code: e.notHere}
}

func (e elsewhere) Describe(_ context.Context, ids []string) []group.GroupDescription {
	out := make([]group.GroupDescription, len(ids))
	for i, id := range ids {
		out[i] = group.GroupDescription{GroupID: id, Code: e.notHere}
	}
	return out
}

func (e elsewhere) Delete(_ context.Context, ids []string) map[string]group.Code {
	out := make(map[string]group.Code, len(ids))
	for _, id := range ids {
		out[id] = e.notHere
	}
	return out
}

func (e elsewhere) CommitOffsets(_ context.Context, req group.OffsetCommitRequest) map[group.TopicPartition]group.Code {
	out := make(map[group.TopicPartition]group.Code, len(req.Offsets))
	for tp := range req.Offsets {
		out[tp] = e.notHere
	}
	return out
}

func (e elsewhere) FetchOffsets(context.Context, string, []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code) {
	return nil, e.notHere
}

func (e elsewhere) DeleteOffsets(context.Context, string, []group.TopicPartition) (group.Code, map[group.TopicPartition]group.Code) {
	return e.notHere, nil
}

func (e elsewhere) FetchMemberOffsets(context.Context, string, *string, int32, []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code) {
	return nil, e.notHere
}

func (e elsewhere) ConsumerHeartbeat(context.Context, consumer.Request) consumer.Response {
	return consumer.Response{Code: consumer.Code(e.notHere)}
}

func (e elsewhere) ConsumerDescribe(_ context.Context, ids []string) []group.ConsumerGroupDescription {
	out := make([]group.ConsumerGroupDescription, len(ids))
	for i, id := range ids {
		out[i] = group.ConsumerGroupDescription{GroupID: id, Code: e.notHere}
	}
	return out
}
