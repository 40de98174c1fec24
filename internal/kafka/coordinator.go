package kafka

import (
	"context"

	"github.com/strandmq/strand/internal/group"
)

// groupAPI is what the group handlers ask of a coordinator.
type groupAPI interface {
	Join(ctx context.Context, req group.JoinRequest) group.JoinResponse
	Sync(ctx context.Context, req group.SyncRequest) group.SyncResponse
	Heartbeat(ctx context.Context, req group.HeartbeatRequest) group.Code
	Leave(ctx context.Context, req group.LeaveRequest) group.LeaveResponse
	Describe(ctx context.Context, groupIDs []string) []group.GroupDescription
	List(ctx context.Context, states []group.State) []group.GroupListing
	Delete(ctx context.Context, groupIDs []string) map[string]group.Code
	CommitOffsets(ctx context.Context, req group.OffsetCommitRequest) map[group.TopicPartition]group.Code
	FetchOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code)
	DeleteOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) (group.Code, map[group.TopicPartition]group.Code)
}

// groups returns this node's coordinator, or, on a cluster member that
// coordinates no group, one that answers every group request
// NOT_COORDINATOR (clients then ask FindCoordinator again) and lists no
// groups (admin clients ask every broker).
func (s *Server) groups() groupAPI {
	if g := s.b.Groups(); g != nil {
		return g
	}
	return elsewhere{}
}

type elsewhere struct{}

const notHere = group.CodeNotCoordinator

func (elsewhere) Join(_ context.Context, req group.JoinRequest) group.JoinResponse {
	return group.JoinResponse{Code: notHere, MemberID: req.MemberID, Generation: group.NoGeneration}
}

func (elsewhere) Sync(context.Context, group.SyncRequest) group.SyncResponse {
	return group.SyncResponse{Code: notHere}
}

func (elsewhere) Heartbeat(context.Context, group.HeartbeatRequest) group.Code { return notHere }

func (elsewhere) Leave(context.Context, group.LeaveRequest) group.LeaveResponse {
	return group.LeaveResponse{Code: notHere}
}

func (elsewhere) Describe(_ context.Context, ids []string) []group.GroupDescription {
	out := make([]group.GroupDescription, len(ids))
	for i, id := range ids {
		out[i] = group.GroupDescription{GroupID: id, Code: notHere}
	}
	return out
}

func (elsewhere) List(context.Context, []group.State) []group.GroupListing { return nil }

func (elsewhere) Delete(_ context.Context, ids []string) map[string]group.Code {
	out := make(map[string]group.Code, len(ids))
	for _, id := range ids {
		out[id] = notHere
	}
	return out
}

func (elsewhere) CommitOffsets(_ context.Context, req group.OffsetCommitRequest) map[group.TopicPartition]group.Code {
	out := make(map[group.TopicPartition]group.Code, len(req.Offsets))
	for tp := range req.Offsets {
		out[tp] = notHere
	}
	return out
}

func (elsewhere) FetchOffsets(context.Context, string, []group.TopicPartition) (map[group.TopicPartition]group.OffsetAndMetadata, group.Code) {
	return nil, notHere
}

func (elsewhere) DeleteOffsets(context.Context, string, []group.TopicPartition) (group.Code, map[group.TopicPartition]group.Code) {
	return notHere, nil
}
