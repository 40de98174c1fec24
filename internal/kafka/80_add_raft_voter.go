package kafka

import (
	"context"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster/quorum"
)

// AddRaftVoter: v0-v1, and RemoveRaftVoter: v0 (KIP-853).
//
// Behavior:
//   - Any node of a cluster takes them and passes the change to the
//     controller, which commits it through raft (AddVoter / RemoveServer):
//     the new voter's raft address is its first listener (Strand's raft
//     port, where a node started with --join waits to be added).
//   - A ClusterID that is not this cluster's is INCONSISTENT_CLUSTER_ID.
//   - A single node has no quorum to change: INVALID_REQUEST.
//   - VoterDirectoryID is not used (hashicorp/raft names voters by id and
//     address only).

func (s *Server) handleAddRaftVoter(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	v := quorum.VoterChange{ID: req.VoterID}
	if len(req.Listeners) > 0 {
		v.Addr = net.JoinHostPort(req.Listeners[0].Host, strconv.Itoa(int(req.Listeners[0].Port)))
	}
	resp.ErrorCode, resp.ErrorMessage = s.changeVoter(req.ClusterID, v)
	return resp, nil
}

func (s *Server) handleRemoveRaftVoter(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	resp.ErrorCode, resp.ErrorMessage = s.changeVoter(req.ClusterID, quorum.VoterChange{ID: req.VoterID, Remove: true})
	return resp, nil
}

func (s *Server) changeVoter(clusterID *string, v quorum.VoterChange) (int16, *string) {
	if clusterID != nil && *clusterID != s.b.ClusterID() {
		return kerr.InconsistentClusterID.Code, kmsg.StringPtr("cluster " + *clusterID + " is not this cluster (" + s.b.ClusterID() + ")")
	}
	if !s.b.Clustered() {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("a single node has no metadata quorum to change")
	}
	if err := s.b.ChangeVoter(v); err != nil {
		s.logger.Warn("kafka: changing the quorum's voters", "voter", v.ID, "remove", v.Remove, "err", err)
		code := errorCode(err)
		if code == kerr.UnknownServerError.Code {
			code = kerr.InvalidRequest.Code
		}
		return code, errMessage(err)
	}
	return 0, nil
}
