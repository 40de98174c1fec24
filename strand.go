// Package strand embeds a Strand broker — a Kafka-wire-compatible,
// partitioned-log message broker — in a Go program:
//
//	b, err := strand.Start(ctx, strand.Config{Dir: dir})
//	if err != nil { … }
//	defer b.Close()
//	client, _ := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
//
// Start opens (or creates) the data directory, recovers every partition, and
// serves the Kafka protocol on a TCP listener (a free loopback port unless
// Config.Addr says otherwise). Any Kafka client can use it unchanged.
//
// This package is only the public face: it must never grow logic of its
// own; everything lives in internal/broker (topics, partitions, configs) and
// internal/kafka (the wire protocol). A *Broker is safe for concurrent use.
package strand

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/console"
	"github.com/strandmq/strand/internal/group"
	"github.com/strandmq/strand/internal/httpauth"
	"github.com/strandmq/strand/internal/kafka"
	"github.com/strandmq/strand/internal/metrics"
	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/sasl"
	"github.com/strandmq/strand/internal/schemareg"
)

// Config configures an embedded broker. Only Dir is required.
type Config struct {
	// Dir is the data directory; it is created if missing.
	Dir string
	// Addr is the TCP address to listen on; default "127.0.0.1:0", a free
	// loopback port (see Broker.Addr).
	Addr string
	// AdvertisedAddr is the host:port clients are told to connect to;
	// default: the listener's address.
	AdvertisedAddr string
	// NodeID is this broker's node id; default 0.
	NodeID int32
	// DisableAutoCreateTopics turns off auto.create.topics.enable.
	DisableAutoCreateTopics bool
	// DefaultPartitions is num.partitions for auto-created topics; default 1.
	DefaultPartitions int32
	// TopicDefaults overrides Kafka's topic config defaults broker-wide,
	// keyed by topic config name (e.g. "retention.ms": "3600000").
	TopicDefaults map[string]string
	// MaxRequestBytes is socket.request.max.bytes; default 100 MiB.
	MaxRequestBytes int32
	// MaxIdle is connections.max.idle.ms: client connections idle this
	// long are closed. Zero: 10 minutes; negative: never.
	MaxIdle time.Duration
	// MaxConnections is max.connections and MaxConnectionsPerIP
	// max.connections.per.ip: new connections beyond them are closed at
	// once. Zero: no limit.
	MaxConnections, MaxConnectionsPerIP int
	// MaxConnectionCreationRate is max.connection.creation.rate (KIP-612):
	// new connections per second the listener accepts; past it, accepting
	// waits. MaxConnectionCreationRatePerIP is the same per client IP
	// (Kafka's connection_creation_rate quota for every ip): past it a new
	// connection is closed. Zero: no limit.
	MaxConnectionCreationRate, MaxConnectionCreationRatePerIP float64
	// QueuedMaxRequestBytes is queued.max.request.bytes: the most bytes of
	// large requests being read or waiting, over all connections; a reader
	// past it stops reading its socket. Zero: 256 MiB; negative: no limit.
	QueuedMaxRequestBytes int64
	// FailedAuthDelay is connection.failed.authentication.delay.ms: how
	// long a failed SASL authentication holds its connection before the
	// answer and close. Zero: 100 ms; negative: none.
	FailedAuthDelay time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty consumer group waits for more
	// members. Zero: Kafka's default (3s); negative: no delay.
	GroupInitialRebalanceDelay time.Duration
	// GroupConsumerSessionTimeout and GroupConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms and
	// group.consumer.heartbeat.interval.ms: how long a KIP-848 consumer
	// group member lives without a heartbeat, and how often members are
	// told to heartbeat. Zero: Kafka's defaults (45 s, 5 s).
	GroupConsumerSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	// GroupConsumerMigrationPolicy is group.consumer.migration.policy:
	// whether a live classic group converts to the consumer protocol when a
	// KIP-848 member joins it ("upgrade"), a consumer group back to classic
	// when its last KIP-848 member leaves ("downgrade"), both
	// ("bidirectional", Kafka 4's default, and ""), or neither ("disabled").
	GroupConsumerMigrationPolicy string
	// RetentionCheckInterval is log.retention.check.interval.ms: how often
	// time and size retention run on every partition; default 30 s.
	RetentionCheckInterval time.Duration
	// CleanerBackoff is log.cleaner.backoff.ms: how often the compaction
	// cleaner looks for dirty compacted partitions; default 15 s.
	CleanerBackoff time.Duration
	// OffsetsRetention is offsets.retention.minutes: how long committed
	// offsets outlive their group's consumers. Zero: 7 days; negative: never.
	OffsetsRetention time.Duration
	// TransactionMaxTimeout is transaction.max.timeout.ms: the longest
	// transaction timeout a producer may ask for (default 15 minutes).
	TransactionMaxTimeout time.Duration
	// RecoverTopics re-registers topics whose partition directories hold
	// data that meta.json does not list (a lost or older meta.json), with
	// default configs. Without it, such a directory stops the start-up:
	// the broker never deletes data that metadata does not explain.
	RecoverTopics bool
	// ScrubInterval is how often every sealed segment's CRCs are verified
	// in the background; a partition whose data fails goes offline.
	// Zero: daily; negative: never.
	ScrubInterval time.Duration
	// ScrubBytesPerSecond bounds the scrub's reads; zero: 32 MiB/s.
	ScrubBytesPerSecond int64
	// MaxOpenLogFiles caps the file descriptors partition logs hold
	// (segment files and their indexes): past it the least recently used
	// idle ones are closed and opened again on their next use. Zero: half
	// the process's open-file limit; negative: no cap.
	MaxOpenLogFiles int
	// LogWriters bounds how many appends (produce and replication) copy
	// their batches into the data directory at once. Zero: one; negative: no bound. See
	// "One write(2) at a time" in docs/BENCHMARKS.md.
	LogWriters int
	// CleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size: the most
	// memory the compaction cleaner's offset map takes; a dirty range with
	// more keys is cleaned over several passes. Default 128 MiB.
	CleanerDedupeBufferSize int64
	// Now is the broker's clock (retention, compaction, LogAppendTime);
	// default time.Now. Tests inject one.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
	// MetricsAddr, if set, is the TCP address of an HTTP listener serving
	// Prometheus metrics on /metrics and a health check on /healthz (see
	// Broker.MetricsAddr). Empty: no metrics are collected at all.
	MetricsAddr string
	// ConsoleAddr, if set, is the TCP address of an HTTP listener serving
	// the read-only web console and its JSON API under /api/v1 (see
	// Broker.ConsoleAddr). Empty: no console.
	ConsoleAddr string
	// ConsoleAllowedHosts are host names, beyond IP literals, localhost,
	// this machine's name and ConsoleAddr's host, that the console answers
	// to ("*": any). Other Host headers are refused: a guard against DNS
	// rebinding.
	ConsoleAllowedHosts []string
	// SchemaRegistryAddr, if set, is the TCP address of an HTTP listener
	// serving the Confluent-compatible schema registry API over the
	// _schemas topic (see Broker.SchemaRegistryAddr). Empty: no registry
	// listener (topics with strand.validation=schema still validate
	// against what _schemas holds).
	SchemaRegistryAddr string
	// TLS, if set, makes the Kafka listener speak TLS (Kafka's SSL
	// listener) with this configuration; set ClientAuth and ClientCAs for
	// mutual TLS. The HTTP listeners have their own (HTTPTLS).
	TLS *tls.Config
	// HTTPTLS, if set, makes the metrics, console and schema registry
	// listeners serve HTTPS with this configuration. With ClientCAs (and
	// ClientAuth tls.VerifyClientCertIfGiven) a client may authenticate
	// with a certificate, mapped by PrincipalMappingRules; with SASLUsers
	// it may use HTTP basic authentication against the same users.
	//
	// An HTTP listener bound beyond loopback must be able to authenticate
	// (HTTPTLS with ClientCAs, or HTTPTLS and SASLUsers) and then requires
	// it on every request; Start refuses one that cannot, unless
	// HTTPInsecure. With Authorizer on, every request is a principal's and
	// the console shows only what it may describe (internal/httpauth).
	HTTPTLS *tls.Config
	// CertificateExpiry names certificates whose expiry /metrics shows
	// (strand_tls_certificate_expiry_timestamp_seconds), read at each
	// scrape: `strand serve` passes its listeners' ("tls", "http-tls").
	CertificateExpiry map[string]func() time.Time
	// HTTPInsecure lets an HTTP listener bound beyond loopback start
	// without a way to authenticate: everyone is User:ANONYMOUS.
	HTTPInsecure bool
	// SASLUsers, if set, makes the Kafka listener require SASL
	// authentication (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) as one of
	// these users (name → password) before anything but ApiVersions. Over
	// TLS that is Kafka's SASL_SSL; without, SASL_PLAINTEXT (PLAIN then
	// sends the password in the clear: prefer SCRAM, or TLS).
	SASLUsers map[string]string
	// OAuthBearer, if set, makes the Kafka listener offer SASL OAUTHBEARER
	// (KIP-255, tokens validated as KIP-768 does: see OAuthBearerConfig),
	// beside SASLUsers' mechanisms or, without them, alone.
	OAuthBearer *OAuthBearerConfig
	// TieredStorage, when set, uploads sealed segments of topics with
	// remote.storage.enable to an object store (strand_tiered.go).
	TieredStorage *TieredStorageConfig
	// Authorizer turns on authorization (authorizer.class.name = Kafka's
	// StandardAuthorizer): every request is checked against the ACLs,
	// which are managed with CreateAcls/DeleteAcls and kept in the cluster
	// metadata. Without it every client may do everything.
	Authorizer bool
	// SuperUsers may do everything (super.users), e.g. "User:admin".
	SuperUsers []string
	// AllowEveryoneIfNoACL allows a request on a resource no ACL is about
	// (allow.everyone.if.no.acl.found; false by default).
	AllowEveryoneIfNoACL bool
	// PrincipalMappingRules maps a verified TLS client certificate's
	// subject DN to its principal (ssl.principal.mapping.rules, e.g.
	// "RULE:^CN=(.*?),.*$/$1/,DEFAULT"); empty: the whole DN.
	PrincipalMappingRules string
	// Cluster, if set, makes this process one node of a cluster (see
	// ClusterConfig); nil: a single node, its own cluster.
	Cluster *ClusterConfig
}

// Broker is a running embedded broker.
type Broker struct {
	b        *broker.Broker
	srv      *kafka.Server
	internal *kafka.Server // a cluster node's internal listener (Envelope)
	// interTLS is the inter-node certificates (nil without), which
	// stopReload ends the watching of.
	interTLS     *nodetls.Source
	stopReload   chan struct{}
	internalAddr string // a cluster node's internal listener
	ln           net.Listener
	served       chan error

	metricsLn  net.Listener // nil without Config.MetricsAddr
	metricsSrv *http.Server
	consoleLn  net.Listener // nil without Config.ConsoleAddr
	consoleSrv *http.Server
	schemaLn   net.Listener // nil without Config.SchemaRegistryAddr
	schemaSrv  *http.Server
}

// Start opens the data directory and starts serving. ctx bounds only the
// start-up; the broker runs until Close.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.Dir == "" {
		return nil, errors.New("strand: Config.Dir is empty")
	}
	migration, err := group.ParseMigrationPolicy(cfg.GroupConsumerMigrationPolicy)
	if err != nil {
		return nil, fmt.Errorf("strand: %w", err)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// A cluster member registers its address before it opens, so it binds
	// first; a single node binds once it can serve, so a port that accepts
	// connections means a broker that answers them.
	var lc net.ListenConfig
	var ln net.Listener
	listen := func() (err error) {
		if ln, err = lc.Listen(ctx, "tcp", cfg.Addr); err != nil {
			return fmt.Errorf("strand: listen on %s: %w", cfg.Addr, err)
		}
		return nil
	}
	closeLn := func() error {
		if ln == nil {
			return nil
		}
		return ln.Close()
	}
	bcfg := broker.Config{
		Dir:                     cfg.Dir,
		NodeID:                  broker.NodeID(cfg.NodeID),
		DisableAutoCreateTopics: cfg.DisableAutoCreateTopics,
		DefaultPartitions:       cfg.DefaultPartitions,
		TopicDefaults:           cfg.TopicDefaults,
		Logger:                  cfg.Logger,
		RetentionCheckInterval:  cfg.RetentionCheckInterval,
		CleanerBackoff:          cfg.CleanerBackoff,
		CleanerMapBytes:         cfg.CleanerDedupeBufferSize,
		OffsetsRetention:        cfg.OffsetsRetention,
		TransactionMaxTimeout:   cfg.TransactionMaxTimeout,
		RecoverTopics:           cfg.RecoverTopics,
		ScrubInterval:           cfg.ScrubInterval,
		ScrubBytesPerSecond:     cfg.ScrubBytesPerSecond,
		MaxOpenLogFiles:         cfg.MaxOpenLogFiles,
		LogWriters:              cfg.LogWriters,
		Now:                     cfg.Now,

		GroupInitialRebalanceDelay:     cfg.GroupInitialRebalanceDelay,
		GroupConsumerSessionTimeout:    cfg.GroupConsumerSessionTimeout,
		GroupConsumerHeartbeatInterval: cfg.GroupConsumerHeartbeatInterval,
		GroupConsumerMigrationPolicy:   migration,
	}
	if bcfg.Tiered, err = cfg.TieredStorage.brokerConfig(ctx, cfg.Logger); err != nil {
		return nil, fmt.Errorf("strand: tiered storage: %w", err)
	}
	var iln net.Listener // a cluster node's internal listener
	var interTLS *nodetls.Source
	closeIln := func() error {
		if iln == nil {
			return nil
		}
		return iln.Close()
	}
	if cfg.Cluster != nil {
		if err := listen(); err != nil {
			return nil, err
		}
		var err error
		if interTLS, err = cfg.Cluster.loadTLS(cfg, ln.Addr()); err != nil {
			return nil, errors.Join(err, ln.Close())
		}
		if iln, err = cfg.Cluster.listenInternal(ctx, lc, ln.Addr()); err != nil {
			return nil, errors.Join(err, ln.Close())
		}
		if err := cfg.Cluster.configure(&bcfg, cfg, ln.Addr(), iln.Addr(), interTLS); err != nil {
			return nil, errors.Join(err, ln.Close(), iln.Close())
		}
	}
	b, err := broker.Open(bcfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("strand: %w", err), closeLn(), closeIln())
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(fmt.Errorf("strand: start: %w", err), closeLn(), b.Close())
	}
	kcfg := kafka.Config{
		Broker:          b,
		AdvertisedAddr:  cfg.AdvertisedAddr,
		MaxRequestBytes: cfg.MaxRequestBytes,
		Logger:          cfg.Logger,

		MaxIdle:                cfg.MaxIdle,
		MaxConnections:         cfg.MaxConnections,
		MaxConnectionsPerIP:    cfg.MaxConnectionsPerIP,
		MaxConnectionRate:      cfg.MaxConnectionCreationRate,
		MaxConnectionRatePerIP: cfg.MaxConnectionCreationRatePerIP,
		QueuedMaxRequestBytes:  cfg.QueuedMaxRequestBytes,
		FailedAuthDelay:        cfg.FailedAuthDelay,
	}
	if cfg.SASLUsers != nil {
		if kcfg.SASL, err = sasl.New(cfg.SASLUsers); err != nil {
			return nil, errors.Join(fmt.Errorf("strand: %w", err), closeLn(), b.Close())
		}
	}
	// newAuthorizer: each kafka.Server keeps its own authorizer's ACLs in
	// step with the metadata.
	newAuthorizer := func() *acl.Authorizer {
		if !cfg.Authorizer {
			return nil
		}
		supers := make([]acl.Principal, len(cfg.SuperUsers))
		for i, p := range cfg.SuperUsers {
			supers[i] = acl.Principal(p)
		}
		return acl.New(acl.Config{SuperUsers: supers, AllowIfNoACL: cfg.AllowEveryoneIfNoACL})
	}
	kcfg.Authorizer = newAuthorizer()
	if kcfg.PrincipalRules, err = acl.ParsePrincipalRules(cfg.PrincipalMappingRules); err != nil {
		return nil, errors.Join(fmt.Errorf("strand: %w", err), closeLn(), b.Close())
	}
	var m *metrics.Metrics
	if cfg.MetricsAddr != "" {
		m = metrics.New(b)
		kcfg.Observer = m
	}
	if kcfg.OAuthBearer, err = cfg.OAuthBearer.validator(ctx, cfg.Logger); err != nil {
		return nil, errors.Join(err, closeLn(), b.Close())
	}
	srv, err := kafka.NewServer(kcfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("strand: %w", err), closeLn(), b.Close())
	}
	if ln == nil {
		if err := listen(); err != nil {
			return nil, errors.Join(err, b.Close())
		}
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	sb := &Broker{b: b, srv: srv, ln: ln, served: make(chan error, 1)}
	if iln != nil {
		// The internal listener authorizes the requests inside Envelopes
		// (forwarded from other nodes) as the client that sent them.
		icfg := kafka.Config{Broker: b, Internal: true, Logger: cfg.Logger, MaxRequestBytes: cfg.MaxRequestBytes,
			Authorizer: newAuthorizer(), PrincipalRules: kcfg.PrincipalRules, RequireNodePeers: interTLS != nil}
		if sb.internal, err = kafka.NewServer(icfg); err != nil {
			return nil, errors.Join(fmt.Errorf("strand: internal listener: %w", err), ln.Close(), iln.Close(), srv.Close(), b.Close())
		}
		sb.internalAddr = iln.Addr().String()
		if interTLS != nil {
			iln = interTLS.Listener(iln)
			sb.interTLS, sb.stopReload = interTLS, make(chan struct{})
			if every := cfg.Cluster.TLS.ReloadInterval; every >= 0 {
				go interTLS.Watch(cmp.Or(every, 30*time.Second), sb.stopReload)
			}
		}
		go func() { _ = sb.internal.Serve(iln) }() // ends when Close closes the server
	}
	guard := func(name, addr string) httpauth.Config {
		return httpauth.Config{Name: name, Addr: addr, TLS: cfg.HTTPTLS, Users: srv.Users(), PrincipalRules: kcfg.PrincipalRules,
			Authorizing: kcfg.Authorizer != nil, Insecure: cfg.HTTPInsecure, Logger: cfg.Logger, FailedAuthDelay: failedAuthDelay(cfg.FailedAuthDelay)}
	}
	for _, g := range []httpauth.Config{guard("metrics endpoint", cfg.MetricsAddr), guard("console", cfg.ConsoleAddr), guard("schema registry", cfg.SchemaRegistryAddr)} {
		if g.Addr == "" {
			continue
		}
		if err := httpauth.CheckListener(g); err != nil {
			return nil, errors.Join(err, ln.Close(), srv.Close(), b.Close())
		}
	}
	if m != nil {
		m.ObserveListener(srv)
		for _, name := range slices.Sorted(maps.Keys(cfg.CertificateExpiry)) {
			m.ObserveCertificate(name, cfg.CertificateExpiry[name])
		}
		if interTLS != nil {
			m.ObserveCertificate("inter-node", interTLS.NotAfter)
			m.ObserveCertificate("inter-node-ca", interTLS.CANotAfter)
		}
		// /healthz stays open: a liveness probe carries no credentials and
		// learns only that the process answers.
		open := httpauth.Open{"/healthz": true}
		h := httpauth.Guard(httpauth.RequireCluster(m.Handler(), kcfg.Authorizer, acl.OpDescribe, open), guard("metrics endpoint", cfg.MetricsAddr), open)
		if sb.metricsLn, sb.metricsSrv, err = serveHTTP(ctx, lc, cfg.MetricsAddr, cfg.HTTPTLS, h, cfg.Logger); err != nil {
			return nil, errors.Join(fmt.Errorf("strand: metrics listener on %s: %w", cfg.MetricsAddr, err), ln.Close(), srv.Close(), b.Close())
		}
	}
	if cfg.ConsoleAddr != "" {
		if err := sb.startConsole(ctx, lc, cfg, kcfg.Authorizer, guard("console", cfg.ConsoleAddr)); err != nil {
			return nil, errors.Join(err, sb.closeHTTP(), ln.Close(), srv.Close(), b.Close())
		}
	}
	if cfg.SchemaRegistryAddr != "" {
		h := httpauth.Guard(schemareg.NewHandler(b.Schemas()), guard("schema registry", cfg.SchemaRegistryAddr), nil)
		if sb.schemaLn, sb.schemaSrv, err = serveHTTP(ctx, lc, cfg.SchemaRegistryAddr, cfg.HTTPTLS, h, cfg.Logger); err != nil {
			return nil, errors.Join(fmt.Errorf("strand: schema registry listener on %s: %w", cfg.SchemaRegistryAddr, err), sb.closeHTTP(), ln.Close(), srv.Close(), b.Close())
		}
	}
	go func() { sb.served <- srv.Serve(ln) }()
	return sb, nil
}

// SchemaRegistryAddr returns the address of the schema registry's HTTP
// listener (host:port), or "" without Config.SchemaRegistryAddr.
func (b *Broker) SchemaRegistryAddr() string {
	if b.schemaLn == nil {
		return ""
	}
	return b.schemaLn.Addr().String()
}

// failedAuthDelay resolves Config.FailedAuthDelay (zero: Kafka's default,
// negative: none).
func failedAuthDelay(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return kafka.DefaultFailedAuthDelay
	case d < 0:
		return 0
	}
	return d
}

// serveHTTP listens on addr and serves h, over TLS when tlsCfg is set.
func serveHTTP(ctx context.Context, lc net.ListenConfig, addr string, tlsCfg *tls.Config, h http.Handler, logger *slog.Logger) (net.Listener, *http.Server, error) {
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	// The server's own lines (a failed TLS handshake) go to the broker's
	// log at debug: a scanner must not fill it.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }() // ends with ErrServerClosed on Close
	return ln, srv, nil
}

func (b *Broker) startConsole(ctx context.Context, lc net.ListenConfig, cfg Config, authorizer *acl.Authorizer, auth httpauth.Config) error {
	c, err := console.New(b.b, cfg.Logger)
	if err != nil {
		return fmt.Errorf("strand: %w", err)
	}
	c.SetAuthorizer(authorizer)
	host, _, _ := net.SplitHostPort(cfg.ConsoleAddr)
	h := httpauth.Guard(console.HostGuard(c, host, cfg.ConsoleAllowedHosts), auth, nil)
	if b.consoleLn, b.consoleSrv, err = serveHTTP(ctx, lc, cfg.ConsoleAddr, cfg.HTTPTLS, h, cfg.Logger); err != nil {
		return fmt.Errorf("strand: console listener on %s: %w", cfg.ConsoleAddr, err)
	}
	return nil
}

// ConsoleAddr returns the address of the web console (host:port), or ""
// without Config.ConsoleAddr.
func (b *Broker) ConsoleAddr() string {
	if b.consoleLn == nil {
		return ""
	}
	return b.consoleLn.Addr().String()
}

// closeHTTP stops the metrics, console and schema registry listeners.
func (b *Broker) closeHTTP() error {
	var errs []error
	for _, s := range []*http.Server{b.metricsSrv, b.consoleSrv, b.schemaSrv} {
		if s == nil {
			continue
		}
		if err := s.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MetricsAddr returns the address of the metrics listener (host:port), or
// "" without Config.MetricsAddr.
func (b *Broker) MetricsAddr() string {
	if b.metricsLn == nil {
		return ""
	}
	return b.metricsLn.Addr().String()
}

// Addr returns the address the broker listens on (host:port), for clients'
// seed brokers.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Dir returns the data directory.
func (b *Broker) Dir() string { return b.b.Dir() }

// Close stops serving (closing client connections), then closes every
// partition cleanly. It returns the first error of either.
func (b *Broker) Close() error {
	if b.stopReload != nil {
		select {
		case <-b.stopReload:
		default:
			close(b.stopReload)
		}
	}
	err := errors.Join(b.closeHTTP(), b.srv.Close())
	if b.internal != nil {
		err = errors.Join(err, b.internal.Close())
	}
	serveErr := <-b.served
	b.served <- serveErr // a second Close gets the same answer
	return errors.Join(err, serveErr, b.b.Close())
}

// ReloadCertificates reads the inter-node certificate, key and CA files
// again (on SIGHUP); new connections use them, and connections made before
// close when their certificates expire. A file that does not load leaves
// the certificates in use and returns the error. Without inter-node TLS it
// does nothing.
func (b *Broker) ReloadCertificates() error {
	if b.interTLS == nil {
		return nil
	}
	_, err := b.interTLS.Reload()
	return err
}

// InterNodeCertificateExpiry is when this node's inter-node certificate
// and its CA expire (zero times without inter-node TLS).
func (b *Broker) InterNodeCertificateExpiry() (cert, ca time.Time) {
	if b.interTLS == nil {
		return time.Time{}, time.Time{}
	}
	return b.interTLS.NotAfter(), b.interTLS.CANotAfter()
}

// CreateTopic creates a topic with partitions partitions (0: the default)
// and config overrides (Kafka names, e.g. "retention.ms").
func (b *Broker) CreateTopic(name string, partitions int32, configs map[string]string) error {
	_, err := b.b.CreateTopic(broker.TopicSpec{Name: name, Partitions: partitions, Configs: configs})
	return err
}

// Produce appends one record to the partition its key maps to (Kafka's
// murmur2 partitioner) and returns the partition and offset.
func (b *Broker) Produce(topic string, key, value []byte) (partition int32, offset int64, err error) {
	p, o, err := b.b.Produce(topic, key, value)
	return int32(p), int64(o), err
}
