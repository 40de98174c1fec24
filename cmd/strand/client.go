package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Exit codes of every client command. A script can tell "fix your command"
// from "start the broker" from "the broker said no".
const (
	exitError       = 1 // the request failed (the broker refused, a topic is missing, …)
	exitUsage       = 2 // bad flags or arguments
	exitUnreachable = 3 // no broker answered at --brokers
)

// exitErr carries an exit code to main.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// usageErr marks err as the user's mistake (exit code 2).
// errNoTopic is the one answer every command gives for a topic that does
// not exist.
func errNoTopic(topic string) error {
	return fmt.Errorf("no topic %q — \"strand topic list\" shows the topics there are", topic)
}

// errNoGroup is errNoTopic for consumer groups. Kafka answers a group it
// does not know as one in state Dead with no members or offsets.
func errNoGroup(group string) error {
	return fmt.Errorf("no group %q — \"strand group list\" shows the groups there are", group)
}

func usageErr(format string, args ...any) error {
	return &exitErr{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	var e *exitErr
	if errors.As(err, &e) {
		return e.code
	}
	return exitError
}

// defaultBrokers is --brokers' default when STRAND_BROKERS is unset.
const defaultBrokers = "127.0.0.1:9092"

// clientOptions are the flags every client command shares: where the
// brokers are and how to print. Client commands speak only the Kafka
// protocol (franz-go kgo/kadm), so they work against Apache Kafka and
// Redpanda too.
type clientOptions struct {
	brokers string
	output  string // "table" or "json"
	timeout time.Duration

	tls             bool   // TLS with the system's roots
	tlsCA           string // PEM roots instead (implies TLS)
	tlsCert, tlsKey string // client certificate for mutual TLS

	saslMechanism, saslUser string // password: env STRAND_SASL_PASSWORD
}

// addClientFlags registers --brokers, --timeout and the TLS flags on fs,
// and --output when the command prints something tabular.
func addClientFlags(cmd *cobra.Command, o *clientOptions, persistent, tabular bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	def := os.Getenv("STRAND_BROKERS")
	if def == "" {
		def = defaultBrokers
	}
	fs.StringVar(&o.brokers, "brokers", def, "comma-separated seed brokers (env STRAND_BROKERS)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Second, "give up on a request after this long")
	fs.BoolVar(&o.tls, "tls", false, "connect with TLS, trusting the system's CAs")
	fs.StringVar(&o.tlsCA, "tls-ca", os.Getenv("STRAND_TLS_CA"), "connect with TLS, trusting the CAs in this PEM file (env STRAND_TLS_CA)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "PEM client certificate for mutual TLS (with --tls-key)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&o.saslUser, "sasl-user", os.Getenv("STRAND_SASL_USER"), "authenticate with SASL as this user (env STRAND_SASL_USER; the password comes from env STRAND_SASL_PASSWORD)")
	fs.StringVar(&o.saslMechanism, "sasl-mechanism", "SCRAM-SHA-512", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	if tabular {
		fs.StringVarP(&o.output, "output", "o", "table", "table or json")
	}
}

func (o *clientOptions) seeds() []string {
	var s []string
	for _, b := range strings.Split(o.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			s = append(s, b)
		}
	}
	return s
}

func (o *clientOptions) json() (bool, error) {
	switch o.output {
	case "", "table":
		return false, nil
	case "json":
		return true, nil
	}
	return false, usageErr("--output: want table or json, got %q", o.output)
}

// reachable dials the seed brokers once, so that a missing broker is
// reported at once and plainly. Without it, the Kafka client would retry
// dialing until --timeout and then return a less helpful error.
func (o *clientOptions) reachable(ctx context.Context) error {
	seeds := o.seeds()
	if len(seeds) == 0 {
		return usageErr("--brokers is empty: want host:port[,host:port…]")
	}
	var d net.Dialer
	d.Timeout = 3 * time.Second
	var last error
	for _, s := range seeds {
		c, err := d.DialContext(ctx, "tcp", s)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
	}
	return &exitErr{code: exitUnreachable, err: fmt.Errorf(
		"no broker at %s — is \"strand serve\" running? (set --brokers or STRAND_BROKERS to point elsewhere)\n(%v)",
		strings.Join(seeds, ","), last)}
}

// client checks the brokers are reachable and returns a Kafka client.
func (o *clientOptions) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	if err := o.reachable(ctx); err != nil {
		return nil, err
	}
	tlsCfg, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(o.seeds()...),
		kgo.RetryTimeout(o.timeout),
		// A record the broker does not take within --timeout fails, so
		// produce waits, flushes included, end when the broker is gone.
		kgo.RecordDeliveryTimeout(o.timeout),
		kgo.ClientID("strand-cli"),
	}
	if tlsCfg != nil {
		base = append(base, kgo.DialTLSConfig(tlsCfg))
	}
	if o.saslUser != "" {
		mech, err := o.saslAuth()
		if err != nil {
			return nil, err
		}
		base = append(base, kgo.SASL(mech))
	}
	opts = append(base, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, usageErr("kafka client: %v", err)
	}
	return cl, nil
}

// tlsConfig is the client's TLS from --tls, --tls-ca, --tls-cert and
// --tls-key, or nil for plaintext.
func (o *clientOptions) tlsConfig() (*tls.Config, error) {
	if !o.tls && o.tlsCA == "" && o.tlsCert == "" && o.tlsKey == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		pool, err := loadCertPool(o.tlsCA)
		if err != nil {
			return nil, usageErr("--tls-ca: %v", err)
		}
		cfg.RootCAs = pool
	}
	switch {
	case o.tlsCert != "" && o.tlsKey != "":
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, usageErr("--tls-cert/--tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case o.tlsCert != "" || o.tlsKey != "":
		return nil, usageErr("--tls-cert and --tls-key go together")
	}
	return cfg, nil
}

// saslAuth is the SASL mechanism for --sasl-user, --sasl-mechanism and
// $STRAND_SASL_PASSWORD (never a flag: it would show in ps).
func (o *clientOptions) saslAuth() (sasl.Mechanism, error) {
	pass := os.Getenv("STRAND_SASL_PASSWORD")
	if pass == "" {
		return nil, usageErr("--sasl-user %s: set the password in STRAND_SASL_PASSWORD", o.saslUser)
	}
	switch strings.ToUpper(o.saslMechanism) {
	case "PLAIN":
		return plain.Auth{User: o.saslUser, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: o.saslUser, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: o.saslUser, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, usageErr("--sasl-mechanism: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", o.saslMechanism)
}

// loadCertPool reads a PEM bundle of CA certificates.
func loadCertPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// admin returns an admin client; closing it closes its Kafka client.
func (o *clientOptions) admin(ctx context.Context) (*kadm.Client, error) {
	cl, err := o.client(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// ctx bounds one command by --timeout.
func (o *clientOptions) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, o.timeout)
}

// writeJSON prints v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns an aligned table writer; call Flush when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// parseKV parses repeated k=v flag values into a map.
func parseKV(flag string, vals []string) (map[string]string, error) {
	m := make(map[string]string, len(vals))
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErr("--%s %q: want key=value", flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// signalContext is parent, cancelled on SIGINT or SIGTERM, so that a
// command stops cleanly (commits, flushes, each bounded by --timeout) when
// interrupted. A second signal exits at once (status 130), for a user who
// will not wait even that long.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(os.Stderr, "strand: interrupted twice; exiting without finishing")
			os.Exit(130)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
}

// markUsageErrors makes the argument checks of c and every command below it
// fail with exit code 2, like bad flags: a wrong argument count is the
// user's mistake, not the broker's answer.
func markUsageErrors(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &exitErr{code: exitUsage, err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markUsageErrors(sub)
	}
}

// adminRun is the shape every admin command shares: read --output, bound the
// work by --timeout, connect to --brokers, and hand fn the admin client.
func (o *clientOptions) adminRun(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client, asJSON bool) error) error {
	return o.clientRun(cmd, func(ctx context.Context, cl *kgo.Client, asJSON bool) error {
		return fn(ctx, kadm.NewClient(cl), asJSON)
	})
}

// clientRun is adminRun for commands that send raw requests: fn gets the
// Kafka client itself.
func (o *clientOptions) clientRun(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client, asJSON bool) error) error {
	asJSON, err := o.json()
	if err != nil {
		return err
	}
	ctx, cancel := o.ctx(cmd.Context())
	defer cancel()
	cl, err := o.client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(ctx, cl, asJSON)
}
