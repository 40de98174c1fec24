package sasl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/testcert"
)

// The keys are made once: RSA key generation is slow.
var testKeys = sync.OnceValue(func() (k struct{ rsa, ec, other, rotated *testcert.JWTKey }) {
	var err error
	mk := func(f func(string) (*testcert.JWTKey, error), kid string) *testcert.JWTKey {
		key, e := f(kid)
		if e != nil {
			err = e
		}
		return key
	}
	k.rsa = mk(testcert.NewRSAJWTKey, "rsa-1")
	k.ec = mk(testcert.NewECJWTKey, "ec-1")
	k.other = mk(testcert.NewRSAJWTKey, "rsa-1") // same kid, another key: a forgery
	k.rotated = mk(testcert.NewRSAJWTKey, "rsa-2")
	if err != nil {
		panic(err)
	}
	return k
})

var testNow = time.Unix(1_800_000_000, 0)

func claims(over map[string]any) map[string]any {
	c := map[string]any{"sub": "alice", "iss": "https://idp.example", "aud": "strand",
		"iat": testNow.Unix() - 60, "exp": testNow.Unix() + 600}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func writeJWKS(t *testing.T, path string, keys ...*testcert.JWTKey) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, testcert.JWKS(keys...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func fileValidator(t *testing.T, cfg OAuthConfig, keys ...*testcert.JWTKey) *OAuthValidator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, keys...)
	fk, err := NewFileKeys(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Keys, cfg.Now = fk, func() time.Time { return testNow }
	v, err := NewOAuthValidator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hmacForgery signs a token with HS256 keyed by the RSA public key: the
// algorithm-confusion attack on validators that take "alg" at its word.
func hmacForgery(k *testcert.JWTKey, c map[string]any) string {
	signed := testcert.Encode(map[string]any{"alg": "HS256", "kid": k.Kid}) + "." + testcert.Encode(c)
	m := hmac.New(sha256.New, k.RSAModulus())
	m.Write([]byte(signed))
	return signed + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// TestOAuthValidate: each check a token must pass, and the one that
// refuses it when it does not (the Check a log line is keyed by).
func TestOAuthValidate(t *testing.T) {
	t.Parallel()
	k := testKeys()
	v := fileValidator(t, OAuthConfig{Issuer: "https://idp.example", Audience: []string{"strand", "other"}}, k.rsa, k.ec)
	for _, tc := range []struct {
		name  string
		token string
		want  string // the failed check; "" for accepted
		user  string
	}{
		{"valid RS256", k.rsa.Sign(claims(nil)), "", "alice"},
		{"valid ES256", k.ec.Sign(claims(map[string]any{"sub": "bob"})), "", "bob"},
		{"aud as an array", k.rsa.Sign(claims(map[string]any{"aud": []string{"x", "other"}})), "", "alice"},
		{"expired within the skew", k.rsa.Sign(claims(map[string]any{"exp": testNow.Unix() - 20})), "", "alice"},
		{"expired", k.rsa.Sign(claims(map[string]any{"exp": testNow.Unix() - 31})), "exp", ""},
		{"no exp", k.rsa.Sign(claims(map[string]any{"exp": nil})), "exp", ""},
		{"exp not a number", k.rsa.Sign(claims(map[string]any{"exp": "soon"})), "exp", ""},
		{"not yet valid", k.rsa.Sign(claims(map[string]any{"nbf": testNow.Unix() + 31})), "nbf", ""},
		{"nbf within the skew", k.rsa.Sign(claims(map[string]any{"nbf": testNow.Unix() + 29})), "", "alice"},
		{"issued in the future", k.rsa.Sign(claims(map[string]any{"iat": testNow.Unix() + 120})), "iat", ""},
		{"no iat", k.rsa.Sign(claims(map[string]any{"iat": nil})), "iat", ""},
		{"wrong audience", k.rsa.Sign(claims(map[string]any{"aud": "someone-else"})), "aud", ""},
		{"no audience", k.rsa.Sign(claims(map[string]any{"aud": nil})), "aud", ""},
		{"wrong issuer", k.rsa.Sign(claims(map[string]any{"iss": "https://evil.example"})), "iss", ""},
		{"no principal", k.rsa.Sign(claims(map[string]any{"sub": " "})), "principal", ""},
		{"wrong signature", k.other.Sign(claims(nil)), "signature", ""},
		{"tampered claims", tamper(k.rsa.Sign(claims(nil))), "signature", ""},
		{"unknown kid", k.rotated.Sign(claims(nil)), "kid", ""},
		{"alg none refused", testcert.Unsecured(claims(nil)), "alg", ""},
		{"HMAC with the public key refused", hmacForgery(k.rsa, claims(nil)), "alg", ""},
		{"EC key for an RS256 header", k.ec.SignHeader(map[string]any{"alg": "RS256", "kid": "ec-1"}, claims(nil)), "kid", ""},
		{"not a JWS", "abc.def", "format", ""},
		{"critical header", k.rsa.SignHeader(map[string]any{"alg": "RS256", "kid": "rsa-1", "crit": []string{"b64"}}, claims(nil)), "format", ""},
	} {
		tok, err := v.Validate(tc.token)
		if tc.want == "" {
			if err != nil || tok.Principal != tc.user {
				t.Errorf("%s: principal %q, %v; want %q accepted", tc.name, tok.Principal, err, tc.user)
			}
			continue
		}
		te, ok := errors.AsType[*TokenError](err)
		if !ok || te.Check != tc.want || !errors.Is(err, ErrAuthFailed) {
			t.Errorf("%s: %v; want refused by check %q", tc.name, err, tc.want)
		}
	}
	tok, err := v.Validate(k.rsa.Sign(claims(nil)))
	if err != nil || !tok.Expiry.Equal(testNow.Add(600*time.Second)) {
		t.Errorf("expiry %v, %v; want the exp claim", tok.Expiry, err)
	}
}

func tamper(token string) string {
	parts := strings.Split(token, ".")
	parts[1] = testcert.Encode(claims(map[string]any{"sub": "admin"}))
	return strings.Join(parts, ".")
}

// TestOAuthOptions: another principal claim, no skew, and unsecured mode
// (alg "none" accepted, signed tokens refused since they cannot be checked).
func TestOAuthOptions(t *testing.T) {
	t.Parallel()
	k := testKeys()
	v := fileValidator(t, OAuthConfig{PrincipalClaim: "azp", ClockSkew: -1}, k.rsa)
	if tok, err := v.Validate(k.rsa.Sign(claims(map[string]any{"azp": "svc-1"}))); err != nil || tok.Principal != "svc-1" {
		t.Errorf("azp principal: %q, %v", tok.Principal, err)
	}
	if _, err := v.Validate(k.rsa.Sign(claims(map[string]any{"azp": "svc-1", "exp": testNow.Unix() - 1}))); err == nil {
		t.Error("expired a second ago with no skew: accepted")
	}
	u, err := NewOAuthValidator(OAuthConfig{AllowUnsecured: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := u.Validate(testcert.Unsecured(claims(map[string]any{"iat": nil}))); err != nil || tok.Principal != "alice" {
		t.Errorf("unsecured token: %q, %v", tok.Principal, err)
	}
	if _, err := u.Validate(k.rsa.Sign(claims(nil))); err == nil {
		t.Error("unsecured mode accepted a signed token it cannot verify")
	}
	if _, err := u.Validate(testcert.Unsecured(claims(map[string]any{"exp": testNow.Unix() - 60}))); err == nil {
		t.Error("unsecured mode accepted an expired token")
	}
	if _, err := NewOAuthValidator(OAuthConfig{}); err == nil {
		t.Error("no JWKS and no unsecured mode: accepted")
	}
}

// TestOAuthFileRotation: a key rotated into the JWKS file is honoured
// without a restart, and a key removed from it is no longer.
func TestOAuthFileRotation(t *testing.T) {
	t.Parallel()
	k := testKeys()
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, k.rsa)
	fk, err := NewFileKeys(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewOAuthValidator(OAuthConfig{Keys: fk, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(k.rotated.Sign(claims(nil))); err == nil {
		t.Fatal("a key not yet in the file verified")
	}
	writeJWKS(t, path, k.rotated)
	if _, err := v.Validate(k.rotated.Sign(claims(nil))); err != nil {
		t.Errorf("rotated-in key: %v", err)
	}
	if _, err := v.Validate(k.rsa.Sign(claims(nil))); err == nil {
		t.Error("rotated-out key still verifies")
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(k.rotated.Sign(claims(nil))); err != nil {
		t.Errorf("a broken rewrite dropped the keys read before: %v", err)
	}
}

// TestOAuthURLKeys: the JWKS is fetched at start; a token naming an
// unknown kid fetches it again at once (a rotation is honoured), but
// tokens with unknown kids fetch at most once per 10 s after that.
func TestOAuthURLKeys(t *testing.T) {
	t.Parallel()
	k := testKeys()
	var served atomic.Pointer[[]byte]
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(*served.Load())
	}))
	defer srv.Close()
	set := testcert.JWKS(k.rsa)
	served.Store(&set)
	uk, err := NewURLKeys(t.Context(), srv.URL, time.Hour, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer uk.Close()
	clock := testNow
	uk.now = func() time.Time { return clock }
	v, err := NewOAuthValidator(OAuthConfig{Keys: uk, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Validate(k.rsa.Sign(claims(nil))); err != nil || fetches.Load() != 1 {
		t.Fatalf("known key: %v after %d fetches", err, fetches.Load())
	}
	rotated := testcert.JWKS(k.rsa, k.rotated)
	served.Store(&rotated)
	if _, err := v.Validate(k.rotated.Sign(claims(nil))); err != nil || fetches.Load() != 2 {
		t.Fatalf("rotated key: %v after %d fetches, want 2", err, fetches.Load())
	}
	for range 5 {
		if _, err := v.Validate(k.ec.Sign(claims(nil))); err == nil {
			t.Fatal("an unknown EC key verified")
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d fetches after 5 more unknown-kid tokens within 10 s, want still 2", n)
	}
	clock = clock.Add(unknownKidRefetch)
	if _, err := v.Validate(k.ec.Sign(claims(nil))); err == nil || fetches.Load() != 3 {
		t.Errorf("10 s later: %v after %d fetches, want 3", err, fetches.Load())
	}
	if _, err := NewURLKeys(t.Context(), srv.URL+"/missing\x00", time.Hour, nil, nil); err == nil {
		t.Error("a bad URL: accepted")
	}
}

// TestOAuthExchange: RFC 7628 as Kafka plays it — a valid first message
// authenticates; a refused token is answered with the JSON status, the
// client's ^A then fails the exchange, and the client is shown only
// invalid_token; a malformed message or an authzid other than the
// principal fails at once.
func TestOAuthExchange(t *testing.T) {
	t.Parallel()
	k := testKeys()
	v := fileValidator(t, OAuthConfig{}, k.rsa)
	first := func(authz, tok string) []byte {
		return []byte("n," + authz + ",\x01auth=Bearer " + tok + "\x01traceId=42\x01\x01")
	}
	s := v.Start()
	reply, done, err := s.Step(first("", k.rsa.Sign(claims(nil))))
	if err != nil || !done || len(reply) != 0 || s.User() != "alice" {
		t.Fatalf("valid: %q %v %v user %q", reply, done, err, s.User())
	}
	if exp := s.(Expiring).Expiry(); !exp.Equal(testNow.Add(600 * time.Second)) {
		t.Errorf("session expiry %v", exp)
	}
	s = v.Start()
	if _, done, err := s.Step(first("a=alice", k.rsa.Sign(claims(nil)))); err != nil || !done {
		t.Errorf("authzid = principal: %v", err)
	}

	s = v.Start()
	reply, done, err = s.Step(first("", k.rsa.Sign(claims(map[string]any{"exp": testNow.Unix() - 3600}))))
	if err != nil || done || string(reply) != `{"status":"invalid_token"}` {
		t.Fatalf("expired: %q %v %v", reply, done, err)
	}
	_, done, err = s.Step([]byte{1})
	if done || !errors.Is(err, ErrAuthFailed) || ClientMessage(err) != `{"status":"invalid_token"}` || s.User() != "" {
		t.Errorf("after ^A: %v %v, client told %q", done, err, ClientMessage(err))
	}
	if te, _ := errors.AsType[*TokenError](err); te == nil || te.Check != "exp" || !strings.Contains(err.Error(), "expired") {
		t.Errorf("the logged reason: %v", err)
	}
	if s.Claimed() != "alice" {
		t.Errorf("claimed %q", s.Claimed())
	}

	for _, msg := range []string{
		"",
		"y,,\x01auth=Bearer abc\x01\x01",
		"n,,auth=Bearer abc\x01\x01",
		"n,,\x01auth=Basic abc\x01\x01",
		"n,,\x01\x01",
		"n,,\x01auth=Bearer a b\x01\x01",
		"n,,\x01bad key=1\x01auth=Bearer abc\x01\x01",
		string(first("a=mallory", k.rsa.Sign(claims(nil)))),
	} {
		s := v.Start()
		if _, done, err := s.Step([]byte(msg)); done || !errors.Is(err, ErrAuthFailed) {
			t.Errorf("%q: %v %v, want a failure", msg, done, err)
		}
	}
}

// FuzzOAuthMessages: no first message or token, however malformed, panics
// the exchange or authenticates without a valid signature.
func FuzzOAuthMessages(f *testing.F) {
	// An EC key only: RSA key generation would slow every fuzz worker's start.
	ec, err := testcert.NewECJWTKey("ec-1")
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "jwks.json")
	if err := os.WriteFile(path, testcert.JWKS(ec), 0o600); err != nil {
		f.Fatal(err)
	}
	fk, err := NewFileKeys(path, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	v, err := NewOAuthValidator(OAuthConfig{Keys: fk, Now: func() time.Time { return testNow }})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("n,,\x01auth=Bearer " + ec.Sign(claims(map[string]any{"sub": "x"})) + "\x01\x01"))
	f.Add([]byte("n,a=x,\x01auth=Bearer " + ec.Sign(claims(nil)) + "\x01k=v\x01\x01"))
	f.Add([]byte("n,,\x01auth=Bearer " + testcert.Unsecured(claims(nil)) + "\x01\x01"))
	f.Add([]byte("n,,\x01\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := v.Start()
		_, done, err := s.Step(msg)
		if done && err == nil && !strings.Contains(string(msg), ".") {
			t.Fatalf("authenticated without a JWS: %q", msg)
		}
		_, _, _ = s.Step([]byte{1})
	})
}
