package nodetls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// AnyNode, as the node a dialer expects, accepts a certificate naming any
// node (a raft peer whose id the dialer does not know).
const AnyNode int32 = -1

// Conn is a TLS connection between two nodes. Its handshake verifies the
// peer (see Source.Server and Source.Client); once done, PeerNode names
// the peer, and the connection closes itself when either side's
// certificate expires, so no connection outlives the certificate it was
// made with.
type Conn struct {
	*tls.Conn
	src        *Source
	peer       atomic.Int32
	handshaken atomic.Bool

	mu     sync.Mutex
	expiry *time.Timer
	closed bool
}

// PeerNode is the node the peer's certificate names; AnyNode before the
// handshake.
func (c *Conn) PeerNode() int32 { return c.peer.Load() }

// Read completes the handshake first, so a refused peer is logged before
// its first byte would be.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.handshaken.Load() {
		if err := c.HandshakeContext(context.Background()); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

// HandshakeContext runs the handshake (once) and logs a refusal.
func (c *Conn) HandshakeContext(ctx context.Context) error {
	err := c.Conn.HandshakeContext(ctx)
	if err != nil {
		c.src.refusals.log(c.src.logger, c.RemoteAddr(), err)
		return err
	}
	c.handshaken.Store(true)
	return nil
}

// Close closes the connection and stops its expiry timer.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

// accept records a verified peer and arms the expiry close.
func (c *Conn) accept(peer *x509.Certificate, id int32, own *x509.Certificate) {
	c.peer.Store(id)
	until := time.Until(peer.NotAfter)
	if d := time.Until(own.NotAfter); d < until {
		until = d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.expiry == nil {
		c.expiry = time.AfterFunc(until, func() {
			c.src.logger.Info("nodetls: closing a connection whose certificate expired", "peer", c.RemoteAddr().String(), "node", id)
			_ = c.Conn.Close()
		})
	}
}

// Server wraps a connection a node accepted: the peer must present a
// certificate the cluster CA signed, for client authentication, that
// names a node.
func (s *Source) Server(raw net.Conn) *Conn {
	c := &Conn{src: s}
	c.peer.Store(AnyNode)
	m := s.cur.Load()
	c.Conn = tls.Server(raw, &tls.Config{
		MinVersion:   tls.VersionTLS13, // both ends are Strand
		Certificates: []tls.Certificate{*m.pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    m.pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return c.checkPeer(cs, AnyNode, m)
		},
	})
	return c
}

// Client wraps a connection a node dialled to node expect (AnyNode: any
// node). The peer's certificate must be signed by the cluster CA for
// server authentication and name that node. Host names are not checked:
// a node's identity is its id, and advertised addresses need not be in
// its certificate.
func (s *Source) Client(raw net.Conn, expect int32) *Conn {
	c := &Conn{src: s}
	c.peer.Store(AnyNode)
	m := s.cur.Load()
	c.Conn = tls.Client(raw, &tls.Config{
		MinVersion:         tls.VersionTLS13,
		Certificates:       []tls.Certificate{*m.pair},
		InsecureSkipVerify: true, // the chain and the node are checked below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the peer sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: m.pool, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
				return fmt.Errorf("the peer's certificate: %w", err)
			}
			return c.checkPeer(cs, expect, m)
		},
	})
	return c
}

// checkPeer requires the verified peer certificate to name a node (expect,
// unless AnyNode).
func (c *Conn) checkPeer(cs tls.ConnectionState, expect int32, m *material) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the peer sent no certificate")
	}
	peer := cs.PeerCertificates[0]
	id, err := NodeID(peer)
	if err != nil {
		return fmt.Errorf("the peer's certificate (subject %q): %w", peer.Subject.String(), err)
	}
	if expect != AnyNode && id != expect {
		return fmt.Errorf("the peer's certificate names node %d, but node %d was dialled", id, expect)
	}
	c.accept(peer, id, m.leaf)
	return nil
}

// Dial connects to addr with d and completes the handshake with node
// expect within ctx.
func (s *Source) Dial(ctx context.Context, d *net.Dialer, addr string, expect int32) (*Conn, error) {
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := s.Client(raw, expect)
	if err := c.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("nodetls: TLS handshake with %s: %w", addr, err)
	}
	return c, nil
}

// Listener wraps ln: every accepted connection is a Server Conn, its
// handshake run on its first Read (never in Accept, so a silent peer
// holds up no other).
func (s *Source) Listener(ln net.Listener) net.Listener { return &listener{ln, s} }

type listener struct {
	net.Listener
	src *Source
}

func (l *listener) Accept() (net.Conn, error) {
	raw, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.src.Server(raw), nil
}
