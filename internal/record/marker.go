package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Transaction markers (KIP-98). A control batch holds one record whose key
// is ControlRecordKey{version int16 = 0, type int16} (0 abort, 1 commit)
// and whose value is EndTxnMarker{version int16 = 0, coordinator epoch
// int32}. The batch carries the transaction's producer id and epoch, base
// sequence −1, and takes one offset.

// Marker is what a control batch says.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// ErrNotMarker means a batch is not a transaction marker.
var ErrNotMarker = errors.New("record: not a transaction marker")

// EncodeMarker returns a control batch ending the transaction of producer
// (pid, epoch) at offset 0 (the log assigns the real one).
func EncodeMarker(pid int64, epoch int16, m Marker, ts int64) ([]byte, error) {
	key := make([]byte, 4)
	if m.Commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	opts := DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch = pid, epoch
	opts.Transactional, opts.Control = true, true
	return Encode(0, []Record{{Timestamp: ts, Key: key, Value: value}}, opts)
}

// DecodeMarker reads the marker of a control batch.
func DecodeMarker(batch []byte) (Marker, error) {
	b, err := Decode(batch)
	if err != nil {
		return Marker{}, err
	}
	if !b.Header.IsControl() || len(b.Records) == 0 {
		return Marker{}, ErrNotMarker
	}
	key := b.Records[0].Key
	if len(key) < 4 {
		return Marker{}, fmt.Errorf("%w: control key of %d bytes", ErrNotMarker, len(key))
	}
	var m Marker
	switch t := binary.BigEndian.Uint16(key[2:]); t {
	case 0:
	case 1:
		m.Commit = true
	default:
		return Marker{}, fmt.Errorf("%w: control type %d", ErrNotMarker, t)
	}
	if v := b.Records[0].Value; len(v) >= 6 {
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(v[2:]))
	}
	return m, nil
}
