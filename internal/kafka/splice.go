package kafka

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/partlog"
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
// Markers are 16 bytes: a per-process random prefix and a counter.

// A record set can also stay in its segment file (a partlog.Span, for
// consumer fetches): the handler puts a span marker in RecordBatches, and
// the writer sends the span's bytes with sendfile(2) between the buffers
// (writeSpan), so the log's bytes are never read into the process at all.
// Where the connection has no descriptor to sendfile to (TLS, a wrapped
// connection), the writer reads the span in chunks and writes those.

// spliceMin is the smallest record set worth splicing instead of copying.
const spliceMin = 4 << 10

const markerLen = 16

// markerPrefix starts every marker: a per-process random prefix no client
// can know (clients echo 16-byte topic ids back into responses). Byte 1
// tells the two kinds apart: a spliced record set's marker (encodeFetch,
// while it encodes) and a span's (the handler's, until the response is
// written).
var markerPrefix = func() [12]byte {
	var p [12]byte
	_, _ = rand.Read(p[:])
	p[0] = 0xff // never in a topic name
	p[1] &^= 1
	return p
}()

var spanPrefix = func() [12]byte {
	p := markerPrefix
	p[1] |= 1
	return p
}()

func marker(i int) []byte { return markerOf(markerPrefix, i) }

// spanMarker is the RecordBatches of a partition whose record set is the
// response's span i.
func spanMarker(i int) []byte { return markerOf(spanPrefix, i) }

func markerOf(prefix [12]byte, i int) []byte {
	m := make([]byte, markerLen)
	copy(m, prefix[:])
	binary.BigEndian.PutUint32(m[12:], uint32(i))
	return m
}

// spanIndex returns the span a RecordBatches marker stands for.
func spanIndex(b []byte) (int, bool) {
	if len(b) != markerLen || !bytes.HasPrefix(b, spanPrefix[:]) {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(b[12:])), true
}

// outbound is an encoded response: the buffers to write in order, the
// spans to send between them, and what to recycle once it is written.
type outbound struct {
	bufs    net.Buffers
	spans   []spanAt
	recycle recycler
	// later, when set, gives the outbound to write in its place once a
	// deferred answer is complete (deferred.go).
	later later
}

// recycler is a response whose memory goes back to a pool once written.
type recycler interface{ recycle() }

// spanAt is a span to send after bufs[:at].
type spanAt struct {
	at   int
	span partlog.Span
}

// encodeResponse returns the whole response frame as buffers to write in
// order.
func encodeResponse(correlationID int32, resp kmsg.Response) outbound {
	switch r := resp.(type) {
	case *fetchResponse:
		out := encodeFetch(correlationID, r.FetchResponse, r.spans)
		out.recycle = r
		return out
	case *kmsg.FetchResponse:
		return encodeFetch(correlationID, r, nil)
	case *shareFetchResponse:
		out := encodeFetch(correlationID, r.ShareFetchResponse, nil)
		out.recycle = r
		return out
	}
	return outbound{bufs: net.Buffers{appendResponse(nil, correlationID, resp)}}
}

// piece is a record set spliced into a fetch response: log bytes in memory,
// or a span of a segment file.
type piece struct {
	b    []byte
	span *partlog.Span
	// was is the partition's RecordBatches, put back after encoding.
	was []byte
}

func (p piece) len() int {
	if p.span != nil {
		return p.span.Len
	}
	return len(p.b)
}

// recordSets returns where a response that carries records keeps each
// partition's record set: Fetch's RecordBatches, ShareFetch's Records (the
// same bytes field, another name).
func recordSets(resp kmsg.Response) []*[]byte {
	var out []*[]byte
	switch r := resp.(type) {
	case *kmsg.FetchResponse:
		for ti := range r.Topics {
			for pi := range r.Topics[ti].Partitions {
				out = append(out, &r.Topics[ti].Partitions[pi].RecordBatches)
			}
		}
	case *kmsg.ShareFetchResponse:
		for ti := range r.Topics {
			for pi := range r.Topics[ti].Partitions {
				out = append(out, &r.Topics[ti].Partitions[pi].Records)
			}
		}
	}
	return out
}

// encodeFetch encodes a response carrying records (Fetch, ShareFetch:
// recordSets), splicing large record sets and the spans in without copying
// them. It leaves resp as it found it.
func encodeFetch(correlationID int32, resp kmsg.Response, spans []partlog.Span) outbound {
	var pieces []piece
	sets := recordSets(resp)
	for _, set := range sets {
		rb := *set
		if k, ok := spanIndex(rb); ok && k < len(spans) {
			pieces = append(pieces, piece{span: &spans[k], was: rb})
		} else if len(rb) >= spliceMin {
			pieces = append(pieces, piece{b: rb, was: rb})
		} else {
			continue
		}
		*set = marker(len(pieces) - 1)
	}
	frame := appendResponse(nil, correlationID, resp)
	if len(pieces) == 0 {
		return outbound{bufs: net.Buffers{frame}}
	}
	i := 0
	for _, set := range sets {
		if len(*set) == markerLen && bytes.HasPrefix(*set, markerPrefix[:]) {
			*set = pieces[i].was
			i++
		}
	}

	prefixLen := 4 // int32 length
	if resp.IsFlexible() {
		prefixLen = 1 // uvarint(16+1)
	}
	out := outbound{bufs: make(net.Buffers, 0, 3*len(pieces)+2)}
	out.bufs = append(out.bufs, nil) // the frame size, below
	size := 0
	pos := 4
	for i, pc := range pieces {
		at := pos + bytes.Index(frame[pos:], marker(i))
		if at < pos+prefixLen {
			panic("kafka: fetch response marker not found") // broken invariant: kmsg writes every field
		}
		n := pc.len()
		var prefix []byte
		if resp.IsFlexible() {
			prefix = binary.AppendUvarint(nil, uint64(n)+1)
		} else {
			prefix = binary.BigEndian.AppendUint32(nil, uint32(n))
		}
		out.bufs = append(out.bufs, frame[pos:at-prefixLen], prefix)
		if pc.span != nil {
			out.spans = append(out.spans, spanAt{at: len(out.bufs), span: *pc.span})
		} else {
			out.bufs = append(out.bufs, pc.b)
		}
		size += at - prefixLen - pos + len(prefix) + n
		pos = at + markerLen
	}
	out.bufs = append(out.bufs, frame[pos:])
	size += len(frame) - pos
	out.bufs[0] = binary.BigEndian.AppendUint32(nil, uint32(size))
	return out
}

// len is the response's size on the wire.
func (o outbound) len() int {
	n := 0
	for _, p := range o.bufs {
		n += len(p)
	}
	for _, sp := range o.spans {
		n += sp.span.Len
	}
	return n
}

// writeTo writes the response: the buffers with writev, each span (after
// the buffers before it) from its file.
func (o outbound) writeTo(nc io.Writer) error {
	prev := 0
	for _, sp := range o.spans {
		if prev < sp.at {
			b := o.bufs[prev:sp.at:sp.at]
			if _, err := b.WriteTo(nc); err != nil {
				return err
			}
		}
		prev = sp.at
		if err := writeSpan(nc, sp.span); err != nil {
			return err
		}
	}
	if prev < len(o.bufs) {
		rest := o.bufs[prev:]
		_, err := rest.WriteTo(nc)
		return err
	}
	return nil
}

// zeroCopyKey marks the context of a connection whose consumer fetches
// leave their batches in the segment files, as spans sent with sendfile.
type zeroCopyKey struct{}

func zeroCopy(ctx context.Context) bool { return ctx.Value(zeroCopyKey{}) != nil }

// zeroCopyTo reports whether consumer fetches on nc are sent as spans: on a
// plain TCP connection to another host, where sendfile(2) lets the socket
// take page-cache pages instead of a copy. Over TLS the bytes must be
// encrypted in user space anyway. To a loopback peer the reader has to copy
// the bytes out of the socket whatever the broker does, and measured here
// the pages sendfile hands over cost that reader more than the broker saves
// (docs/BENCHMARKS.md, "Fan-out and sendfile"): the pair does better when
// the broker reads into buffers and writes them with one writev.
func zeroCopyTo(nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok || !haveSendfile {
		return false
	}
	a, ok := tc.RemoteAddr().(*net.TCPAddr)
	return zeroCopyLoopback.Load() || !ok || !a.IP.IsLoopback()
}

// zeroCopyLoopback sends spans to loopback peers too; tests set it.
var zeroCopyLoopback atomic.Bool

// spanStats counts the span bytes written by each path; tests read it to
// know which one served them.
var spanStats struct{ sendfile, copied atomic.Int64 }

// writeSpan sends a span's bytes: with sendfile(2) where nc is a TCP
// socket, read and written in chunks otherwise. A span cut short (its file
// truncated since it was found: a replica truncating to its new leader)
// fails the write, which closes the connection — its frame's length is
// already on the wire.
func writeSpan(nc io.Writer, sp partlog.Span) error {
	if tc, ok := nc.(*net.TCPConn); ok {
		if done, err := sendFile(tc, sp); done || err != nil {
			if err == nil {
				spanStats.sendfile.Add(int64(sp.Len))
			}
			return err
		}
	}
	spanStats.copied.Add(int64(sp.Len))
	buf := getReadBuf(0)
	defer putReadBuf(buf)
	buf = buf[:cap(buf)]
	for pos, end := sp.Pos, sp.Pos+int64(sp.Len); pos < end; {
		n := int(min(int64(len(buf)), end-pos))
		m, err := sp.File.ReadAt(buf[:n], pos)
		if m < n {
			return fmt.Errorf("kafka: span of %s cut short at %d: %w", sp.File.Name(), pos+int64(m), cmp.Or(err, io.ErrUnexpectedEOF))
		}
		if _, err := nc.Write(buf[:n]); err != nil {
			return err
		}
		pos += int64(n)
	}
	return nil
}
