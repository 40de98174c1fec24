package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// DescribeCluster: v0-v2.
//
// Behavior:
//   - The cluster id, the brokers Metadata lists (v2 IncludeFencedBrokers:
//     fenced ones too, with IsFenced) and the controller.
//   - EndpointType 1 (brokers): the nodes with the broker role; a
//     controller-only node (--roles controller) is left out, as Kafka's
//     brokers leave controllers out. (Metadata still lists it, so that a
//     client can reach the controller it names for admin requests: it
//     leads no partition and coordinates no group, so no data request is
//     sent to it, and one that is gets NOT_LEADER_OR_FOLLOWER.)
//   - v1+ EndpointType 2 (controllers, KIP-919): the metadata quorum's
//     voters, at their client endpoints, whichever node is asked (Kafka's
//     brokers answer MISMATCHED_ENDPOINT_TYPE; Strand's nodes all serve
//     the client protocol). A single node is its own controller. Other
//     endpoint types: MISMATCHED_ENDPOINT_TYPE.
//   - ClusterAuthorizedOperations: KIP-430's bitfield when requested
//     (authz_ops.go), else Kafka's omitted value.

func (s *Server) handleDescribeCluster(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	list := s.brokers(req.IncludeFencedBrokers)
	switch {
	case req.Version >= 1 && req.EndpointType == 2:
		if s.b.Clustered() {
			list = s.b.Controllers()
		}
	case req.Version >= 1 && req.EndpointType != 1:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		return resp, nil
	default:
		list = slices.DeleteFunc(list, func(bi broker.BrokerInfo) bool { return !bi.IsBroker() })
	}
	resp.EndpointType = req.EndpointType
	if req.Version < 1 {
		resp.EndpointType = 1
	}
	resp.ClusterID = s.b.ClusterID()
	resp.ControllerID = int32(s.b.ControllerID())
	for _, bi := range list {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port, b.IsFenced = int32(bi.ID), bi.Host, bi.Port, bi.Fenced
		if bi.Rack != "" {
			b.Rack = &bi.Rack
		}
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
