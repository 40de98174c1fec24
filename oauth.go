package strand

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/strandmq/strand/internal/sasl"
)

// OAuthBearerConfig turns on SASL OAUTHBEARER on the Kafka listener
// (KIP-255), with tokens validated as Kafka's broker validates them
// (KIP-768): a JWT signed by a key of the identity provider's JWKS (RS256,
// RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512; never "none" or
// an HMAC algorithm), with exp required and checked with nbf and iat
// against the clock skew, iss and aud when configured. A client is then
// User:<the principal claim>, authorized by the ACLs like any SASL user,
// and its connection is closed when its token expires.
type OAuthBearerConfig struct {
	// JWKSURL is where the identity provider serves its JWKS, http(s)
	// (sasl.oauthbearer.jwks.endpoint.url). It is fetched at start (Start
	// fails if it cannot be), every JWKSRefresh, and again when a token
	// names a key it does not hold (at most once per 10 s).
	JWKSURL string
	// JWKSFile is a JWKS in a file instead, read again when it changes.
	JWKSFile string
	// HTTPClient fetches JWKSURL (e.g. one trusting a private CA); nil: a
	// client with a 10 s timeout and the system's roots.
	HTTPClient *http.Client
	// JWKSRefresh is how often JWKSURL is fetched; zero: an hour
	// (sasl.oauthbearer.jwks.endpoint.refresh.ms).
	JWKSRefresh time.Duration
	// Issuer, if set, must be the token's "iss"
	// (sasl.oauthbearer.expected.issuer).
	Issuer string
	// Audience, if set, must share a value with the token's "aud"
	// (sasl.oauthbearer.expected.audience).
	Audience []string
	// PrincipalClaim names the claim the principal comes from; empty:
	// "sub" (sasl.oauthbearer.sub.claim.name).
	PrincipalClaim string
	// ClockSkew is the leeway on exp, nbf and iat; zero: 30 s; negative:
	// none (sasl.oauthbearer.clock.skew.seconds).
	ClockSkew time.Duration
	// AllowUnsecured accepts unsigned tokens (alg "none") instead of
	// signed ones, as Kafka's default unsecured validator does: anyone
	// may then claim to be anyone. For development only; exclusive with
	// JWKSURL and JWKSFile.
	AllowUnsecured bool
}

// DefaultJWKSRefresh is how often a JWKS URL is fetched again (Kafka's
// sasl.oauthbearer.jwks.endpoint.refresh.ms, an hour).
const DefaultJWKSRefresh = time.Hour

// validator builds the listener's OAUTHBEARER validator; nil for a nil
// config. The kafka server closes it.
func (c *OAuthBearerConfig) validator(ctx context.Context, logger *slog.Logger) (*sasl.OAuthValidator, error) {
	if c == nil {
		return nil, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	keys, err := c.keys(ctx, logger)
	if err != nil {
		return nil, err
	}
	v, err := sasl.NewOAuthValidator(sasl.OAuthConfig{Keys: keys, AllowUnsecured: c.AllowUnsecured, Issuer: c.Issuer,
		Audience: c.Audience, PrincipalClaim: c.PrincipalClaim, ClockSkew: c.ClockSkew})
	if err != nil {
		if keys != nil {
			keys.Close()
		}
		return nil, fmt.Errorf("strand: %w", err)
	}
	if c.AllowUnsecured {
		logger.Warn("strand: SASL OAUTHBEARER accepts unsecured tokens (alg none): any client can claim any principal; for development only")
	} else {
		logger.Info("strand: SASL OAUTHBEARER on", "jwks", cmp.Or(c.JWKSURL, c.JWKSFile), "issuer", c.Issuer, "audience", c.Audience,
			"principal_claim", cmp.Or(c.PrincipalClaim, sasl.DefaultPrincipalClaim))
	}
	return v, nil
}

// keys opens the JWKS source the config names; nil in unsecured mode.
func (c *OAuthBearerConfig) keys(ctx context.Context, logger *slog.Logger) (sasl.KeySource, error) {
	sources := 0
	for _, set := range []bool{c.JWKSURL != "", c.JWKSFile != "", c.AllowUnsecured} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		return nil, errors.New("strand: OAUTHBEARER needs a JWKS URL or file (or unsecured tokens allowed, for development)")
	case sources > 1:
		return nil, errors.New("strand: OAUTHBEARER takes one of a JWKS URL, a JWKS file and unsecured tokens")
	case c.AllowUnsecured:
		return nil, nil
	case c.JWKSFile != "":
		k, err := sasl.NewFileKeys(c.JWKSFile, logger)
		if err != nil {
			return nil, fmt.Errorf("strand: OAUTHBEARER: %w", err)
		}
		return k, nil
	}
	u, err := url.Parse(c.JWKSURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("strand: OAUTHBEARER: JWKS URL %q is not an http(s) URL", c.JWKSURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		logger.Warn("strand: the OAUTHBEARER JWKS is fetched over plain HTTP from another host: whoever can tamper with that traffic can sign tokens the broker accepts; use https", "url", c.JWKSURL)
	}
	refresh := c.JWKSRefresh
	switch {
	case refresh == 0:
		refresh = DefaultJWKSRefresh
	case refresh < 0:
		return nil, errors.New("strand: OAUTHBEARER: the JWKS refresh interval is negative")
	}
	k, err := sasl.NewURLKeys(ctx, c.JWKSURL, refresh, c.HTTPClient, logger)
	if err != nil {
		return nil, fmt.Errorf("strand: OAUTHBEARER: %w", err)
	}
	return k, nil
}

// isLoopback reports whether host names this machine: "localhost" or a
// loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
