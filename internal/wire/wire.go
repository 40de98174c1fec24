// Package wire is a Kafka protocol connection from one Strand node to
// another: requests framed from kmsg types, sent one at a time on one TCP
// connection, responses read back. Nodes use it for what Kafka brokers
// say to each other — replica fetches, forwarded admin requests — on the
// internal listener; clients of Strand use franz-go.
package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/nodetls"
)

// MaxResponseBytes bounds a response frame (a replica fetch's is at most
// its MaxBytes plus headers).
const MaxResponseBytes = 128 << 20

// Conn is one connection to a broker's listener. It is not safe for
// concurrent use: one request is in flight at a time.
type Conn struct {
	nc       net.Conn
	r        *bufio.Reader
	clientID string
	corr     int32
	buf      []byte
	frame    []byte // RoundTripBorrowed's response buffer
}

// maxKeptFrame bounds the response buffer a Conn keeps between
// RoundTripBorrowed calls: a replica fetch's (10 MiB at most, plus
// headers) is kept; anything larger is allocated for the call alone.
const maxKeptFrame = 16 << 20

// Dialer opens Conns. The zero Dialer lets the operating system choose
// the source address.
type Dialer struct {
	// LocalIP, if set, is the address connections leave from: nodes that
	// share a host on distinct addresses (127.0.0.2, 127.0.0.3, …) each
	// send from their own, so a firewall rule can name a pair of nodes.
	LocalIP net.IP
	// TLS, if set, makes every connection mutual TLS between nodes: the
	// peer must present a certificate of the cluster CA naming a node.
	TLS *nodetls.Source
}

// Dial connects to addr, which must be some node's; clientID names this
// node in the peer's logs.
func (d Dialer) Dial(ctx context.Context, addr, clientID string) (*Conn, error) {
	return d.DialNode(ctx, nodetls.AnyNode, addr, clientID)
}

// DialNode connects to node's listener at addr: with TLS, a peer whose
// certificate names another node is refused.
func (d Dialer) DialNode(ctx context.Context, node int32, addr, clientID string) (*Conn, error) {
	var nc net.Conn
	var err error
	if d.TLS != nil {
		nc, err = d.TLS.Dial(ctx, d.net(), addr, node)
	} else {
		nc, err = d.net().DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), clientID: clientID}, nil
}

func (d Dialer) net() *net.Dialer {
	nd := &net.Dialer{}
	if d.LocalIP != nil {
		nd.LocalAddr = &net.TCPAddr{IP: d.LocalIP}
	}
	return nd
}

// Close closes the connection; a request in flight fails.
func (c *Conn) Close() error { return c.nc.Close() }

// RoundTrip sends req and reads its response by deadline. Any error
// leaves the connection unusable: close it and dial again.
func (c *Conn) RoundTrip(req kmsg.Request, deadline time.Time) (kmsg.Response, error) {
	return c.roundTrip(req, deadline, false)
}

// RoundTripBorrowed is RoundTrip reading the response into a buffer the
// connection keeps and reuses: the response's byte fields (a Fetch
// response's record sets) alias it, so the caller must be done with the
// response before its next request on c. A replica fetcher, which applies
// each answer before asking again, uses it: allocating (and zeroing) up
// to a fetch's MaxBytes for every round trip was most of what the
// follower side allocated.
func (c *Conn) RoundTripBorrowed(req kmsg.Request, deadline time.Time) (kmsg.Response, error) {
	return c.roundTrip(req, deadline, true)
}

func (c *Conn) roundTrip(req kmsg.Request, deadline time.Time, borrow bool) (kmsg.Response, error) {
	_ = c.nc.SetDeadline(deadline)
	c.corr++
	c.buf = AppendRequest(c.buf[:0], req, c.corr, c.clientID)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > MaxResponseBytes {
		return nil, fmt.Errorf("wire: a %d-byte response to %s", n, kmsg.NameForKey(req.Key()))
	}
	var frame []byte
	switch {
	case borrow && int(n) <= cap(c.frame):
		frame = c.frame[:n] // every byte is read over below
	case borrow && n <= maxKeptFrame:
		c.frame = make([]byte, n)
		frame = c.frame
	default:
		frame = make([]byte, n)
	}
	if _, err := io.ReadFull(c.r, frame); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.corr {
		return nil, fmt.Errorf("wire: response to request %d, expected %d", got, c.corr)
	}
	return ReadResponse(req, frame[4:])
}

// ReadResponse decodes the body of req's response (after the correlation
// id): the header's tags, when the response is flexible, then the fields.
func ReadResponse(req kmsg.Request, body []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 { // ApiVersions answers with header v0
		var err error
		if body, err = SkipTags(body); err != nil {
			return nil, fmt.Errorf("wire: %s response: %w", kmsg.NameForKey(req.Key()), err)
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("wire: %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// AppendRequest appends a whole request frame: size, header v1 (v2 with
// tags when the request is flexible), body.
func AppendRequest(dst []byte, req kmsg.Request, correlationID int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0) // no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// SkipTags skips a tagged-fields section (KIP-482): a uvarint count, then
// per field a uvarint tag, a uvarint size and that many bytes.
func SkipTags(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, errors.New("bad tagged field count")
	}
	b = b[w:]
	for range n {
		_, w := binary.Uvarint(b)
		if w <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[w:]
		size, w := binary.Uvarint(b)
		if w <= 0 || size > uint64(len(b)-w) {
			return nil, errors.New("bad tag size")
		}
		b = b[w+int(size):]
	}
	return b, nil
}
