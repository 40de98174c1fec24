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
//   - With a transactional id the transaction coordinator answers
//     (internal/txn): a new id gets a producer id at epoch 0, an existing
//     one its epoch bumped (fencing the previous instance), an id with an
//     ongoing transaction has it aborted first (CONCURRENT_TRANSACTIONS
//     until that completes).

func (s *Server) handleInitProducerID(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		s.initTransactional(ctx, req, resp)
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
