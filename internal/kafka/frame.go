package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/wire"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default.
const DefaultMaxRequestBytes = 100 << 20

// minFrameSize is the smallest request header: key, version, correlation id
// and a client id length.
const minFrameSize = 2 + 2 + 4 + 2

// readChunk is the most a frame buffer holds before that many bytes of it
// have arrived, when no pooled buffer is free for the whole frame.
const readChunk = 256 << 10

// ErrMalformed is wrapped by every framing and decoding error: the
// connection that sent the frame is closed.
var ErrMalformed = errors.New("kafka: malformed request")

// readFrame reads one size-prefixed frame into a buffer from pool; the
// caller puts it back once nothing refers to it. A frame that a free pooled
// buffer holds is read straight into it. Otherwise the buffer grows only as
// bytes arrive, fourfold per step, so new memory follows what the peer
// actually sent, not what its size field claims.
func readFrame(r io.Reader, maxSize int32, pool *framePool) ([]byte, error) {
	return readFrameMin(r, minFrameSize, maxSize, pool, nil)
}

// readFrameMin is readFrame for frames of at least minSize bytes (a raw
// SASL token, unlike a request, has no header).
//
// With reserve set, a frame's bytes are reserved from a budget before they
// are read (the caller releases them with the frame); reserve returns how
// many it reserved, and false when the connection closes while it waits. A
// frame the budget covers whole gets its whole buffer at once: the budget
// already bounds what such frames hold, and growing a large frame's buffer
// step by step copies a third of it again (a tenth of the broker's CPU
// under 10,000-partition produce requests of tens of MiB).
func readFrameMin(r io.Reader, minSize, maxSize int32, pool *framePool, reserve func(n int) (int64, bool)) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < minSize || n > maxSize {
		return nil, fmt.Errorf("%w: frame size %d outside [%d, %d] (socket.request.max.bytes)", ErrMalformed, n, minSize, maxSize)
	}
	size := int(n)
	if size == 0 {
		return []byte{}, nil
	}
	first := min(size, readChunk)
	if reserve != nil {
		reserved, ok := reserve(size)
		if !ok {
			return nil, errConnClosing
		}
		if reserved >= int64(size) {
			first = size
		}
	}
	buf := pool.tryGet(size)
	if buf == nil {
		buf = pool.get(first)
	}
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			pool.put(buf)
			return nil, &shortFrameError{size: size, got: got, err: err}
		}
		if got == size {
			return buf, nil
		}
		grown := pool.get(min(size, 4*len(buf)))
		copy(grown, buf)
		pool.put(buf)
		buf = grown
	}
}

// errConnClosing: the connection closed while its reader waited.
var errConnClosing = errors.New("kafka: connection closing")

// shortFrameError is a frame cut short; its reserved bytes (if any) are
// released by the reader that reserved them.
type shortFrameError struct {
	size, got int
	err       error
}

func (e *shortFrameError) Error() string {
	return fmt.Sprintf("%v: frame of %d bytes cut short after %d: %v", ErrMalformed, e.size, e.got, e.err)
}

func (e *shortFrameError) Unwrap() []error { return []error{ErrMalformed, e.err} }

// request is a decoded request frame.
type request struct {
	key           int16
	version       int16
	correlationID int32
	clientID      *string
	// kreq is the decoded body; nil when unsupportedApiVersions is set.
	kreq kmsg.Request
	// unsupportedApiVersions marks an ApiVersions request at a version this
	// server does not know: it is answered in the v0 format with
	// UNSUPPORTED_VERSION, without decoding the body.
	unsupportedApiVersions bool
}

// parseRequest decodes a request frame (without its size prefix): header,
// then body with kmsg. It is the one parse path of the server (and of
// FuzzRequest). Unknown keys and versions outside the served range are
// errors, except ApiVersions (see request.unsupportedApiVersions).
func parseRequest(frame []byte) (*request, error) {
	if len(frame) < minFrameSize {
		return nil, fmt.Errorf("%w: %d-byte frame shorter than a request header", ErrMalformed, len(frame))
	}
	be := binary.BigEndian
	r := &request{
		key:           int16(be.Uint16(frame[0:])),
		version:       int16(be.Uint16(frame[2:])),
		correlationID: int32(be.Uint32(frame[4:])),
	}
	rest := frame[8:]
	idLen := int(int16(be.Uint16(rest)))
	rest = rest[2:]
	switch {
	case idLen < -1 || idLen > len(rest):
		return nil, fmt.Errorf("%w: client id length %d with %d bytes left", ErrMalformed, idLen, len(rest))
	case idLen >= 0:
		id := string(rest[:idLen])
		r.clientID = &id
		rest = rest[idLen:]
	}
	api, ok := apis[r.key]
	if !ok {
		return r, fmt.Errorf("%w: unknown or unsupported api key %d (%s)", ErrMalformed, r.key, kmsg.NameForKey(r.key))
	}
	if r.version < api.min || r.version > api.max {
		if r.key == apiKeyApiVersions && r.version > api.max {
			r.unsupportedApiVersions = true
			return r, nil
		}
		return r, fmt.Errorf("%w: %s v%d not served (v%d-v%d)", ErrMalformed, kmsg.NameForKey(r.key), r.version, api.min, api.max)
	}
	kreq := kmsg.RequestForKey(r.key)
	kreq.SetVersion(r.version)
	if kreq.IsFlexible() {
		var err error
		if rest, err = wire.SkipTags(rest); err != nil {
			return r, fmt.Errorf("%w: %s v%d header: %w", ErrMalformed, kmsg.NameForKey(r.key), r.version, err)
		}
	}
	if err := kreq.ReadFrom(rest); err != nil {
		return r, fmt.Errorf("%w: %s v%d body: %w", ErrMalformed, kmsg.NameForKey(r.key), r.version, err)
	}
	r.kreq = kreq
	return r, nil
}

// appendResponse appends a whole response frame: size, correlation id, the
// response header's tags when flexible, and the body. ApiVersions responses
// always use header v0, so that a client that does not yet know what this
// server speaks can parse them.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiKeyApiVersions {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
