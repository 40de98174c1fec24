package txn

import "github.com/strandmq/strand/internal/producer"

// IDSource hands out producer ids that were never handed out before. The
// broker backs it with what InitProducerId already uses: producer.Allocator
// (single node, blocks reserved on disk) or the controller's producer-id
// blocks (cluster.ProducerIDBlock, broker/member.go nextProducerID). An
// error is answered to the client as the code the caller's wrapping maps it
// to (Kafka: Errors.forException), here always COORDINATOR_NOT_AVAILABLE
// unless the source returns a CodeError.
type IDSource interface {
	NextProducerID() (producer.ID, error)
}

// IDFunc adapts a function to IDSource (e.g. a *broker.Broker method value).
type IDFunc func() (producer.ID, error)

// NextProducerID calls f.
func (f IDFunc) NextProducerID() (producer.ID, error) { return f() }

// CodeError is an error that names the Code to answer with.
type CodeError struct {
	Code Code
	Err  error
}

func (e *CodeError) Error() string { return "txn: " + e.Code.String() + ": " + e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }
