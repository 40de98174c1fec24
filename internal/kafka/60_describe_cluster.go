package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-v2.
//
// Behavior:
//   - The cluster id, the brokers Metadata lists (v2 IncludeFencedBrokers:
//     fenced ones too, with IsFenced) and the controller.
//   - v1+: EndpointType 1 (brokers) only; asking this broker for
//     controllers (2) is MISMATCHED_ENDPOINT_TYPE, as Kafka's brokers answer.
//   - ClusterAuthorizedOperations: KIP-430's bitfield when requested
//     (authz_ops.go), else Kafka's omitted value.

func (s *Server) handleDescribeCluster(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		return resp, nil
	}
	resp.EndpointType = 1
	resp.ClusterID = s.b.ClusterID()
	resp.ControllerID = int32(s.b.ControllerID())
	for _, bi := range s.brokers(req.IncludeFencedBrokers) {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.IsFenced = int32(bi.ID), bi.Host, bi.Port, bi.Fenced
		if bi.Rack != "" {
			b.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
