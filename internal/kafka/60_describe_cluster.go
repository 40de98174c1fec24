package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-v2.
//
// Behavior:
//   - The cluster id, this node as the only broker and as the controller.
//   - v1+: EndpointType 1 (brokers) only; asking this broker for
//     controllers (2) is MISMATCHED_ENDPOINT_TYPE, as Kafka's brokers answer.
//   - v2+: the broker is never fenced.
//   - ClusterAuthorizedOperations: not computed (Kafka's "not requested"
//     sentinel).

func (s *Server) handleDescribeCluster(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		return resp, nil
	}
	resp.EndpointType = 1
	resp.ClusterID = s.b.ClusterID()
	resp.ControllerID = int32(s.b.NodeID())
	ep := s.advertisedEndpoint()
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = int32(s.b.NodeID()), ep.host, ep.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	return resp, nil
}
