package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/sasl"
)

// oauthOptions are serve's SASL OAUTHBEARER flags (Kafka's
// sasl.oauthbearer.* broker settings).
type oauthOptions struct {
	jwks           string
	issuer         string
	audience       string
	principalClaim string
	clockSkew      time.Duration
	jwksRefresh    time.Duration
	allowUnsecured bool
}

func (o *oauthOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.jwks, "oauth-jwks", "", "offer SASL OAUTHBEARER: tokens must be JWTs signed by a key of this JWKS, an http(s) URL of the identity provider (sasl.oauthbearer.jwks.endpoint.url) or a file (path or file: URL) read again when it changes; without --sasl-users it is the only mechanism")
	f.StringVar(&o.issuer, "oauth-issuer", "", `with --oauth-jwks, the "iss" a token must have (sasl.oauthbearer.expected.issuer)`)
	f.StringVar(&o.audience, "oauth-audience", "", `with --oauth-jwks, audiences separated by ',' of which a token's "aud" must name one (sasl.oauthbearer.expected.audience)`)
	f.StringVar(&o.principalClaim, "oauth-principal-claim", sasl.DefaultPrincipalClaim, "the token claim a client's principal User:<value> comes from (sasl.oauthbearer.sub.claim.name)")
	f.DurationVar(&o.clockSkew, "oauth-clock-skew", sasl.DefaultClockSkew, "leeway on a token's exp, nbf and iat (sasl.oauthbearer.clock.skew.seconds; 0: none)")
	f.DurationVar(&o.jwksRefresh, "oauth-jwks-refresh", strand.DefaultJWKSRefresh, "how often a JWKS URL is fetched again; a token naming an unknown key also fetches it, at most once per 10s (sasl.oauthbearer.jwks.endpoint.refresh.ms)")
	f.BoolVar(&o.allowUnsecured, "oauth-allow-unsecured", false, `offer SASL OAUTHBEARER with unsigned tokens (alg "none"), as Kafka's default unsecured validator: any client can claim any principal; for development only, instead of --oauth-jwks`)
}

// config turns the flags into the broker's OAUTHBEARER settings, nil when
// OAUTHBEARER is off, refusing combinations that would be ignored.
func (o *oauthOptions) config() (*strand.OAuthBearerConfig, error) {
	on := o.jwks != "" || o.allowUnsecured
	tuned := o.issuer != "" || o.audience != "" || o.principalClaim != sasl.DefaultPrincipalClaim ||
		o.clockSkew != sasl.DefaultClockSkew || o.jwksRefresh != strand.DefaultJWKSRefresh
	isURL := strings.HasPrefix(o.jwks, "http://") || strings.HasPrefix(o.jwks, "https://")
	switch {
	case !on && tuned:
		return nil, usageErr("--oauth-issuer, --oauth-audience, --oauth-principal-claim, --oauth-clock-skew and --oauth-jwks-refresh need --oauth-jwks (or --oauth-allow-unsecured)")
	case !on:
		return nil, nil
	case o.jwks != "" && o.allowUnsecured:
		return nil, usageErr("--oauth-jwks and --oauth-allow-unsecured exclude each other: tokens are either verified or not")
	case o.allowUnsecured && (o.issuer != "" || o.audience != ""):
		return nil, usageErr("--oauth-issuer and --oauth-audience need --oauth-jwks: an unsecured token's claims prove nothing")
	case strings.TrimSpace(o.principalClaim) == "":
		return nil, usageErr("--oauth-principal-claim is empty")
	case o.clockSkew < 0:
		return nil, usageErr("--oauth-clock-skew is negative")
	case o.jwksRefresh <= 0:
		return nil, usageErr("--oauth-jwks-refresh must be positive")
	case o.jwksRefresh != strand.DefaultJWKSRefresh && !isURL:
		return nil, usageErr("--oauth-jwks-refresh applies to a JWKS URL; a JWKS file is read again when it changes")
	}
	cfg := &strand.OAuthBearerConfig{Issuer: o.issuer, PrincipalClaim: o.principalClaim, JWKSRefresh: o.jwksRefresh,
		ClockSkew: o.clockSkew, AllowUnsecured: o.allowUnsecured}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = -1 // the flag's 0 is none; the config's zero is the default
	}
	for a := range strings.SplitSeq(o.audience, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Audience = append(cfg.Audience, a)
		}
	}
	switch {
	case isURL:
		cfg.JWKSURL = o.jwks
	case o.jwks != "":
		// Kafka's file: URLs too: file:///etc/jwks.json or file:jwks.json.
		cfg.JWKSFile = strings.TrimPrefix(strings.TrimPrefix(o.jwks, "file://"), "file:")
	}
	return cfg, nil
}
