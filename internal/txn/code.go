package txn

import "strconv"

// Code is the result of a coordinator operation. Its values equal Kafka's
// protocol error codes, so internal/kafka converts with int16(code), and this
// package needs neither kerr nor kmsg.
type Code int16

// The codes the coordinator returns (values from kerr).
const (
	CodeNone                      Code = 0
	CodeUnknownServerError        Code = -1
	CodeUnknownTopicOrPartition   Code = 3
	CodeCoordinatorNotAvailable   Code = 15
	CodeNotCoordinator            Code = 16
	CodeInvalidRequest            Code = 42
	CodeInvalidProducerEpoch      Code = 47
	CodeInvalidTxnState           Code = 48
	CodeInvalidProducerIDMapping  Code = 49
	CodeInvalidTransactionTimeout Code = 50
	CodeConcurrentTransactions    Code = 51
	CodeOperationNotAttempted     Code = 55
	CodeProducerFenced            Code = 90
	CodeTransactionalIDNotFound   Code = 105
	CodeTransactionAbortable      Code = 120
)

var codeNames = map[Code]string{
	CodeNone:                      "NONE",
	CodeUnknownServerError:        "UNKNOWN_SERVER_ERROR",
	CodeUnknownTopicOrPartition:   "UNKNOWN_TOPIC_OR_PARTITION",
	CodeCoordinatorNotAvailable:   "COORDINATOR_NOT_AVAILABLE",
	CodeNotCoordinator:            "NOT_COORDINATOR",
	CodeInvalidRequest:            "INVALID_REQUEST",
	CodeInvalidProducerEpoch:      "INVALID_PRODUCER_EPOCH",
	CodeInvalidTxnState:           "INVALID_TXN_STATE",
	CodeInvalidProducerIDMapping:  "INVALID_PRODUCER_ID_MAPPING",
	CodeInvalidTransactionTimeout: "INVALID_TRANSACTION_TIMEOUT",
	CodeConcurrentTransactions:    "CONCURRENT_TRANSACTIONS",
	CodeOperationNotAttempted:     "OPERATION_NOT_ATTEMPTED",
	CodeProducerFenced:            "PRODUCER_FENCED",
	CodeTransactionalIDNotFound:   "TRANSACTIONAL_ID_NOT_FOUND",
	CodeTransactionAbortable:      "TRANSACTION_ABORTABLE",
}

// String returns Kafka's name for the code, e.g. "PRODUCER_FENCED".
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "CODE(" + strconv.Itoa(int(c)) + ")"
}

// The API keys whose answers ForVersion adapts.
const (
	APIInitProducerID     int16 = 22
	APIAddPartitionsToTxn int16 = 24
	APIAddOffsetsToTxn    int16 = 25
	APIEndTxn             int16 = 26
)

// ForVersion adapts a coordinator code to a request version: clients older
// than PRODUCER_FENCED (InitProducerId < v4, AddPartitionsToTxn,
// AddOffsetsToTxn and EndTxn < v2) are answered INVALID_PRODUCER_EPOCH
// instead, as KafkaApis does, so they keep their old handling.
func ForVersion(api, version int16, c Code) Code {
	if c != CodeProducerFenced {
		return c
	}
	switch {
	case api == APIInitProducerID && version < 4,
		(api == APIAddPartitionsToTxn || api == APIAddOffsetsToTxn || api == APIEndTxn) && version < 2:
		return CodeInvalidProducerEpoch
	}
	return c
}
