package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/nodetls"
)

// Who is on the other end of an internal listener's connection.
//
// With Config.RequireNodePeers, a node: the connection is TLS and its
// verified client certificate names a node. The check runs before the
// first request is read, so a refused peer gets no answer at all (not even
// to ApiVersions), only a closed connection. Without it, every peer is
// trusted as a node (a cluster on loopback without inter-node TLS).
//
// A node holds ClusterAction implicitly (Kafka puts its inter-broker
// principal in super.users), so its requests skip the ACL checks; only the
// request an Envelope wraps is authorized, as its RequestPrincipal.

// nodeHandshakeTimeout bounds the TLS handshake of an internal listener's
// peer: one that never completes it holds no goroutine for long.
const nodeHandshakeTimeout = 10 * time.Second

// tlsPeer is a TLS connection: a *tls.Conn, or a wrapper that embeds one
// (nodetls.Conn).
type tlsPeer interface {
	ConnectionState() tls.ConnectionState
	HandshakeContext(context.Context) error
}

// errNotTLS: a RequireNodePeers listener accepted a connection without TLS.
var errNotTLS = errors.New("not a TLS connection; this internal listener admits only nodes with a certificate from the cluster CA")

// errRefusalLogged: the peer failed a handshake that nodetls has logged
// (once per peer and reason); a second line would say the same.
var errRefusalLogged = errors.New("TLS handshake refused")

// admitPeer decides, before any request is read, whether the peer of an
// internal listener's connection is a node; an error refuses it.
func (c *conn) admitPeer() error {
	if !c.s.cfg.RequireNodePeers {
		c.node = true // trusted: see Config.RequireNodePeers
		return nil
	}
	tc, ok := c.nc.(tlsPeer)
	if !ok {
		return errNotTLS
	}
	ctx, cancel := context.WithTimeout(c.ctx, nodeHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		if _, logs := tc.(*nodetls.Conn); logs {
			return fmt.Errorf("%w: %w", errRefusalLogged, err)
		}
		return fmt.Errorf("TLS handshake: %w", err)
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return errors.New("no verified client certificate; this internal listener admits only nodes")
	}
	cert := st.PeerCertificates[0]
	id, err := nodetls.NodeID(cert)
	if err != nil {
		return fmt.Errorf("client certificate (subject %q): %w", cert.Subject.String(), err)
	}
	c.node, c.nodeID = true, id
	// For logs: the subject as ssl.principal.mapping.rules maps a client's.
	// A node is known by its certificate, not by a mapping rule, so a
	// subject no rule maps is kept whole rather than refused.
	subject := cert.Subject.String()
	if c.tlsPrincipal, ok = c.s.cfg.PrincipalRules.Map(subject); !ok {
		c.tlsPrincipal = acl.User(subject)
	}
	c.s.logger.Debug("kafka: internal listener admitted a node", "remote", c.nc.RemoteAddr().String(),
		"node", id, "principal", string(c.tlsPrincipal))
	return nil
}

// logRefusedPeer logs why an internal listener refused a peer, at most
// once per 10 s per remote IP: a scanner or a misconfigured client must
// not fill the log.
func (s *Server) logRefusedPeer(c *conn, why error) {
	if ok, suppressed := s.refusals.allow(c.ip, 10*time.Second); ok {
		s.logger.Warn("kafka: internal listener refused a peer that is not a node; closing the connection",
			"remote", c.nc.RemoteAddr().String(), "reason", why.Error(), "repeats_not_logged", suppressed)
	}
}
