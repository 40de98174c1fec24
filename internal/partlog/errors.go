package partlog

import (
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/record"
)

var (
	// ErrOffsetOutOfRange is matched (errors.Is) by *OutOfRangeError.
	ErrOffsetOutOfRange = errors.New("partlog: offset out of range")
	// ErrClosed is returned by every operation on a closed log.
	ErrClosed = errors.New("partlog: log closed")
	// ErrFailed is returned by appends after an fsync failed: the state of the
	// unsynced tail is unknown, so the log refuses writes until it is reopened
	// and recovered (the lesson of PostgreSQL's fsyncgate). Reads go on.
	ErrFailed = errors.New("partlog: log failed after an fsync error; reopen to recover")
	// ErrDamaged is matched by the error of every operation on a log whose
	// durable data is damaged (a torn or corrupt batch below the recovery
	// point): nothing is truncated or served until an operator repairs it.
	ErrDamaged = errors.New("partlog: log offline: durable data is damaged")
	// ErrOffsetsOutOfOrder: a follower's batch starts below the log end
	// (Kafka's UnexpectedAppendOffsetException): it must truncate first.
	ErrOffsetsOutOfOrder = errors.New("partlog: batch offsets out of order")
	// ErrBatchTooLarge is returned when a batch can never fit in a segment.
	ErrBatchTooLarge = errors.New("partlog: batch larger than segment.bytes")
)

// OutOfRangeError says an offset lies outside [start, end] of the log.
type OutOfRangeError struct {
	Offset, Start, End record.Offset
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("partlog: offset %d out of range [%d, %d]", e.Offset, e.Start, e.End)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) hold.
func (e *OutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// CorruptionError locates bad bytes in a segment or index file. Recovery
// truncates at Pos; other paths return it to the caller.
type CorruptionError struct {
	File string // base name, e.g. 00000000000000001000.log
	Pos  int64  // byte position in File
	Err  error  // what is wrong (record.ErrCRC, record.ErrShortBatch, …)
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("partlog: segment %s: %v at position %d", e.File, e.Err, e.Pos)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
