package kafka

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch responses carry the log's bytes. Rather than copying every batch into
// one response buffer (kmsg's AppendTo), the server encodes the response with
// kmsg around small markers standing in for the record sets, then writes the
// encoded pieces and the log's own byte slices together with one writev
// (net.Buffers):
//
//	kmsg encoding:  | … | len=16 | MARKER₀ | … | len=16 | MARKER₁ | … |
//	written:        | … | len=n₀ | records₀ (log bytes) | … | len=n₁ | records₁ | … |
//
// Only the length prefix of a bytes field is written by hand (int32, or
// uvarint n+1 in flexible versions); every other byte is kmsg's. The
// alternative rejected is a hand-written Fetch encoder: more code to keep in
// step with every new Fetch version.
//
// Markers are 16 bytes: a per-process random prefix no client can know
// (clients echo 16-byte topic ids back into responses) and a counter.

// spliceMin is the smallest record set worth splicing instead of copying.
const spliceMin = 4 << 10

const markerLen = 16

var markerPrefix = func() [12]byte {
	var p [12]byte
	_, _ = rand.Read(p[:])
	p[0] = 0xff // never in a topic name
	return p
}()

func marker(i int) []byte {
	m := make([]byte, markerLen)
	copy(m, markerPrefix[:])
	binary.BigEndian.PutUint32(m[12:], uint32(i))
	return m
}

// outbound is an encoded response: the buffers to write in order, and the
// pooled read buffers to recycle once they are written.
type outbound struct {
	bufs    net.Buffers
	recycle *fetchResponse
}

// encodeResponse returns the whole response frame as buffers to write in
// order.
func encodeResponse(correlationID int32, resp kmsg.Response) outbound {
	switch r := resp.(type) {
	case *fetchResponse:
		return outbound{bufs: encodeFetch(correlationID, r.FetchResponse), recycle: r}
	case *kmsg.FetchResponse:
		return outbound{bufs: encodeFetch(correlationID, r)}
	}
	return outbound{bufs: net.Buffers{appendResponse(nil, correlationID, resp)}}
}

// encodeFetch encodes a fetch response, splicing large record sets in
// without copying them. It leaves resp as it found it.
func encodeFetch(correlationID int32, resp *kmsg.FetchResponse) net.Buffers {
	var records [][]byte
	for ti := range resp.Topics {
		ps := resp.Topics[ti].Partitions
		for pi := range ps {
			if len(ps[pi].RecordBatches) >= spliceMin {
				records = append(records, ps[pi].RecordBatches)
				ps[pi].RecordBatches = marker(len(records) - 1)
			}
		}
	}
	frame := appendResponse(nil, correlationID, resp)
	if len(records) == 0 {
		return net.Buffers{frame}
	}
	i := 0
	for ti := range resp.Topics {
		ps := resp.Topics[ti].Partitions
		for pi := range ps {
			if len(ps[pi].RecordBatches) == markerLen && bytes.HasPrefix(ps[pi].RecordBatches, markerPrefix[:]) {
				ps[pi].RecordBatches = records[i]
				i++
			}
		}
	}

	prefixLen := 4 // int32 length
	if resp.IsFlexible() {
		prefixLen = 1 // uvarint(16+1)
	}
	bufs := make(net.Buffers, 0, 3*len(records)+2)
	bufs = append(bufs, nil) // the frame size, below
	size := 0
	pos := 4
	for i, rec := range records {
		at := pos + bytes.Index(frame[pos:], marker(i))
		if at < pos+prefixLen {
			panic("kafka: fetch response marker not found") // broken invariant: kmsg writes every field
		}
		var prefix []byte
		if resp.IsFlexible() {
			prefix = binary.AppendUvarint(nil, uint64(len(rec))+1)
		} else {
			prefix = binary.BigEndian.AppendUint32(nil, uint32(len(rec)))
		}
		bufs = append(bufs, frame[pos:at-prefixLen], prefix, rec)
		size += at - prefixLen - pos + len(prefix) + len(rec)
		pos = at + markerLen
	}
	bufs = append(bufs, frame[pos:])
	size += len(frame) - pos
	bufs[0] = binary.BigEndian.AppendUint32(nil, uint32(size))
	return bufs
}
