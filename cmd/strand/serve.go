package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/kafka"
	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/sasl"
)

// serveOptions are strand serve's settings. Each has a flag; a --config
// file may set them too (flags given on the command line win).
type serveOptions struct {
	listen            string
	advertised        string
	dataDir           string
	nodeID            int32
	autoCreate        bool
	defaultPartitions int32
	maxRequestBytes   int32
	logLevel          string
	logFormat         string
	metricsListen     string
	pprofListen       string
	consoleListen     string
	schemaListen      string
	tlsCert, tlsKey   string
	tlsClientCA       string
	httpTLSCert       string
	httpTLSKey        string
	httpTLSClientCA   string
	httpInsecure      bool
	saslUsers         string
	oauth             oauthOptions  // serve_oauth.go
	tiered            tieredOptions // serve_tiered.go
	authorizer        bool
	superUsers        string
	allowIfNoACL      bool
	principalRules    string
	retentionCheck    time.Duration
	cleanerBackoff    time.Duration
	cleanerMapBytes   int64
	offsetsRetention  time.Duration
	txnMaxTimeout     time.Duration
	recoverTopics     bool
	topicDefaults     map[string]string
	groupDelay        time.Duration
	consumerSession   time.Duration
	consumerHeartbeat time.Duration
	migrationPolicy   string
	maxIdle           time.Duration
	maxConns          int
	maxConnsPerIP     int
	maxConnRate       float64
	maxConnRatePerIP  float64
	queuedMaxBytes    int64
	failedAuthDelay   time.Duration
	scrubInterval     time.Duration
	maxOpenLogFiles   int
	logWriters        int
	scrubRate         int64
	consoleHosts      []string
	quorum            string
	interTLS          [3]string // --inter-node-tls-cert, -key, -ca
	insecureInterNode bool
	listenerCerts     listenerCerts // the listeners' certificates, for SIGHUP
	join              bool
	internalListen    string
	sourceIP          string
	rack              string
	roles             string
	raftAddr          string
	heartbeat         time.Duration
	session           time.Duration
	replicaLag        time.Duration
	replicationFactor int
	imbalanceCheck    time.Duration
	balancer          bool
	balancerInterval  time.Duration
	reassignThrottle  int64
	elr               bool

	pidFile string
}

const serveLong = `Run a Strand broker: Kafka clients connect to --listen; data lives in --data-dir.

With no flags: data in ./strand-data, listener on 127.0.0.1:9092.
SIGINT or SIGTERM shuts down cleanly (connections closed, partitions and
producer state flushed).

--config names a file of "key = value" lines ('#' starts a comment). Keys are
the long flag names (listen, advertised-addr, data-dir, node-id,
auto-create-topics, default-partitions, max-request-bytes, log-level,
log-format, metrics-listen, pprof-listen, console-listen, schema-registry-listen, tls-cert, tls-key, tls-client-ca, http-tls-cert, http-tls-key,
http-tls-client-ca, http-insecure, sasl-users, oauth-jwks, oauth-issuer,
oauth-audience, oauth-principal-claim, oauth-clock-skew, oauth-jwks-refresh,
oauth-allow-unsecured, authorizer, super-users, allow-everyone-if-no-acl-found, ssl-principal-mapping-rules, retention-check-interval, log-cleaner-backoff,
log-cleaner-dedupe-buffer-size, offsets-retention, group-initial-rebalance-delay,
group-consumer-session-timeout, group-consumer-heartbeat-interval, group-consumer-migration-policy,
connections-max-idle, max-connections, max-connections-per-ip, max-connection-creation-rate,
max-connection-creation-rate-per-ip,
queued-max-request-bytes, failed-authentication-delay, scrub-interval,
scrub-rate, console-allowed-hosts, pid-file, controller-quorum, internal-listen, inter-node-tls-cert,
inter-node-tls-key, inter-node-tls-ca, insecure-inter-node, source-ip, join, roles, raft-addr, broker-heartbeat-interval,
broker-session-timeout, replica-lag-time-max, default-replication-factor,
leader-imbalance-check-interval, partition-balancer, partition-balancer-interval,
reassignment-throttle), and "topic.<config>" sets a broker-wide default for a topic
config, e.g.:

    listen = 0.0.0.0:9092
    advertised-addr = broker1.example.com:9092
    data-dir = /var/lib/strand
    topic.retention.ms = 86400000

Flags given on the command line override the file.

A cluster: start each node with its own --node-id, --listen and --data-dir,
and the same --controller-quorum listing every node's Raft address, e.g.

    strand serve --node-id 1 --listen 127.0.0.1:9192 --data-dir n1 \
      --controller-quorum 1@127.0.0.1:9193,2@127.0.0.1:9293,3@127.0.0.1:9393

Clients may bootstrap from any node.`

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	var configFile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a broker",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configFile != "" {
				if err := o.applyFile(cmd.Flags(), configFile); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return o.run(ctx, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "read settings from this key = value file")
	f.StringVar(&o.listen, "listen", "127.0.0.1:9092", "address the Kafka listener binds")
	f.StringVar(&o.advertised, "advertised-addr", "", "host:port clients are told to connect to (default: the listen address)")
	f.StringVar(&o.dataDir, "data-dir", "strand-data", "data directory")
	f.Int32Var(&o.nodeID, "node-id", 0, "this broker's node id")
	f.BoolVar(&o.autoCreate, "auto-create-topics", true, "create unknown topics on produce and metadata requests (auto.create.topics.enable)")
	f.Int32Var(&o.defaultPartitions, "default-partitions", 1, "partitions of auto-created topics (num.partitions)")
	f.Int32Var(&o.maxRequestBytes, "max-request-bytes", 100<<20, "largest request accepted (socket.request.max.bytes)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "text or json")
	f.StringVar(&o.metricsListen, "metrics-listen", "127.0.0.1:9644", `address serving Prometheus /metrics and /healthz over HTTP ("" disables)`)
	f.StringVar(&o.pprofListen, "pprof-listen", "", `address serving Go's /debug/pprof profiles and execution traces over plain HTTP, unauthenticated: bind it to loopback ("" disables)`)
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate (chain) for the Kafka listener: with --tls-key, clients must connect with TLS (Kafka's SSL listener)")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&o.tlsClientCA, "tls-client-ca", "", "PEM CA bundle: with it, clients must present a certificate it signed (mutual TLS)")
	f.StringVar(&o.httpTLSCert, "http-tls-cert", "", "PEM certificate (chain) for the console, metrics and schema registry listeners: with --http-tls-key they serve HTTPS (the Kafka listener's --tls-cert may be given again)")
	f.StringVar(&o.httpTLSKey, "http-tls-key", "", "PEM private key of --http-tls-cert")
	f.StringVar(&o.httpTLSClientCA, "http-tls-client-ca", "", "PEM CA bundle: HTTP clients presenting a certificate it signed are authenticated by it (mutual TLS, principal by --ssl-principal-mapping-rules); others may use HTTP basic")
	f.BoolVar(&o.httpInsecure, "http-insecure", false, "let the console, metrics and schema registry listen beyond loopback without authentication (everyone is User:ANONYMOUS); without it such a listener needs --http-tls-cert with --sasl-users or --http-tls-client-ca")
	f.StringVar(&o.saslUsers, "sasl-users", "", `file of "user:password" lines: clients must authenticate as one of them with SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`)
	o.oauth.addFlags(f)
	o.tiered.addFlags(f)
	f.StringVar(&o.consoleListen, "console-listen", "127.0.0.1:9645", `address serving the web console and its JSON API over HTTP; its actions answer loopback clients only ("" disables)`)
	f.StringVar(&o.schemaListen, "schema-registry-listen", "127.0.0.1:8081", `address serving the Confluent-compatible schema registry API over HTTP ("" disables)`)
	f.DurationVar(&o.retentionCheck, "retention-check-interval", 30*time.Second, "how often retention.ms and retention.bytes are applied (log.retention.check.interval.ms)")
	f.DurationVar(&o.groupDelay, "group-initial-rebalance-delay", 3*time.Second, "how long a consumer group's first rebalance waits for more members (group.initial.rebalance.delay.ms; 0: none)")
	f.DurationVar(&o.consumerSession, "group-consumer-session-timeout", 45*time.Second, "how long a KIP-848 consumer group member lives without a heartbeat (group.consumer.session.timeout.ms)")
	f.DurationVar(&o.consumerHeartbeat, "group-consumer-heartbeat-interval", 5*time.Second, "how often KIP-848 consumer group members are told to heartbeat (group.consumer.heartbeat.interval.ms)")
	f.StringVar(&o.migrationPolicy, "group-consumer-migration-policy", "bidirectional", "which live groups convert between the classic and KIP-848 protocols: bidirectional, upgrade, downgrade or disabled (group.consumer.migration.policy)")
	f.DurationVar(&o.cleanerBackoff, "log-cleaner-backoff", 15*time.Second, "how often the compaction cleaner looks for dirty compacted partitions (log.cleaner.backoff.ms)")
	f.DurationVar(&o.txnMaxTimeout, "transaction-max-timeout", 15*time.Minute, "the longest transaction timeout a producer may ask for (transaction.max.timeout.ms)")
	f.DurationVar(&o.offsetsRetention, "offsets-retention", 7*24*time.Hour, "how long committed offsets outlive their group's consumers; 0 or less keeps them forever (offsets.retention.minutes)")
	f.BoolVar(&o.recoverTopics, "recover-topics", false, "re-register topics whose partition directories hold data that meta.json does not list (a lost meta.json), with default configs, instead of refusing to start")
	f.Int64Var(&o.cleanerMapBytes, "log-cleaner-dedupe-buffer-size", 128<<20, "most memory (bytes) the compaction cleaner's offset map takes; more keys are cleaned over several passes (log.cleaner.dedupe.buffer.size)")
	f.DurationVar(&o.maxIdle, "connections-max-idle", kafka.DefaultMaxIdle, "close client connections idle this long (connections.max.idle.ms; 0: never)")
	f.IntVar(&o.maxConns, "max-connections", 0, "close new client connections beyond this many (max.connections; 0: no limit)")
	f.IntVar(&o.maxConnsPerIP, "max-connections-per-ip", 0, "close new client connections beyond this many from one IP (max.connections.per.ip; 0: no limit)")
	f.Float64Var(&o.maxConnRate, "max-connection-creation-rate", 0, "new client connections accepted per second; past it the listener accepts later (max.connection.creation.rate, KIP-612; 0: no limit)")
	f.Float64Var(&o.maxConnRatePerIP, "max-connection-creation-rate-per-ip", 0, "new client connections per second from one IP; past it a new connection is closed (Kafka's connection_creation_rate quota for every ip; 0: no limit)")
	f.Int64Var(&o.queuedMaxBytes, "queued-max-request-bytes", kafka.DefaultQueuedMaxRequestBytes, "most bytes of large requests being read or waiting, over all connections; readers past it wait (queued.max.request.bytes; 0: no limit)")
	f.BoolVar(&o.authorizer, "authorizer", false, "check every request against ACLs (Kafka's StandardAuthorizer semantics); manage them with strand acl")
	f.StringVar(&o.superUsers, "super-users", "", `principals allowed everything, separated by ';' (super.users), e.g. "User:admin"`)
	f.BoolVar(&o.allowIfNoACL, "allow-everyone-if-no-acl-found", false, "with --authorizer, allow requests on resources no ACL is about (allow.everyone.if.no.acl.found)")
	f.StringVar(&o.principalRules, "ssl-principal-mapping-rules", "DEFAULT", "map a mutual-TLS client certificate's subject DN to a principal: RULE:pattern/replacement/[LU],...,DEFAULT (ssl.principal.mapping.rules)")
	f.DurationVar(&o.failedAuthDelay, "failed-authentication-delay", kafka.DefaultFailedAuthDelay, "hold a connection whose SASL authentication failed this long before answering and closing it (connection.failed.authentication.delay.ms; 0: none)")
	f.DurationVar(&o.scrubInterval, "scrub-interval", broker.DefaultScrubInterval, "how often every sealed segment's CRCs are verified in the background; a partition whose data fails goes offline (0: never)")
	f.IntVar(&o.maxOpenLogFiles, "log-max-open-files", 0, "most file descriptors partition logs hold open (segment files and indexes); the least recently used idle ones are closed past it and reopened on use (0: half the process's open-file limit; -1: no cap)")
	f.IntVar(&o.logWriters, "log-writers", 1, "most appends (produce and replication) copying their batches into the data directory at once; on a machine with few cores one at a time costs less CPU per byte (-1: no bound)")
	f.Int64Var(&o.scrubRate, "scrub-rate", broker.DefaultScrubBytesPerSecond, "most bytes per second the background scrub reads")
	f.StringVar(&o.quorum, "controller-quorum", "", `run as one node of a cluster: every node's id and Raft address, the same on each node ("1@127.0.0.1:9193,2@127.0.0.1:9293,3@127.0.0.1:9393"; controller.quorum.voters); this node's entry is where its Raft listener binds`)
	f.StringVar(&o.internalListen, "internal-listen", "", "with --controller-quorum: address of the internal listener, where other nodes forward admin requests to the controller (default: the --listen host, a free port)")
	f.StringVar(&o.rack, "rack", "", "with --controller-quorum: this node's rack or availability zone (Kafka's broker.rack); replicas of a partition go to different racks, and a consumer with client.rack reads from an in-sync replica in its rack (KIP-392)")
	f.StringVar(&o.roles, "roles", "controller,broker", `with --controller-quorum: this node's roles (Kafka's process.roles): "controller,broker" (a voter of the metadata quorum that also hosts partitions), "broker" (hosts partitions and follows the metadata log without a vote; it is not in --controller-quorum, which lists the controllers) or "controller" (a voter that hosts no partitions). A node keeps its roles: a data directory refuses a start with others`)
	f.StringVar(&o.raftAddr, "raft-addr", "", "with --roles broker: address of this node's Raft listener, where the quorum's leader sends it the metadata log (default: the --listen host, a free port; fix it in production, so a restarted broker is reached at once)")
	f.StringVar(&o.sourceIP, "source-ip", "", "with --controller-quorum: IP address this node's connections to other nodes leave from (default: the OS chooses); nodes sharing a host on 127.0.0.2, 127.0.0.3, … set their own, so a firewall rule can cut one pair")
	f.StringVar(&o.interTLS[0], "inter-node-tls-cert", "", "with --controller-quorum: this node's certificate (`strand cert create-node`): mutual TLS on Raft, controller calls, the internal listener and replica fetches; reloaded on SIGHUP and when the file changes")
	f.StringVar(&o.interTLS[1], "inter-node-tls-key", "", "with --controller-quorum: the key of --inter-node-tls-cert")
	f.StringVar(&o.interTLS[2], "inter-node-tls-ca", "", "with --controller-quorum: the cluster CA (`strand cert create-ca`): a peer node must present a certificate it signed that names a node")
	f.BoolVar(&o.insecureInterNode, "insecure-inter-node", false, "with --controller-quorum: start without inter-node TLS although this node's Raft, internal or advertised address is not loopback (anyone who reaches them can act as a node)")
	f.BoolVar(&o.join, "join", false, "with --controller-quorum: join a running cluster instead of forming one; the node waits until `strand cluster add-voter` adds it")
	f.DurationVar(&o.heartbeat, "broker-heartbeat-interval", broker.DefaultHeartbeatInterval, "how often a cluster node heartbeats the controller (broker.heartbeat.interval.ms)")
	f.DurationVar(&o.session, "broker-session-timeout", broker.DefaultSessionTimeout, "a cluster node not heard from this long is fenced and its partitions lose their leader (broker.session.timeout.ms)")
	f.DurationVar(&o.replicaLag, "replica-lag-time-max", broker.DefaultReplicaLagTime, "a follower that has not caught up with its leader for this long leaves the ISR (replica.lag.time.max.ms)")
	f.BoolVar(&o.elr, "eligible-leader-replicas", true, "track eligible leader replicas (KIP-966; Kafka's eligible.leader.replicas.version): a replica that left an ISR smaller than min.insync.replicas may lead cleanly once the ISR is empty")
	f.BoolVar(&o.balancer, "partition-balancer", true, "move replicas and preferred leaders between brokers until each holds within one of every other (a broker that joins gets its share); a few partitions at a time, never onto a drained or controller-only node, never while a partition is short of in-sync replicas")
	f.DurationVar(&o.balancerInterval, "partition-balancer-interval", 10*time.Second, "how often the partition balancer looks (with --partition-balancer)")
	f.Int64Var(&o.reassignThrottle, "reassignment-throttle", strand.DefaultReassignmentThrottle, "bytes per second this node fetches at most for replicas a reassignment is adding (the balancer's, a drain's, an operator's; Redpanda's raft_learner_recovery_rate); in-sync replicas are never held back; 0: no cap")
	f.DurationVar(&o.imbalanceCheck, "leader-imbalance-check-interval", 5*time.Minute, "how often leadership moves back to each partition's preferred (first) replica when it is in sync (leader.imbalance.check.interval.seconds; 0: never, auto.leader.rebalance.enable=false)")
	f.IntVar(&o.replicationFactor, "default-replication-factor", 1, "replicas of a topic created without a replication factor, auto-created ones included (default.replication.factor)")
	f.StringSliceVar(&o.consoleHosts, "console-allowed-hosts", nil, `host names the console answers to besides IP addresses, localhost and this machine's name (DNS rebinding guard; "*": any)`)

	// Process management.
	f.StringVar(&o.pidFile, "pid-file", "", "write this process's id to this file once it serves, and remove it at a clean stop (stop exactly this broker with kill $(cat FILE))")
	return cmd
}

// orNone maps a flag's "0: none" to strand.Config's "negative: none".
func orNone[T int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// applyFile sets every option the file names and the command line did not.
func (o *serveOptions) applyFile(flags *pflag.FlagSet, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return fmt.Errorf("config file %s:%d: want key = value", path, n)
		}
		if name, ok := strings.CutPrefix(key, "topic."); ok {
			if o.topicDefaults == nil {
				o.topicDefaults = map[string]string{}
			}
			o.topicDefaults[name] = value
			continue
		}
		fl := flags.Lookup(key)
		if fl == nil || key == "config" {
			return fmt.Errorf("config file %s:%d: unknown setting %q", path, n, key)
		}
		if fl.Changed {
			continue // the command line wins
		}
		if err := fl.Value.Set(value); err != nil {
			return fmt.Errorf("config file %s:%d: %s: %w", path, n, key, err)
		}
	}
	return sc.Err()
}

func (o *serveOptions) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, got %q", o.logFormat)
}

// offsetsRetention maps the flag (0 or less: forever) to strand.Config's
// convention (negative: forever).
func offsetsRetention(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

// tlsConfig builds the Kafka listener's TLS from --tls-cert, --tls-key and
// --tls-client-ca, or returns nil for a plaintext listener.
func (o *serveOptions) tlsConfig() (*tls.Config, error) {
	return o.serverTLS("--tls", o.tlsCert, o.tlsKey, o.tlsClientCA, tls.RequireAndVerifyClientCert)
}

// httpTLSConfig builds the HTTP listeners' TLS from --http-tls-cert,
// --http-tls-key and --http-tls-client-ca, or returns nil for plain HTTP.
// A client certificate is optional (VerifyClientCertIfGiven): a browser
// without one signs in with HTTP basic instead.
func (o *serveOptions) httpTLSConfig() (*tls.Config, error) {
	return o.serverTLS("--http-tls", o.httpTLSCert, o.httpTLSKey, o.httpTLSClientCA, tls.VerifyClientCertIfGiven)
}

// serverTLS loads a listener's certificate, key and client CA, named in
// errors by the flags' common prefix; nil without a certificate.
func (o *serveOptions) serverTLS(flag, certFile, keyFile, clientCA string, clientAuth tls.ClientAuthType) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		if clientCA != "" {
			return nil, usageErr("%s-client-ca needs %s-cert and %s-key: mutual TLS is TLS first", flag, flag, flag)
		}
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, usageErr("%s-cert and %s-key go together", flag, flag)
	}
	if clientCA == "" {
		clientAuth = tls.NoClientCert
	}
	l, err := nodetls.LoadListener(certFile, keyFile, clientCA, clientAuth, o.listenerCerts.logger)
	if err != nil {
		return nil, fmt.Errorf("%s-cert/%s-key/%s-client-ca: %w", flag, flag, flag, err)
	}
	o.listenerCerts.add(flag, l)
	return l.Config(), nil
}

// listenerCerts holds the listeners' certificates that SIGHUP reads again.
type listenerCerts struct {
	logger *slog.Logger
	mu     sync.Mutex
	names  []string
	certs  []*nodetls.ListenerTLS
}

func (r *listenerCerts) add(name string, l *nodetls.ListenerTLS) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names, r.certs = append(r.names, name), append(r.certs, l)
}

// reload reads every listener's files again; the first error is returned
// after all were tried.
func (r *listenerCerts) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for i, l := range r.certs {
		if _, err := l.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.names[i], err))
		}
	}
	return errors.Join(errs...)
}

// watch reloads the listeners' certificates every interval until stop,
// so a renewed file is picked up without a signal; a failure is logged
// once until it changes.
func (r *listenerCerts) watch(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last string
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		err := r.reload()
		switch {
		case err != nil && err.Error() != last:
			r.logger.Warn("strand: listener certificates not reloaded; the ones in use stay", "err", err)
			last = err.Error()
		case err == nil:
			last = ""
		}
	}
}

// expiry is each listener certificate's expiry, for /metrics.
func (r *listenerCerts) expiry() map[string]func() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]func() time.Time{}
	for i, l := range r.certs {
		out[strings.TrimPrefix(r.names[i], "--")] = l.NotAfter
	}
	return out
}

// minCleanerMapBytes is the least offset-map memory serve accepts: room
// for about a thousand keys.
const minCleanerMapBytes = 64 << 10

// run serves until ctx is cancelled (a signal), then shuts down.
func (o *serveOptions) run(ctx context.Context, logOut io.Writer) error {
	logger, err := o.logger(logOut)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	o.listenerCerts.logger = logger
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return err
	}
	httpTLS, err := o.httpTLSConfig()
	if err != nil {
		return err
	}
	var users map[string]string
	if o.saslUsers != "" {
		raw, err := os.ReadFile(o.saslUsers)
		if err != nil {
			return fmt.Errorf("--sasl-users: %w", err)
		}
		if users, err = sasl.ParseUsers(raw); err != nil {
			return fmt.Errorf("--sasl-users %s: %w", o.saslUsers, err)
		}
		if len(users) == 0 {
			return fmt.Errorf("--sasl-users %s: no users", o.saslUsers)
		}
	}
	oauthCfg, err := o.oauth.config()
	if err != nil {
		return err
	}
	tierCfg, err := o.tiered.config()
	if err != nil {
		return err
	}
	if !o.authorizer && (o.superUsers != "" || o.allowIfNoACL) {
		return usageErr("--super-users and --allow-everyone-if-no-acl-found need --authorizer")
	}
	if o.cleanerMapBytes < minCleanerMapBytes {
		return fmt.Errorf("--log-cleaner-dedupe-buffer-size: %d bytes is below the minimum of %d", o.cleanerMapBytes, minCleanerMapBytes)
	}
	started := time.Now()
	var clusterCfg *strand.ClusterConfig
	roles, err := strand.ParseRoles(o.roles)
	if err != nil {
		return usageErr("--roles: %s", strings.TrimPrefix(err.Error(), "strand: "))
	}
	if err := checkRolesFlags(o, roles); err != nil {
		return err
	}
	if o.quorum != "" {
		voters, err := strand.ParseQuorum(o.quorum)
		if err != nil {
			return fmt.Errorf("--controller-quorum: %w", err)
		}
		var source net.IP
		if o.sourceIP != "" {
			if source = net.ParseIP(o.sourceIP); source == nil {
				return fmt.Errorf("--source-ip: %q is not an IP address", o.sourceIP)
			}
		}
		clusterCfg = &strand.ClusterConfig{Quorum: voters, SourceIP: source, Rack: o.rack, HeartbeatInterval: o.heartbeat, SessionTimeout: o.session, Join: o.join, InternalAddr: o.internalListen,
			Roles: roles, RaftAddr: o.raftAddr,
			ReplicaLagTime: o.replicaLag, DefaultReplicationFactor: o.replicationFactor, LeaderImbalanceCheckInterval: o.imbalanceCheck, DisableELR: !o.elr,
			PartitionBalancerInterval: o.balancerInterval, ReassignmentThrottle: o.reassignThrottle}
		if !o.balancer || o.balancerInterval <= 0 {
			clusterCfg.PartitionBalancerInterval = -1
		}
		if o.imbalanceCheck == 0 {
			clusterCfg.LeaderImbalanceCheckInterval = -1
		}
		if o.reassignThrottle <= 0 {
			clusterCfg.ReassignmentThrottle = -1 // the flag's 0: no cap
		}
		if clusterCfg.TLS, err = o.interNodeTLS(); err != nil {
			return err
		}
		clusterCfg.Insecure = o.insecureInterNode
		if o.join {
			logger.Info(joinHint(voters, o.nodeID))
		}
	} else if o.interTLS != [3]string{} || o.insecureInterNode {
		return usageErr("--inter-node-tls-* and --insecure-inter-node need --controller-quorum")
	} else if o.rack != "" {
		return usageErr("--rack needs --controller-quorum: a single node has no replicas to spread")
	}
	b, err := strand.Start(ctx, strand.Config{
		Cluster:                 clusterCfg,
		Dir:                     dir,
		Addr:                    o.listen,
		AdvertisedAddr:          o.advertised,
		NodeID:                  o.nodeID,
		DisableAutoCreateTopics: !o.autoCreate,
		DefaultPartitions:       o.defaultPartitions,
		MaxRequestBytes:         o.maxRequestBytes,
		TopicDefaults:           o.topicDefaults,
		Logger:                  logger,
		MetricsAddr:             o.metricsListen,
		ConsoleAddr:             o.consoleListen,
		ConsoleAllowedHosts:     o.consoleHosts,
		SchemaRegistryAddr:      o.schemaListen,
		TLS:                     tlsCfg,
		HTTPTLS:                 httpTLS,
		HTTPInsecure:            o.httpInsecure,
		CertificateExpiry:       o.listenerCerts.expiry(),
		SASLUsers:               users,
		OAuthBearer:             oauthCfg,
		TieredStorage:           tierCfg,
		Authorizer:              o.authorizer,
		SuperUsers:              superUsers(o.superUsers),
		AllowEveryoneIfNoACL:    o.allowIfNoACL,
		PrincipalMappingRules:   o.principalRules,
		RetentionCheckInterval:  o.retentionCheck,
		CleanerBackoff:          o.cleanerBackoff,
		CleanerDedupeBufferSize: o.cleanerMapBytes,
		OffsetsRetention:        offsetsRetention(o.offsetsRetention),
		TransactionMaxTimeout:   o.txnMaxTimeout,
		RecoverTopics:           o.recoverTopics,
		MaxIdle:                 orNone(o.maxIdle),
		MaxConnections:          o.maxConns,
		MaxConnectionsPerIP:     o.maxConnsPerIP,

		MaxConnectionCreationRate:      o.maxConnRate,
		MaxConnectionCreationRatePerIP: o.maxConnRatePerIP,
		QueuedMaxRequestBytes:          orNone(o.queuedMaxBytes),
		FailedAuthDelay:                orNone(o.failedAuthDelay),
		ScrubInterval:                  orNone(o.scrubInterval),
		ScrubBytesPerSecond:            o.scrubRate,
		MaxOpenLogFiles:                o.maxOpenLogFiles,
		LogWriters:                     o.logWriters,
		// strand.Config: zero is Kafka's default, negative is none.
		GroupInitialRebalanceDelay:     cmp.Or(o.groupDelay, -1),
		GroupConsumerSessionTimeout:    o.consumerSession,
		GroupConsumerHeartbeatInterval: o.consumerHeartbeat,
		GroupConsumerMigrationPolicy:   o.migrationPolicy,
	})
	if err != nil {
		return err
	}
	// Before the line that says it serves: whoever waits for that line
	// (a script, a test) finds the file there.
	if o.pidFile != "" {
		if err := writePidFile(o.pidFile); err != nil {
			_ = b.Close()
			return err
		}
		defer func() {
			if err := removePidFile(o.pidFile); err != nil {
				logger.Warn("strand: "+err.Error(), "pid_file", o.pidFile)
			}
		}()
	}
	advertised := o.advertised
	if advertised == "" {
		advertised = b.Addr()
	}
	logger.Info("strand: serving Kafka on "+b.Addr()+", data in "+dir,
		"listen", b.Addr(), "advertised", advertised, "data_dir", dir, "node_id", o.nodeID,
		"auto_create_topics", o.autoCreate, "default_partitions", o.defaultPartitions,
		"pid", strconv.Itoa(os.Getpid()), "started_in", time.Since(started).Round(time.Millisecond))
	scheme := "http://"
	if httpTLS != nil {
		scheme = "https://"
	}
	if addr := b.MetricsAddr(); addr != "" {
		logger.Info("strand: metrics on "+scheme+addr+"/metrics", "metrics", addr)
	}
	if addr := b.ConsoleAddr(); addr != "" {
		logger.Info("strand: console on "+scheme+addr+"/", "console", addr)
	}
	if addr := b.SchemaRegistryAddr(); addr != "" {
		logger.Info("strand: schema registry on "+scheme+addr+"/", "schema_registry", addr)
	}
	stopHUP := reloadOnHUP(b, &o.listenerCerts, logger)
	go o.listenerCerts.watch(30*time.Second, ctx.Done())
	defer stopHUP()
	if o.pprofListen != "" {
		stopPprof, err := servePprof(o.pprofListen, logger)
		if err != nil {
			_ = b.Close()
			return err
		}
		defer stopPprof()
	}
	<-ctx.Done()
	logger.Info("strand: shutting down")
	stopping := time.Now()
	if err := b.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("strand: stopped", "took", time.Since(stopping).Round(time.Millisecond))
	return nil
}

// interNodeTLS reads the --inter-node-tls-* flags: all three or none.
func (o *serveOptions) interNodeTLS() (*strand.InterNodeTLS, error) {
	switch n := len(slices.DeleteFunc(o.interTLS[:], func(s string) bool { return s == "" })); {
	case n == 0:
		return nil, nil
	case n < 3:
		return nil, usageErr("inter-node TLS needs all of --inter-node-tls-cert, --inter-node-tls-key and --inter-node-tls-ca")
	}
	if o.insecureInterNode {
		return nil, usageErr("--insecure-inter-node contradicts --inter-node-tls-*: give one or the other")
	}
	return &strand.InterNodeTLS{CertFile: o.interTLS[0], KeyFile: o.interTLS[1], CAFile: o.interTLS[2]}, nil
}

// reloadOnHUP reloads the inter-node certificates on every SIGHUP until
// the returned function is called.
func reloadOnHUP(b *strand.Broker, certs *listenerCerts, logger *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
			}
			if err := errors.Join(b.ReloadCertificates(), certs.reload()); err != nil {
				logger.Error("strand: SIGHUP: certificates not reloaded; the ones in use stay", "err", err)
			} else {
				logger.Info("strand: SIGHUP: certificates read again")
			}
		}
	}()
	return func() { signal.Stop(hup); close(done) }
}

// superUsers splits a super.users value ("User:a;User:b").
func superUsers(s string) []string {
	var out []string
	for _, p := range acl.ParseSuperUsers(s) {
		out = append(out, string(p))
	}
	return out
}
