package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
)

// brokerAddr returns broker id's client address; self is this node's.
func (s *Server) brokerAddr(id broker.NodeID, self endpoint) (string, int32, bool) {
	if id == s.b.NodeID() {
		return self.host, self.port, true
	}
	for _, bi := range s.brokers(false) {
		if bi.ID == id {
			return bi.Host, bi.Port, true
		}
	}
	return "", 0, false
}

// FindCoordinator: v0-v6.
//
// Behavior:
//   - The coordinator of a group is the leader of its __consumer_offsets
//     partition: this node when alone. A cluster creates the topic on the
//     first FindCoordinator (as Kafka); while it has no leader the answer
//     is COORDINATOR_NOT_AVAILABLE.
//   - v0-v3 ask for one key; v4+ (KIP-699) for a batch of keys, answered
//     one by one in request order.
//   - Key type 1 (transaction): the leader of the transactional id's
//     __transaction_state partition (created on a cluster's first request).
//     Any other unknown key type (2, share groups) is INVALID_REQUEST, as
//     in Kafka.
//   - librdkafka uses FindCoordinator v0's presence as its signal that the
//     broker supports LZ4, so v0 is served.

const apiKeyJoinGroup = 11

// Kafka's coordinator key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

var errUnknownCoordinatorType = errors.New("unknown coordinator key type")

func (s *Server) handleFindCoordinator(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	ep := s.advertisedEndpoint()
	answer := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch req.CoordinatorType {
		case coordinatorGroup, coordinatorTransaction:
			find := s.b.Coordinator
			if req.CoordinatorType == coordinatorTransaction {
				find = s.b.TxnCoordinatorNode
			}
			id, err := find(key)
			if err == nil {
				if host, port, ok := s.brokerAddr(id, ep); ok {
					c.NodeID, c.Host, c.Port = int32(id), host, port
					return c
				}
				err = broker.ErrCoordinatorNotAvailable
			}
			c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, errMessage(err)
			c.NodeID, c.Port = -1, -1
			return c
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
