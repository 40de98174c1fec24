package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/sr"
)

// newSchemaCmd is "strand schema": the schema registry from the command
// line. It speaks the Confluent registry REST API (franz-go's pkg/sr), so
// it works against Strand's built-in registry (strand serve
// --schema-registry-listen), Confluent's and Redpanda's alike.
func newSchemaCmd() *cobra.Command {
	o := &registryOptions{}
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Register, list, show and check schemas in a schema registry",
		Args:  cobra.NoArgs,
	}
	fs := cmd.PersistentFlags()
	fs.StringVar(&o.url, "registry", registryDefault(), "schema registry URL (env STRAND_SCHEMA_REGISTRY)")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Second, "give up on a request after this long")
	fs.StringVarP(&o.output, "output", "o", "table", "table or json")
	o.addAuthFlags(fs)
	cmd.AddCommand(newSchemaRegisterCmd(o), newSchemaCheckCmd(o), newSchemaListCmd(o), newSchemaGetCmd(o))
	return cmd
}

// defaultRegistry is --registry's default: strand serve's
// --schema-registry-listen default.
const defaultRegistry = "http://127.0.0.1:8081"

// registryDefault is --registry's default: $STRAND_SCHEMA_REGISTRY, else
// defaultRegistry.
func registryDefault() string {
	if def := os.Getenv("STRAND_SCHEMA_REGISTRY"); def != "" {
		return def
	}
	return defaultRegistry
}

// registryOptions are the flags every schema command shares.
type registryOptions struct {
	url     string
	timeout time.Duration
	output  string
	// A registry served over HTTPS and requiring authentication (strand
	// serve --http-tls-cert beyond loopback): roots, a client certificate,
	// a basic-auth user (password from the environment, never a flag).
	ca, cert, key, user string
}

// addAuthFlags registers the registry's TLS and authentication flags.
func (o *registryOptions) addAuthFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ca, "registry-ca", os.Getenv("STRAND_SCHEMA_REGISTRY_CA"), "PEM CA bundle verifying an https registry (env STRAND_SCHEMA_REGISTRY_CA; default: the system roots)")
	fs.StringVar(&o.cert, "registry-cert", "", "PEM client certificate for a registry authenticating by mutual TLS (with --registry-key)")
	fs.StringVar(&o.key, "registry-key", "", "PEM private key of --registry-cert")
	fs.StringVar(&o.user, "registry-user", os.Getenv("STRAND_SCHEMA_REGISTRY_USER"), "HTTP basic authentication as this user (env STRAND_SCHEMA_REGISTRY_USER; the password comes from env STRAND_SCHEMA_REGISTRY_PASSWORD)")
}

func (o *registryOptions) json() (bool, error) {
	switch o.output {
	case "", "table":
		return false, nil
	case "json":
		return true, nil
	}
	return false, usageErr("-o %q: want table or json", o.output)
}

func (o *registryOptions) client() (*sr.Client, error) {
	u := o.url
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	opts := []sr.ClientOpt{sr.URLs(u)}
	if o.user != "" {
		pass := os.Getenv("STRAND_SCHEMA_REGISTRY_PASSWORD")
		if pass == "" {
			return nil, usageErr("--registry-user %s: set the password in STRAND_SCHEMA_REGISTRY_PASSWORD", o.user)
		}
		opts = append(opts, sr.BasicAuth(o.user, pass))
	}
	if o.ca != "" || o.cert != "" || o.key != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.ca != "" {
			pool, err := loadCertPool(o.ca)
			if err != nil {
				return nil, usageErr("--registry-ca: %v", err)
			}
			cfg.RootCAs = pool
		}
		if (o.cert == "") != (o.key == "") {
			return nil, usageErr("--registry-cert and --registry-key go together")
		}
		if o.cert != "" {
			c, err := tls.LoadX509KeyPair(o.cert, o.key)
			if err != nil {
				return nil, usageErr("--registry-cert/--registry-key: %v", err)
			}
			cfg.Certificates = []tls.Certificate{c}
		}
		opts = append(opts, sr.HTTPClient(&http.Client{Timeout: o.timeout, Transport: &http.Transport{TLSClientConfig: cfg}}))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, usageErr("--registry %s: %v", o.url, err)
	}
	return cl, nil
}

func (o *registryOptions) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return context.WithTimeout(parent, o.timeout)
}

// registryErr says what a failed registry call means: an unreachable
// registry exits 3, like an unreachable broker.
func (o *registryOptions) registryErr(err error) error {
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) && !ne.Timeout() {
		return &exitErr{code: exitUnreachable, err: fmt.Errorf(
			"no schema registry at %s — is \"strand serve\" running with --schema-registry-listen? (set --registry or STRAND_SCHEMA_REGISTRY to point elsewhere)\n(%v)", o.url, err)}
	}
	return err
}

// schemaInput is a schema given on the command line: its text from
// --file ("-": standard input), its type and references.
type schemaInput struct {
	file string
	typ  string
	refs []string // name=subject:version
}

func (in *schemaInput) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&in.file, "file", "f", "", `file holding the schema ("-": standard input)`)
	f.StringVarP(&in.typ, "type", "t", "", "AVRO, PROTOBUF or JSON (default: PROTOBUF for a .proto file, JSON for a .json file, else AVRO)")
	f.StringArrayVar(&in.refs, "reference", nil, "a schema reference, name=subject:version (repeatable)")
	_ = cmd.MarkFlagRequired("file")
}

func (in *schemaInput) schema(stdin io.Reader) (sr.Schema, error) {
	var text []byte
	var err error
	if in.file == "-" {
		text, err = io.ReadAll(stdin)
	} else {
		text, err = os.ReadFile(in.file)
	}
	if err != nil {
		return sr.Schema{}, usageErr("--file: %v", err)
	}
	typ := strings.ToUpper(in.typ)
	if typ == "" {
		switch {
		case strings.HasSuffix(in.file, ".proto"):
			typ = "PROTOBUF"
		case strings.HasSuffix(in.file, ".json"):
			typ = "JSON"
		default:
			typ = "AVRO"
		}
	}
	s := sr.Schema{Schema: string(text)}
	if err := s.Type.UnmarshalText([]byte(typ)); err != nil {
		return s, usageErr("--type %q: want AVRO, PROTOBUF or JSON", in.typ)
	}
	for _, r := range in.refs {
		name, sv, ok1 := strings.Cut(r, "=")
		subject, v, ok2 := strings.Cut(sv, ":")
		version, err := strconv.Atoi(v)
		if !ok1 || !ok2 || err != nil || name == "" || subject == "" {
			return s, usageErr("--reference %q: want name=subject:version", r)
		}
		s.References = append(s.References, sr.SchemaReference{Name: name, Subject: subject, Version: version})
	}
	return s, nil
}

func newSchemaRegisterCmd(o *registryOptions) *cobra.Command {
	var in schemaInput
	cmd := &cobra.Command{
		Use:   "register <subject>",
		Short: "Register a schema under a subject (the subject's compatibility level applies)",
		Long: `Register a schema under a subject and print its global id and version.
Registering a schema the subject already has answers its existing id; a
schema incompatible with the subject's versions (under its compatibility
level) is refused, with the reasons. "strand schema check" tests first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			s, err := in.schema(cmd.InOrStdin())
			if err != nil {
				return err
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			got, err := cl.CreateSchema(ctx, args[0], s)
			if err != nil {
				return o.registryErr(fmt.Errorf("register %s: %w", args[0], err))
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"subject": got.Subject, "version": got.Version, "id": got.ID, "type": got.Type.String()})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "registered %s version %d, id %d (%s)\n", got.Subject, got.Version, got.ID, got.Type)
			return err
		},
	}
	in.flags(cmd)
	return cmd
}

func newSchemaCheckCmd(o *registryOptions) *cobra.Command {
	var in schemaInput
	var version string
	cmd := &cobra.Command{
		Use:   "check <subject>",
		Short: "Test whether a schema may be registered under a subject, without registering it",
		Long: `Test a schema against a subject's versions under its compatibility level
(or against one --version) and print whether it is compatible, with the
reasons when it is not. Exits 1 when it is not compatible.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := o.json()
			if err != nil {
				return err
			}
			s, err := in.schema(cmd.InOrStdin())
			if err != nil {
				return err
			}
			v := -2 // every version the level says
			if version != "" {
				if v, err = parseSchemaVersion(version); err != nil {
					return err
				}
			}
			cl, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd.Context())
			defer cancel()
			res, err := cl.CheckCompatibility(sr.WithParams(ctx, sr.Verbose), args[0], v, s)
			if err != nil {
				return o.registryErr(fmt.Errorf("check %s: %w", args[0], err))
			}
			if res.Messages == nil {
				res.Messages = []string{}
			}
			if asJSON {
				if err := writeJSON(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else if res.Is {
				fmt.Fprintf(cmd.OutOrStdout(), "compatible with %s\n", args[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "NOT compatible with %s:\n", args[0])
				for _, m := range res.Messages {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", m)
				}
			}
			if !res.Is {
				return &exitErr{code: exitError, err: fmt.Errorf("schema not compatible with %s", args[0])}
			}
			return nil
		},
	}
	in.flags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "check against this version only (a number or latest)")
	return cmd
}

// parseSchemaVersion reads a version argument: a number, or latest (-1).
func parseSchemaVersion(s string) (int, error) {
	if s == "latest" {
		return -1, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, usageErr("version %q: want a positive number or latest", s)
	}
	return v, nil
}
