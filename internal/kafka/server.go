package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/sasl"
)

// Config configures a Server.
type Config struct {
	// Broker serves the requests. Required.
	Broker *broker.Broker
	// AdvertisedAddr is the host:port clients are told to connect to
	// (advertised.listeners). Default: the listener's own address, or this
	// machine's host name when the listener is bound to a wildcard address.
	AdvertisedAddr string
	// MaxRequestBytes is socket.request.max.bytes; default 100 MiB.
	MaxRequestBytes int32
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Observer, if set, is told about every request (observe.go).
	Observer Observer
	// SASL, if set, requires every connection to authenticate with
	// SaslHandshake + SaslAuthenticate before anything but ApiVersions
	// (Kafka's SASL_PLAINTEXT or, over TLS, SASL_SSL listener).
	SASL *sasl.Users
	// OAuthBearer, if set, also offers SASL OAUTHBEARER (KIP-255): a
	// client authenticates as User:<the token's principal claim>. Without
	// SASL it is the listener's only mechanism. The server owns it: Close
	// closes it, and so does NewServer when it fails.
	OAuthBearer *sasl.OAuthValidator
	// FailedAuthDelay is connection.failed.authentication.delay.ms: how
	// long a failed SASL authentication waits before its answer and the
	// close. Zero: Kafka's 100 ms; negative: none.
	FailedAuthDelay time.Duration

	// MaxIdle is connections.max.idle.ms: a connection with nothing read,
	// written or in progress for this long is closed. Zero: 10 minutes;
	// negative: never.
	MaxIdle time.Duration
	// MaxConnections is max.connections: connections beyond it are closed
	// as they arrive. Zero: no limit.
	MaxConnections int
	// MaxConnectionsPerIP is max.connections.per.ip. Zero: no limit.
	MaxConnectionsPerIP int
	// MaxConnectionRate is max.connection.creation.rate (KIP-612): new
	// connections per second the listener accepts; past it, accepting
	// waits (connrate.go). Zero: no limit.
	MaxConnectionRate float64
	// MaxConnectionRatePerIP is the same per client IP (Kafka's
	// connection_creation_rate quota of the default ip entity): past it a
	// new connection is closed after a short delay. Zero: no limit.
	MaxConnectionRatePerIP float64
	// Authorizer, if set, decides every request (authz.go) with Kafka's
	// per-API rules, and serves DescribeAcls, CreateAcls and DeleteAcls;
	// nil: every client may do everything, and the ACL APIs answer
	// SECURITY_DISABLED. The server loads the metadata's ACLs into it and
	// keeps them current, remembering the version it loaded: give each
	// Server its own (two servers replacing one authorizer's ACLs could
	// put an older set back). On an internal listener it decides the
	// requests inside Envelopes (58_envelope.go).
	Authorizer *acl.Authorizer
	// PrincipalRules maps a verified TLS client certificate's subject to
	// its principal (ssl.principal.mapping.rules); nil: the whole DN.
	PrincipalRules *acl.PrincipalRules

	// Internal makes this the internal listener of a cluster node: it also
	// serves Envelope (admin requests other nodes forward to the
	// controller). Never set on a listener clients use.
	Internal bool
	// RequireNodePeers, on an internal listener, admits only other nodes:
	// every connection must be TLS (a *tls.Conn, or a type that embeds
	// one and offers ConnectionState and HandshakeContext) whose verified
	// client certificate names a node (nodetls.NodeID); any other is
	// closed before a request is read, with a WARN line per remote
	// address (rate-limited). The listener's tls.Config must verify client
	// certificates itself (tls.RequireAndVerifyClientCert against the
	// cluster CA): a certificate without a verified chain is refused.
	//
	// Without it, every peer of the internal listener is trusted as a
	// node, as a cluster on loopback without inter-node TLS (or run with
	// --insecure-inter-node) must: anyone who can reach the port may then
	// fetch replicas and write transaction markers. Either way a
	// forwarded request inside an Envelope is authorized as the principal
	// it carries.
	RequireNodePeers bool
	// QueuedMaxRequestBytes is queued.max.request.bytes: the bytes of
	// large request frames (above 64 KiB) read or waiting to be handled,
	// over all connections; a reader that would pass it stops reading its
	// socket until bytes are freed. Zero: 256 MiB; negative: no limit.
	QueuedMaxRequestBytes int64
}

// Server is a Kafka wire-protocol server in front of a broker.
type Server struct {
	cfg    Config
	b      *broker.Broker
	logger *slog.Logger

	ctx    context.Context // cancelled by Close; parent of every connection's
	cancel context.CancelFunc
	wg     sync.WaitGroup

	advertised atomic.Pointer[endpoint]
	frames     framePool   // request frame buffers, shared by all connections
	budget     *byteBudget // queued.max.request.bytes; nil: unbounded
	accept     acceptState
	connRate   connRateLimiter
	errLines   keyedRateLimit // logUnknown's lines
	denials    keyedRateLimit // logDenied's lines
	tokenLines keyedRateLimit // refused OAUTHBEARER tokens' lines
	refusals   keyedRateLimit // refused peers of an internal listener, by remote IP

	aclMu      sync.Mutex // serializes loadACLs
	aclLoaded  bool
	aclVersion int64  // the metadata's ACL version the authorizer holds
	aclCancel  func() // stops watchACLs; nil without an authorizer

	users       *sasl.Users          // cfg.SASL with the metadata's SCRAM users; nil: no PLAIN or SCRAM
	oauth       *sasl.OAuthValidator // cfg.OAuthBearer; nil: no OAUTHBEARER
	quotas      *quotas              // client quotas; nil on the internal listener
	quotaCancel func()
	scramCancel func() // stops watching for deleted users; nil without SASL

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		perIP     map[string]int // open connections by remote IP
		closed    bool
	}
}

type endpoint struct {
	host string
	port int32
}

// NewServer returns a server for cfg.Broker; call Serve to accept clients.
func NewServer(cfg Config) (_ *Server, err error) {
	defer func() {
		if err != nil && cfg.OAuthBearer != nil {
			cfg.OAuthBearer.Close()
		}
	}()
	if cfg.Broker == nil {
		return nil, errors.New("kafka: Config.Broker is nil")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	if cfg.FailedAuthDelay == 0 {
		cfg.FailedAuthDelay = DefaultFailedAuthDelay
	}
	if cfg.QueuedMaxRequestBytes == 0 {
		cfg.QueuedMaxRequestBytes = DefaultQueuedMaxRequestBytes
	}
	if cfg.MaxConnections < 0 || cfg.MaxConnectionsPerIP < 0 || cfg.MaxConnectionRate < 0 || cfg.MaxConnectionRatePerIP < 0 {
		return nil, errors.New("kafka: a connection limit is negative")
	}
	s := &Server{cfg: cfg, b: cfg.Broker, logger: cfg.Logger, oauth: cfg.OAuthBearer}
	s.connRate.rate, s.connRate.perIP = cfg.MaxConnectionRate, cfg.MaxConnectionRatePerIP
	if cfg.QueuedMaxRequestBytes > 0 {
		s.budget = newByteBudget(cfg.QueuedMaxRequestBytes)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[*conn]struct{})
	s.mu.perIP = make(map[string]int)
	if cfg.AdvertisedAddr != "" {
		ep, err := parseEndpoint(cfg.AdvertisedAddr)
		if err != nil {
			return nil, fmt.Errorf("kafka: advertised address: %w", err)
		}
		s.advertised.Store(ep)
	}
	if !cfg.Internal {
		s.quotas = newQuotas()
		s.quotaCancel = s.b.WatchClientQuotas(s.quotas.set)
		s.quotas.set(s.b.ClientQuotas())
	}
	if cfg.SASL != nil {
		s.users = cfg.SASL.WithSource(s.scramCredential)
		s.scramCancel = s.b.WatchScramUsers(s.closeSessionsOfDeletedUsers)
	}
	if cfg.RequireNodePeers && !cfg.Internal {
		return nil, errors.New("kafka: RequireNodePeers is for an internal listener")
	}
	if cfg.Authorizer != nil {
		if err := s.watchACLs(); err != nil {
			if s.scramCancel != nil {
				s.scramCancel()
			}
			if s.quotaCancel != nil {
				s.quotaCancel()
			}
			s.aclCancel()
			return nil, fmt.Errorf("kafka: load ACLs: %w", err)
		}
	}
	return s, nil
}

// Users is the listener's user store — the fixed SASL users and the
// run-time SCRAM users of the cluster metadata — or nil without SASL. The
// HTTP listeners check basic authentication against it.
func (s *Server) Users() *sasl.Users { return s.users }

// Advertise returns the host and port clients are told to use: advertised
// when set, else the listener's address, with this machine's host name
// for a wildcard address.
func Advertise(advertised string, ln net.Addr) (string, int32, error) {
	if advertised != "" {
		ep, err := parseEndpoint(advertised)
		if err != nil {
			return "", 0, fmt.Errorf("kafka: advertised address: %w", err)
		}
		return ep.host, ep.port, nil
	}
	ep, err := parseEndpoint(ln.String())
	if err != nil {
		return "", 0, fmt.Errorf("kafka: listener address: %w", err)
	}
	if ip := net.ParseIP(ep.host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			ep.host = h
		}
	}
	return ep.host, ep.port, nil
}

func parseEndpoint(addr string) (*endpoint, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return nil, fmt.Errorf("bad port in %q", addr)
	}
	return &endpoint{host: host, port: int32(p)}, nil
}

// Serve accepts connections on ln until Close (returning nil) or an accept
// error (returned). Without an AdvertisedAddr, the first listener's address
// is advertised.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.mu.listeners[ln] = struct{}{}
	s.mu.Unlock()
	if s.advertised.Load() == nil {
		host, port, err := Advertise("", ln.Addr())
		if err != nil {
			return err
		}
		s.advertised.CompareAndSwap(nil, &endpoint{host: host, port: port})
	}
	delay := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err == nil {
			if delay > 0 {
				s.acceptRecovered(ln)
				delay = 0
			}
			s.startConn(nc)
			if wait := s.connRate.reserve(time.Now()); wait > 0 {
				s.accept.rateWaits.Add(1)
				select { // max.connection.creation.rate: accept the next one later
				case <-time.After(wait):
				case <-s.ctx.Done():
				}
			}
			continue
		}
		s.mu.Lock()
		closed := s.mu.closed
		s.mu.Unlock()
		if closed || !temporaryAcceptError(err) {
			s.mu.Lock()
			delete(s.mu.listeners, ln)
			s.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("kafka: accept: %w", err)
		}
		delay = s.acceptFailed(ln, err, delay)
		select {
		case <-time.After(delay):
		case <-s.ctx.Done():
		}
	}
}

// Close stops accepting, closes every connection (a long-polling fetch is
// cancelled) and waits for all connection goroutines to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	var errs []error
	for ln := range s.mu.listeners {
		if err := ln.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.aclCancel != nil {
		s.aclCancel()
	}
	if s.scramCancel != nil {
		s.scramCancel()
	}
	if s.quotaCancel != nil {
		s.quotaCancel()
	}
	if s.oauth != nil {
		s.oauth.Close()
	}
	return errors.Join(errs...)
}

// advertisedEndpoint is the host and port this node reports in Metadata.
func (s *Server) advertisedEndpoint() endpoint {
	if ep := s.advertised.Load(); ep != nil {
		return *ep
	}
	return endpoint{host: "localhost", port: 9092}
}

// goTracked runs fn on a goroutine that Close waits for.
func (s *Server) goTracked(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}
