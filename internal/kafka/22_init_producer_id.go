package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID: v0-v5.
//
// Behavior:
//   - A non-transactional (idempotent) producer gets a fresh producer id at
//     epoch 0, every time, as Kafka does: ids are never reused, even across
//     restarts (they are reserved on disk in blocks).
//   - v3+ (KIP-360): a request carrying its current id and epoch still gets
//     a fresh id; for an idempotent producer that is what Kafka does too.
//
// Deviations:
//   - Transactions are not implemented: a transactional id gets
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED (a non-retriable error, so a
//     transactional client fails fast with a clear cause instead of looping).

func (s *Server) handleInitProducerID(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	id, epoch, err := s.b.AllocateProducerID()
	if err != nil {
		s.logger.Error("kafka: allocate producer id", "err", err)
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = int64(id), int16(epoch)
	return resp, nil
}
