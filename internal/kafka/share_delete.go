package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strandmq/strand/internal/share"
)

// Share groups in the classic group APIs: DeleteGroups deletes them,
// DescribeGroups names them as not classic (as Kafka 4 does).

// isShareGroup reports whether id is a share group on this node.
func (s *Server) isShareGroup(id string) bool {
	node, _ := s.shareNode()
	return node != nil && node.Coordinator.Has(id)
}

// deleteShareGroup deletes the share group id; ok is false when id is not
// a share group here (the classic answer stands).
func (s *Server) deleteShareGroup(ctx context.Context, id string) (int16, bool) {
	node, _ := s.shareNode()
	if node == nil {
		return 0, false
	}
	err := node.DeleteGroup(ctx, id) // on a cluster, the state at every share coordinator
	switch {
	case errors.Is(err, share.ErrGroupNotFound):
		return 0, false
	case err != nil:
		s.logger.Warn("kafka: delete share group", "group", id, "err", err)
		if code := shareCode(err); code != 0 {
			return code, true
		}
		return kerr.UnknownServerError.Code, true
	}
	return 0, true
}
