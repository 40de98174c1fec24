// Package httpauth guards Strand's HTTP listeners — the web console, the
// Prometheus /metrics endpoint and the schema registry — with the same
// identities the Kafka listener knows: HTTP basic authentication checked
// against the SASL user store (fixed users by digest, run-time SCRAM users
// by one PBKDF2 against their stored credential; no plaintext password is
// kept anywhere), or a verified TLS client certificate mapped to a
// principal by ssl.principal.mapping.rules.
//
// The rules (Guard, CheckListener):
//
//   - A listener bound to a non-loopback address must be able to
//     authenticate: TLS with a client CA (mutual TLS), or TLS and a user
//     store (basic authentication; never basic over plain HTTP, which would
//     send passwords in the clear). Otherwise it refuses to start, unless
//     the operator opted out explicitly (Insecure).
//   - Such a listener requires authentication on every request; so does a
//     loopback listener when authorization is on and a way to authenticate
//     exists (else a local client would bypass the ACLs). A loopback
//     listener otherwise serves anonymous requests as User:ANONYMOUS.
//   - Credentials offered are always checked: wrong ones answer 401 even
//     where they were optional.
//
// It is pure HTTP plumbing: it never decides what a principal may see;
// handlers read Principal from the request and ask the authorizer.
package httpauth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/sasl"
)

// Config describes one HTTP listener's authentication.
type Config struct {
	// Name is the surface ("console", "metrics", "schema registry") for
	// errors and logs.
	Name string
	// Addr is the address the listener binds (host:port).
	Addr string
	// TLS is the listener's TLS configuration; nil: plain HTTP. ClientCAs
	// set means clients may authenticate with a certificate.
	TLS *tls.Config
	// Users verifies basic authentication; nil: no user store.
	Users *sasl.Users
	// PrincipalRules maps a client certificate's subject DN.
	PrincipalRules *acl.PrincipalRules
	// Authorizing says authorization is on: a loopback listener then
	// requires authentication too when it can authenticate.
	Authorizing bool
	// Insecure lets a non-loopback listener start without a way to
	// authenticate (serving everyone as User:ANONYMOUS).
	Insecure bool
	// FailedAuthDelay holds the answer to wrong credentials this long
	// (the Kafka listener's connection.failed.authentication.delay.ms), so
	// guessing passwords is slow; 0: none.
	FailedAuthDelay time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Loopback reports whether addr's host is a loopback address or
// "localhost". An empty host or 0.0.0.0 binds every interface: not
// loopback.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c Config) mutualTLS() bool { return c.TLS != nil && c.TLS.ClientCAs != nil }

// CheckListener refuses a non-loopback listener that cannot authenticate,
// saying what to configure. The flag names are strand serve's.
func CheckListener(c Config) error {
	if Loopback(c.Addr) || c.Insecure {
		return nil
	}
	switch {
	case c.mutualTLS():
		return nil
	case c.TLS != nil && c.Users != nil:
		return nil
	case c.Users != nil:
		return fmt.Errorf("strand: the %s listens on %s, beyond this machine, and HTTP basic authentication over plain HTTP would send passwords in the clear: "+
			"give --http-tls-cert and --http-tls-key (the Kafka listener's --tls-cert/--tls-key may be reused), bind it to 127.0.0.1, or pass --http-insecure to serve it anyway", c.Name, c.Addr)
	}
	return fmt.Errorf("strand: the %s listens on %s, beyond this machine, with no way to authenticate its clients: "+
		"give --http-tls-cert and --http-tls-key with --sasl-users (HTTP basic against the SASL/SCRAM users) or with --http-tls-client-ca (mutual TLS), "+
		"bind it to 127.0.0.1, or pass --http-insecure to serve it unauthenticated", c.Name, c.Addr)
}

type principalKey struct{}

// Principal is the request's authenticated principal (User:ANONYMOUS when
// it did not authenticate), as Guard set it; ok is false outside Guard.
func Principal(r *http.Request) (p acl.Principal, ok bool) {
	p, ok = r.Context().Value(principalKey{}).(acl.Principal)
	return p, ok
}

// Host is the request's client IP, the host of an ACL check.
func Host(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Open lists paths served to anyone, authenticated or not (a liveness
// probe's /healthz).
type Open map[string]bool

// errUnauthenticated and errBadCredentials are Guard's two 401s.
var (
	errUnauthenticated = errors.New("authentication required")
	errBadCredentials  = errors.New("invalid credentials")
)

// Guard serves h to requests that authenticate as c requires, with the
// principal in the request's context; others get 401 with a basic
// challenge when basic authentication is possible. open paths skip it.
func Guard(h http.Handler, c Config, open Open) http.Handler {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	required := !Loopback(c.Addr) && !c.Insecure || c.Authorizing && (c.Users != nil || c.mutualTLS())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		p, err := c.authenticate(r, required)
		if err != nil {
			if c.Users != nil {
				w.Header().Set("WWW-Authenticate", `Basic realm="Strand", charset="UTF-8"`)
			}
			if errors.Is(err, errBadCredentials) {
				c.Logger.Info("httpauth: authentication failed", "surface", c.Name, "remote", r.RemoteAddr, "err", err)
				select {
				case <-time.After(c.FailedAuthDelay):
				case <-r.Context().Done():
				}
			}
			http.Error(w, "strand "+c.Name+": "+err.Error(), http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// authenticate finds the request's principal: a verified client
// certificate, else basic credentials, else anonymous where allowed.
func (c Config) authenticate(r *http.Request, required bool) (acl.Principal, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		p, ok := c.PrincipalRules.Map(r.TLS.PeerCertificates[0].Subject.String())
		if !ok {
			return "", fmt.Errorf("%w: no ssl.principal.mapping.rules rule applies to the client certificate's subject", errBadCredentials)
		}
		return p, nil
	}
	if user, pass, ok := r.BasicAuth(); ok {
		if c.Users == nil || !c.Users.Verify(user, pass) {
			return "", fmt.Errorf("%w: wrong user name or password", errBadCredentials)
		}
		return acl.User(user), nil
	}
	if _, offered := r.Header["Authorization"]; offered {
		return "", fmt.Errorf("%w: only Basic authorization is accepted", errBadCredentials)
	}
	if required {
		return "", errUnauthenticated
	}
	return acl.Anonymous, nil
}

// RequireCluster serves h only to principals authorizer allows op on the
// cluster (403 otherwise); nil authorizer: everyone. open paths skip it.
func RequireCluster(h http.Handler, authorizer *acl.Authorizer, op acl.Operation, open Open) http.Handler {
	if authorizer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !open[r.URL.Path] {
			p, _ := Principal(r)
			if !authorizer.Allowed(p, Host(r), op, acl.Cluster()) {
				http.Error(w, fmt.Sprintf("strand: %s may not %s the cluster", p, op), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
