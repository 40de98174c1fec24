package dlq

import (
	"fmt"

	"github.com/strandmq/strand/internal/partition"
)

// RecordError is one record a rejected batch was refused for.
type RecordError struct {
	Index  int32 // the record's place in its batch (its offset delta)
	Reason string
}

// RecordErrors is the error of a batch refused by strand.validation.action=
// reject: it wraps partition.ErrInvalidRecord and lists every invalid record.
type RecordErrors struct {
	Topic     string
	Partition partition.PartitionID
	Records   []RecordError
}

func (e *RecordErrors) Error() string {
	first := e.Records[0]
	return fmt.Sprintf("%v: %s-%d: %d invalid record(s) in the batch; record %d: %s",
		partition.ErrInvalidRecord, e.Topic, e.Partition, len(e.Records), first.Index, first.Reason)
}

// Unwrap makes errors.Is(err, partition.ErrInvalidRecord) hold.
func (e *RecordErrors) Unwrap() error { return partition.ErrInvalidRecord }
