package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/sasl"
)

const (
	apiKeySaslHandshake    = 17
	apiKeySaslAuthenticate = 36
)

// authState is one connection's progress through SASL.
type authState struct {
	session sasl.Session // set by SaslHandshake, until done
	user    string       // set once authenticated
	done    bool
	failed  bool // the connection closes after this response
	raw     bool // SaslHandshake v0: the next frames are bare tokens
}

type authKey struct{}

// connKey carries the connection to the SASL handlers, which record who
// authenticated for closeSessionsOfDeletedUsers.
type connKey struct{}

type remoteKey struct{}

// remoteFrom is the client's address that handlerContext stored for the
// SASL handlers' logs.
func remoteFrom(ctx context.Context) string {
	r, _ := ctx.Value(remoteKey{}).(string)
	return r
}

// saslMaxReceiveBytes is Kafka's sasl.server.max.receive.size: the largest
// frame a SASL listener reads before the client has authenticated
// (CVE-2022-34917). A bigger size prefix closes the connection before
// anything is reserved or allocated for it.
const saslMaxReceiveBytes = 512 << 10

// maxFrame is the largest frame the connection reads next:
// socket.request.max.bytes, or saslMaxReceiveBytes on a SASL listener
// until the client has authenticated. The reader asks after serving the
// request before, so the frame after a completed exchange may be full size.
func (c *conn) maxFrame() int32 {
	if c.s.saslOn() && c.authUser.Load() == nil {
		return min(c.s.cfg.MaxRequestBytes, saslMaxReceiveBytes)
	}
	return c.s.cfg.MaxRequestBytes
}

// checkAuthenticated refuses any request but ApiVersions and the SASL ones
// before a SASL listener's client has authenticated, as Kafka does (it
// closes the connection).
func (c *conn) checkAuthenticated(key int16) error {
	if !c.s.saslOn() || c.auth.done {
		return nil
	}
	switch key {
	case apiKeyApiVersions, apiKeySaslHandshake, apiKeySaslAuthenticate:
		return nil
	}
	return fmt.Errorf("kafka: %s before SASL authentication on a SASL listener; closing the connection", kmsg.NameForKey(key))
}

// SaslHandshake: v0-v1.
//
// Behavior:
//
//   - Reports the enabled mechanisms (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
//     with users; OAUTHBEARER when configured) and starts an exchange for
//     the one asked, which SaslAuthenticate carries; an unknown mechanism
//     is UNSUPPORTED_SASL_MECHANISM.
//
//   - On a listener without SASL, or a second handshake on one connection,
//     ILLEGAL_SASL_STATE.
//
//   - v0 (before KIP-152): the tokens that follow are bare size-prefixed
//     frames, not SaslAuthenticate requests (rawAuthStep); older clients
//     such as kafka-python 2.0 speak it, and librdkafka needs v0 advertised.
func (s *Server) handleSaslHandshake(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	auth, _ := ctx.Value(authKey{}).(*authState)
	if !s.saslOn() || auth == nil || auth.done || auth.session != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = s.saslMechanisms()
	sess, err := s.startSASL(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, nil
	}
	auth.session = sess
	auth.raw = req.Version == 0
	return resp, nil
}

// SaslAuthenticate: v0-v2.
//
// Behavior:
//   - Feeds the client's bytes to the exchange SaslHandshake started and
//     returns the server's; once it completes the connection may send
//     anything. A failed exchange is SASL_AUTHENTICATION_FAILED with a
//     message that does not say whether the user exists, and the
//     connection is closed after the answer, as Kafka does.
//   - Without a prior handshake: ILLEGAL_SASL_STATE.
//   - v1+: SessionLifetimeMillis 0 (no re-authentication, KIP-368).
//
// Deviation: Kafka tells an OAUTHBEARER client its token's remaining
// lifetime as SessionLifetimeMillis and expects it to re-authenticate on
// the connection before then (KIP-368). Strand does not yet serve
// re-authentication, so it answers 0 (a KIP-368 client would otherwise
// send a SaslHandshake on an authenticated connection) and closes the
// connection when the token expires; the client reconnects with a fresh
// token, as it does after any broker disconnect.
func (s *Server) handleSaslAuthenticate(ctx context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	auth, _ := ctx.Value(authKey{}).(*authState)
	if auth == nil || auth.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate without a SaslHandshake")
		return resp, nil
	}
	reply, done, err := auth.session.Step(req.SASLAuthBytes)
	if err != nil {
		s.authFailed(ctx, auth.session.Claimed(), remoteFrom(ctx), err)
		auth.failed, auth.session = true, nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(sasl.ClientMessage(err))
		return resp, nil
	}
	resp.SASLAuthBytes = reply
	if done {
		sess := auth.session
		auth.done, auth.user = true, sess.User()
		auth.session = nil
		if c, ok := ctx.Value(connKey{}).(*conn); ok {
			c.endSessionAtExpiry(sess) // before authUser: closeSessionsOfDeletedUsers reads both
			c.authUser.Store(&auth.user)
		}
		s.logger.Debug("kafka: SASL authenticated", "user", auth.user, "remote", remoteFrom(ctx))
	}
	return resp, nil
}

// authFailed logs a failed authentication and holds the connection for
// connection.failed.authentication.delay.ms before its answer and close,
// so a client guessing passwords gets about ten tries a second per
// connection instead of thousands.
func (s *Server) authFailed(ctx context.Context, user, remote string, err error) {
	if te, ok := errors.AsType[*sasl.TokenError](err); ok {
		// A token's refusal says why in the log (the client is told only
		// invalid_token); one line per check every 10 s, so a client
		// retrying a stale token does not flood it.
		if ok, suppressed := s.tokenLines.allow(te.Check, 10*time.Second); ok {
			s.logger.Info("kafka: SASL OAUTHBEARER token refused", "user", user, "remote", remote,
				"check", te.Check, "reason", te.Reason.Error(), "repeats_not_logged", suppressed)
		}
	} else if !errors.Is(err, sasl.ErrAuthFailed) {
		s.logger.Warn("kafka: SASL exchange failed", "user", user, "remote", remote, "err", err)
	} else {
		s.logger.Info("kafka: SASL authentication failed", "user", user, "remote", remote)
	}
	if d := s.cfg.FailedAuthDelay; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// rawAuthStep reads one bare SASL token (the pre-KIP-152 exchange a
// SaslHandshake v0 starts) and answers with a bare token. A failure closes
// the connection without an answer, as Kafka does in this mode. It returns
// false when the connection must stop.
func (c *conn) rawAuthStep(r io.Reader) bool {
	frame, err := readFrameMin(r, 0, c.maxFrame(), &c.s.frames, nil)
	if err != nil {
		c.logEnd(err, "")
		return false
	}
	reply, done, err := c.auth.session.Step(frame)
	c.s.frames.put(frame)
	if err != nil {
		c.s.authFailed(c.ctx, c.auth.session.Claimed(), c.nc.RemoteAddr().String(), err)
		return false
	}
	if done {
		c.auth.done, c.auth.raw, c.auth.user = true, false, c.auth.session.User()
		c.endSessionAtExpiry(c.auth.session)
		c.authUser.Store(&c.auth.user)
		c.auth.session = nil
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(reply)), uint32(len(reply)))
	return c.send(outbound{bufs: net.Buffers{append(out, reply...)}})
}

// saslOn reports whether the listener requires SASL authentication.
func (s *Server) saslOn() bool { return s.users != nil || s.oauth != nil }

// saslMechanisms lists the enabled mechanisms, as SaslHandshake reports
// them.
func (s *Server) saslMechanisms() []string {
	var out []string
	if s.users != nil {
		out = append(out, s.users.Mechanisms()...)
	}
	if s.oauth != nil {
		out = append(out, sasl.OAuthBearer)
	}
	return out
}

// startSASL begins an exchange for mechanism.
func (s *Server) startSASL(mechanism string) (sasl.Session, error) {
	if mechanism == sasl.OAuthBearer && s.oauth != nil {
		return s.oauth.Start(), nil
	}
	if s.users == nil {
		return nil, fmt.Errorf("%w: %q", sasl.ErrUnsupportedMechanism, mechanism)
	}
	return s.users.Start(mechanism)
}

// endSessionAtExpiry closes the connection when sess's credential (an
// OAUTHBEARER token) expires, as Kafka ends a session past its lifetime,
// and marks the connection as a token's, not a SCRAM user's.
func (c *conn) endSessionAtExpiry(sess sasl.Session) {
	e, ok := sess.(sasl.Expiring)
	if !ok {
		return
	}
	c.tokenAuth.Store(true)
	if e.Expiry().IsZero() {
		return
	}
	user, remote := sess.User(), c.nc.RemoteAddr().String()
	t := time.AfterFunc(time.Until(e.Expiry()), func() {
		c.s.logger.Info("kafka: closing a connection whose SASL token expired", "user", user, "remote", remote)
		c.cancel()
		c.nc.Close()
	})
	context.AfterFunc(c.ctx, func() { t.Stop() })
}
