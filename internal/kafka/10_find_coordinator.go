package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0-v6.
//
// Behavior:
//   - The coordinator of every group is this node, at its advertised
//     address (a cluster of one; __consumer_offsets has one partition, led
//     here).
//   - v0-v3 ask for one key; v4+ (KIP-699) for a batch of keys, answered
//     one by one in request order.
//   - Key type 1 (transaction) answers INVALID_REQUEST ("transactions are
//     not supported"): Strand has no transaction coordinator, and a
//     non-retriable error fails a transactional producer at once rather
//     than leaving it retrying. Any other unknown key type (2, share
//     groups) is INVALID_REQUEST too, as in Kafka.
//   - librdkafka uses FindCoordinator v0's presence as its signal that the
//     broker supports LZ4, so v0 is served.

const apiKeyJoinGroup = 11

// Kafka's coordinator key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

var (
	errTransactionsUnsupported = errors.New("transactions are not supported: Strand has no transaction coordinator")
	errUnknownCoordinatorType  = errors.New("unknown coordinator key type")
)

func (s *Server) handleFindCoordinator(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	ep := s.advertisedEndpoint()
	answer := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch req.CoordinatorType {
		case coordinatorGroup:
			c.NodeID, c.Host, c.Port = int32(s.b.NodeID()), ep.host, ep.port
			return c
		case coordinatorTransaction:
			c.ErrorMessage = errMessage(errTransactionsUnsupported)
		default:
			c.ErrorMessage = errMessage(errUnknownCoordinatorType)
		}
		c.ErrorCode = kerr.InvalidRequest.Code
		c.NodeID, c.Port = -1, -1
		return c
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, answer(key))
		}
		return resp, nil
	}
	c := answer(req.CoordinatorKey)
	resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
	if req.Version >= 1 {
		resp.ErrorMessage = c.ErrorMessage
	}
	return resp, nil
}
