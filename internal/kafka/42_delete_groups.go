package kafka

import (
	"context"
	"maps"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/group"
)

// DeleteGroups: v0-v2.
//
// Behavior:
//   - Deletes each group with its committed offsets (tombstones in
//     __consumer_offsets), in request order. A group with members:
//     NON_EMPTY_GROUP; an unknown group: GROUP_ID_NOT_FOUND; an empty id:
//     INVALID_GROUP_ID.
//   - A share group (an id no classic or consumer group has): deleted
//     with its share-partition state and its group configs when it has no
//     members (Kafka deletes the state with DeleteShareGroupState first);
//     NON_EMPTY_GROUP while it has some (share_delete.go).

func (s *Server) handleDeleteGroups(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	codes := map[string]group.Code{}
	for _, id := range req.Groups {
		maps.Copy(codes, s.groupsFor(id).Delete(ctx, []string{id}))
		if codes[id] == group.CodeGroupIDNotFound {
			if code, ok := s.deleteShareGroup(ctx, id); ok {
				codes[id] = group.Code(code)
			}
		}
	}
	for _, id := range req.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group, g.ErrorCode = id, int16(codes[id])
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}
