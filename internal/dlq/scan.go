package dlq

import (
	"encoding/binary"
	"sync"

	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/record"
)

// redrivenRecord reports whether a record came back from a DLQ (a redrive
// marks it, whoever runs it: the broker, the CLI, or another client).
func redrivenRecord(hs []record.RecordHeader) bool {
	for _, h := range hs {
		if h.Key == ingest.HeaderRedriveSource {
			return true
		}
	}
	return false
}

// allValid is screen's fast path: it walks the batch's records section
// (decompressed if need be) just far enough to find each key and value, and
// reports whether the validator accepts them all. Anything unexpected (a
// malformed record, a failed decompression) answers false, and record.Decode
// then judges the batch properly and says what is wrong with it. Decoding
// every record into a Record (with its canonical-encoding check) cost as
// much as validating the JSON in it.
func allValid(batch []byte, h record.Header, v *ingest.Validator) (ok bool, redriven int32) {
	if len(batch) < h.Size() || h.Size() < record.HeaderSize {
		return false, 0
	}
	var buf *[]byte
	if h.Compression() != record.CodecNone {
		buf = decompressBufs.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= maxPooledDecompress {
				decompressBufs.Put(buf)
			}
		}()
	}
	var payload []byte
	var err error
	if buf != nil {
		payload, err = record.DecompressInto(*buf, h.Compression(), batch[record.HeaderSize:h.Size()])
		*buf = payload[:0]
	} else {
		payload = batch[record.HeaderSize:h.Size()]
	}
	if err != nil {
		return false, 0
	}
	for range h.NumRecords {
		size, n := binary.Varint(payload)
		if n <= 0 || size < 1 || size > int64(len(payload)-n) {
			return false, 0
		}
		rec := payload[n+1 : n+int(size)] // after the attributes byte
		payload = payload[n+int(size):]
		for range 2 { // timestamp delta, offset delta
			if _, n = binary.Varint(rec); n <= 0 {
				return false, 0
			}
			rec = rec[n:]
		}
		key, rec, ok := varBytes(rec)
		if !ok {
			return false, 0
		}
		value, rec, ok := varBytes(rec)
		if !ok || v.Validate(key, value) != "" {
			return false, 0
		}
		if hasRedriveHeader(rec) {
			redriven++
		}
	}
	return len(payload) == 0, redriven
}

// hasRedriveHeader reports whether a record's encoded headers section
// holds the redrive source header (false if it cannot be read: the
// record's validity does not depend on its headers).
func hasRedriveHeader(rec []byte) bool {
	count, n := binary.Varint(rec)
	if n <= 0 {
		return false
	}
	rec = rec[n:]
	for range count {
		key, rest, ok := varBytes(rec)
		if !ok {
			return false
		}
		if string(key) == ingest.HeaderRedriveSource {
			return true
		}
		if _, rec, ok = varBytes(rest); !ok {
			return false
		}
	}
	return false
}

// Decompressed records sections are recycled across validated batches (the
// values only need to live while they are judged); a buffer grown past
// maxPooledDecompress is left to the garbage collector.
const maxPooledDecompress = 4 << 20

var decompressBufs = sync.Pool{New: func() any { return new([]byte) }}

// varBytes reads a varint-length-prefixed nullable byte string.
func varBytes(b []byte) (field, rest []byte, ok bool) {
	l, n := binary.Varint(b)
	switch {
	case n <= 0 || l < -1 || l > int64(len(b)-n):
		return nil, nil, false
	case l == -1:
		return nil, b[n:], true
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
