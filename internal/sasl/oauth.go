package sasl

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// OAuthBearer is the mechanism name of RFC 7628 (Kafka's KIP-255).
const OAuthBearer = "OAUTHBEARER"

// DefaultClockSkew is how far a token's times may be off the broker's
// clock (Kafka's sasl.oauthbearer.clock.skew.seconds, 30 s).
const DefaultClockSkew = 30 * time.Second

// DefaultPrincipalClaim names the claim a principal comes from (Kafka's
// sasl.oauthbearer.sub.claim.name).
const DefaultPrincipalClaim = "sub"

// invalidToken is what a client whose token is refused is told, as Kafka
// tells it (RFC 7628 §3.2.2): the reason stays in the broker's log, so a
// token cannot be used to probe the broker's configuration.
const invalidToken = `{"status":"invalid_token"}`

// OAuthConfig configures OAUTHBEARER (KIP-255 with KIP-768's validation of
// signed JWTs).
type OAuthConfig struct {
	// Keys verifies token signatures (sasl.oauthbearer.jwks.endpoint.url):
	// a *URLKeys or *FileKeys. Required unless AllowUnsecured.
	Keys KeySource
	// AllowUnsecured accepts only unsigned tokens (alg "none"), as Kafka's
	// default OAuthBearerUnsecuredValidatorCallbackHandler does: anyone
	// can then claim any principal. For development only; exclusive with
	// Keys.
	AllowUnsecured bool
	// Issuer, if set, must equal the "iss" claim
	// (sasl.oauthbearer.expected.issuer).
	Issuer string
	// Audience, if set, must share a value with the "aud" claim, a string
	// or an array (sasl.oauthbearer.expected.audience).
	Audience []string
	// PrincipalClaim names the claim the principal comes from; default
	// "sub" (sasl.oauthbearer.sub.claim.name).
	PrincipalClaim string
	// ClockSkew is the leeway on exp, nbf and iat; zero: 30 s; negative:
	// none (sasl.oauthbearer.clock.skew.seconds).
	ClockSkew time.Duration
	// Now is the clock; nil: time.Now. For tests.
	Now func() time.Time
}

// OAuthValidator validates OAUTHBEARER tokens and starts exchanges. It is
// safe for concurrent use.
type OAuthValidator struct {
	cfg OAuthConfig
}

// NewOAuthValidator checks cfg and fills in its defaults.
func NewOAuthValidator(cfg OAuthConfig) (*OAuthValidator, error) {
	switch {
	case cfg.Keys == nil && !cfg.AllowUnsecured:
		return nil, errors.New("sasl: OAUTHBEARER needs a JWKS (or unsecured tokens allowed)")
	case cfg.Keys != nil && cfg.AllowUnsecured:
		return nil, errors.New("sasl: OAUTHBEARER: unsecured tokens and a JWKS exclude each other")
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = DefaultPrincipalClaim
	}
	switch {
	case cfg.ClockSkew == 0:
		cfg.ClockSkew = DefaultClockSkew
	case cfg.ClockSkew < 0:
		cfg.ClockSkew = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Audience = slices.DeleteFunc(slices.Clone(cfg.Audience), func(a string) bool { return a == "" })
	return &OAuthValidator{cfg: cfg}, nil
}

// Close stops the key source's background work.
func (v *OAuthValidator) Close() {
	if v.cfg.Keys != nil {
		v.cfg.Keys.Close()
	}
}

// Token is a validated token.
type Token struct {
	Principal string
	Expiry    time.Time // the "exp" claim: when the session ends
}

// TokenError is a refused token. Its Check names the check that failed
// (stable, short: for rate-limiting log lines); Reason says why, for the
// broker's log only. It is an ErrAuthFailed.
type TokenError struct {
	Check  string
	Reason error
}

func (e *TokenError) Error() string {
	return "sasl: OAUTHBEARER token refused (" + e.Check + "): " + e.Reason.Error()
}

func (e *TokenError) Unwrap() error { return e.Reason }

// Is makes every TokenError an ErrAuthFailed.
func (e *TokenError) Is(target error) bool { return target == ErrAuthFailed }

func refuse(check string, format string, args ...any) *TokenError {
	return &TokenError{Check: check, Reason: fmt.Errorf(format, args...)}
}

// ClientMessage is the text a client may be shown for a failed exchange:
// Kafka's JSON status for a refused OAUTHBEARER token, which says nothing
// of why, and the error's own text otherwise.
func ClientMessage(err error) string {
	if _, ok := errors.AsType[*TokenError](err); ok {
		return invalidToken
	}
	return err.Error()
}

// Validate checks a compact JWS: its algorithm, its signature with a key
// of the JWKS chosen by kid, exp (required), nbf, iat (required when
// signed, as Kafka's validator requires it), iss and aud when configured,
// and the principal claim. A refusal is a *TokenError.
func (v *OAuthValidator) Validate(token string) (Token, error) {
	t, err := parseJWS(token)
	if err != nil {
		return Token{}, refuse("format", "%w", err)
	}
	if err := v.checkSignature(t); err != nil {
		return Token{}, err
	}
	return v.checkClaims(t)
}

func (v *OAuthValidator) checkSignature(t *jws) error {
	switch {
	case t.alg == "none":
		if !v.cfg.AllowUnsecured {
			return refuse("alg", `unsigned token (alg "none"); unsecured tokens are not allowed`)
		}
		if len(t.signature) != 0 {
			return refuse("alg", `alg "none" with a signature`)
		}
		return nil
	case v.cfg.AllowUnsecured:
		// Kafka's unsecured validator takes only unsigned tokens; one it
		// cannot verify is not accepted as if it were verified.
		return refuse("alg", "signed token (alg %q) while only unsecured tokens are configured", t.alg)
	case strings.HasPrefix(t.alg, "HS"):
		return refuse("alg", "HMAC algorithm %q with a public key set; never accepted", t.alg)
	}
	if _, ok := algorithms[t.alg]; !ok {
		return refuse("alg", "unsupported algorithm %q", t.alg)
	}
	keys, err := v.cfg.Keys.keys(t.kid, t.alg)
	if err != nil {
		return refuse("kid", "%w", err)
	}
	switch {
	case len(keys) == 0:
		return refuse("kid", "no key in the JWKS for kid %q and alg %s", truncate(t.kid, 100), t.alg)
	case len(keys) > 1 && t.kid == "":
		return refuse("kid", "token has no kid and the JWKS has %d keys for %s", len(keys), t.alg)
	}
	var last error
	for _, k := range keys {
		if last = t.verify(k); last == nil {
			return nil
		}
	}
	return refuse("signature", "kid %q: %w", truncate(t.kid, 100), last)
}

func (v *OAuthValidator) checkClaims(t *jws) (Token, error) {
	now, skew := v.cfg.Now(), v.cfg.ClockSkew
	exp, ok, err := numericDate(t.claims, "exp")
	switch {
	case err != nil:
		return Token{}, refuse("exp", "%w", err)
	case !ok:
		return Token{}, refuse("exp", `no "exp" claim`)
	case now.After(exp.Add(skew)):
		return Token{}, refuse("exp", "expired at %s (now %s, skew %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), skew)
	}
	nbf, ok, err := numericDate(t.claims, "nbf")
	switch {
	case err != nil:
		return Token{}, refuse("nbf", "%w", err)
	case ok && now.Add(skew).Before(nbf):
		return Token{}, refuse("nbf", "not valid before %s (now %s, skew %s)", nbf.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), skew)
	}
	iat, ok, err := numericDate(t.claims, "iat")
	switch {
	case err != nil:
		return Token{}, refuse("iat", "%w", err)
	case !ok && !v.cfg.AllowUnsecured:
		return Token{}, refuse("iat", `no "iat" claim`)
	case ok && now.Add(skew).Before(iat):
		return Token{}, refuse("iat", "issued in the future, at %s (now %s, skew %s)", iat.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), skew)
	case ok && exp.Before(iat):
		return Token{}, refuse("exp", "expires (%s) before it was issued (%s)", exp.UTC().Format(time.RFC3339), iat.UTC().Format(time.RFC3339))
	}
	if v.cfg.Issuer != "" {
		iss, _ := stringClaim(t.claims, "iss")
		if iss != v.cfg.Issuer {
			return Token{}, refuse("iss", "issuer %q, want %q", truncate(iss, 200), v.cfg.Issuer)
		}
	}
	if len(v.cfg.Audience) > 0 {
		aud, err := audience(t.claims)
		if err != nil {
			return Token{}, refuse("aud", "%w", err)
		}
		if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.cfg.Audience, a) }) {
			return Token{}, refuse("aud", "audience %q, want one of %q", aud, v.cfg.Audience)
		}
	}
	p, ok := stringClaim(t.claims, v.cfg.PrincipalClaim)
	p = strings.TrimSpace(p)
	if !ok || p == "" {
		return Token{}, refuse("principal", "claim %q is missing, not a string, or blank", v.cfg.PrincipalClaim)
	}
	return Token{Principal: p, Expiry: exp}, nil
}

// numericDate reads a NumericDate claim (RFC 7519 §2: seconds since the
// epoch, possibly fractional).
func numericDate(claims map[string]json.RawMessage, name string) (time.Time, bool, error) {
	raw, ok := claims[name]
	if !ok || string(raw) == "null" {
		return time.Time{}, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
		return time.Time{}, false, fmt.Errorf("claim %q is not a NumericDate: %s", name, truncate(string(raw), 50))
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true, nil
}

func stringClaim(claims map[string]json.RawMessage, name string) (string, bool) {
	var s string
	raw, ok := claims[name]
	if !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// audience reads "aud": a string or an array of strings (RFC 7519 §4.1.3).
func audience(claims map[string]json.RawMessage) ([]string, error) {
	raw, ok := claims["aud"]
	if !ok {
		return nil, errors.New(`no "aud" claim`)
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf(`"aud" is neither a string nor an array of strings`)
	}
	return many, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Start begins an OAUTHBEARER exchange.
func (v *OAuthValidator) Start() Session { return &oauthSession{v: v} }

// oauthSession is the server side of RFC 7628 as Kafka's
// OAuthBearerSaslServer plays it:
//
//	client: n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A...]^A
//	server: ""                                   → authenticated
//	        {"status":"invalid_token"}           → refused, and then
//	client: ^A                                   → SASL_AUTHENTICATION_FAILED
//
// Extensions (the other key=value pairs) are accepted and ignored, as
// Kafka's validator callback handlers accept every extension. Unlike
// Kafka, a refused exchange is over whatever the client sends next: Kafka
// parses anything but ^A as a new first message, which would let a
// client try token after token without the failed-authentication delay.
type oauthSession struct {
	v       *OAuthValidator
	refused *TokenError
	over    bool
	token   Token
	claimed string
}

func (s *oauthSession) Step(msg []byte) ([]byte, bool, error) {
	switch {
	case s.refused != nil:
		s.over = true
		return nil, false, s.refused
	case s.over:
		return nil, false, ErrAuthFailed
	}
	authzid, token, err := parseClientFirst(string(msg))
	if err != nil {
		s.over = true
		return nil, false, refuse("message", "%w", err)
	}
	if t, err := parseJWS(token); err == nil {
		s.claimed, _ = stringClaim(t.claims, s.v.cfg.PrincipalClaim) // for the log; not yet verified
	}
	tok, err := s.v.Validate(token)
	if err != nil {
		s.refused, _ = errors.AsType[*TokenError](err)
		if s.refused == nil {
			s.refused = refuse("token", "%w", err)
		}
		return []byte(invalidToken), false, nil
	}
	if authzid != "" && authzid != tok.Principal {
		s.over = true
		return nil, false, refuse("authzid", "authorization id %q is not the token's principal %q", authzid, tok.Principal)
	}
	s.token, s.over = tok, true
	return []byte{}, true, nil
}

// User is the token's principal, once authenticated.
func (s *oauthSession) User() string { return s.token.Principal }

// Claimed is the principal claim of the token sent, verified or not.
func (s *oauthSession) Claimed() string { return s.claimed }

// Expiry is when the token, and so the session, expires.
func (s *oauthSession) Expiry() time.Time { return s.token.Expiry }

// Expiring is a Session whose authentication lapses: the wire server ends
// the connection at Expiry (zero: never).
type Expiring interface {
	Expiry() time.Time
}

// parseClientFirst reads RFC 7628's initial client response, with the
// grammar Kafka's OAuthBearerClientInitialResponse accepts.
func parseClientFirst(msg string) (authzid, token string, err error) {
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return "", "", errors.New(`first message does not start "n," (no channel binding)`)
	}
	gs2, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", errors.New("first message has no GS2 header")
	}
	if gs2 != "" {
		name, ok := strings.CutPrefix(gs2, "a=")
		if authzid, ok = unescapeNameOK(name, ok); !ok {
			return "", "", errors.New("malformed authorization id")
		}
	}
	if len(rest) < 3 || rest[0] != '\x01' || !strings.HasSuffix(rest, "\x01\x01") {
		return "", "", errors.New(`key/value pairs not framed by ^A, or no "auth" pair`)
	}
	var auth string
	for _, kv := range strings.Split(rest[1:len(rest)-2], "\x01") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || !validKey(k) || !validValue(val) {
			return "", "", errors.New("malformed key/value pair")
		}
		if k == "auth" {
			auth = val
		}
	}
	if auth == "" {
		return "", "", errors.New(`no "auth" pair`)
	}
	scheme, tok, ok := strings.Cut(auth, " ")
	tok = strings.TrimLeft(tok, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || !validToken(tok) {
		return "", "", errors.New(`"auth" is not "Bearer <token>"`)
	}
	return authzid, tok, nil
}

func unescapeNameOK(name string, ok bool) (string, bool) {
	if !ok || name == "" {
		return "", false
	}
	return unescapeName(name)
}

func validKey(k string) bool {
	return k != "" && strings.IndexFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) < 0
}

func validValue(v string) bool {
	return v != "" && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 0x21 && r <= 0x7e || r == ' ' || r == '\t' || r == '\r' || r == '\n')
	}) < 0
}

// validToken is RFC 6750's b64token: [-._~+/A-Za-z0-9]+ then '='*.
func validToken(t string) bool {
	body := strings.TrimRight(t, "=")
	return body != "" && strings.IndexFunc(body, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~+/", r))
	}) < 0
}
