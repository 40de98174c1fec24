package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/sasl"
	"github.com/strandmq/strand/internal/testcert"
)

// idp is a test identity provider: it serves a JWKS over HTTP that the
// test can rotate, and signs tokens.
type idp struct {
	srv  *httptest.Server
	jwks atomic.Pointer[[]byte]
}

func newIDP(t *testing.T, keys ...*testcert.JWTKey) *idp {
	t.Helper()
	p := &idp{}
	p.serve(keys...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*p.jwks.Load())
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *idp) serve(keys ...*testcert.JWTKey) {
	set := testcert.JWKS(keys...)
	p.jwks.Store(&set)
}

func mustKey(t *testing.T, f func(string) (*testcert.JWTKey, error), kid string) *testcert.JWTKey {
	t.Helper()
	k, err := f(kid)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func tokenClaims(sub string, exp time.Time, over map[string]any) map[string]any {
	c := map[string]any{"sub": sub, "iss": "https://idp.test", "aud": "strand", "iat": time.Now().Unix() - 5, "exp": exp.Unix()}
	for k, v := range over {
		c[k] = v
	}
	return c
}

// oauthValidator is the validator a broker flag set would build, over
// the identity provider's JWKS URL.
func oauthValidator(t *testing.T, url string, skew time.Duration) *sasl.OAuthValidator {
	t.Helper()
	keys, err := sasl.NewURLKeys(t.Context(), url, time.Hour, nil, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	v, err := sasl.NewOAuthValidator(sasl.OAuthConfig{Keys: keys, Issuer: "https://idp.test", Audience: []string{"strand"}, ClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func oauthClient(t *testing.T, addr, token string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.SASL(oauth.Auth{Token: token}.AsMechanism())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestOAuthBearerFranzGo: franz-go's OAUTHBEARER client against a broker
// that offers only OAUTHBEARER, with the JWKS served by the test: a valid
// token produces and consumes as User:<sub> under the ACLs; expired,
// wrong-audience, wrong-signature and unknown-key tokens get
// SASL_AUTHENTICATION_FAILED with only invalid_token, the reason in the
// broker's log; a key rotated into the JWKS is honoured without a restart.
func TestOAuthBearerFranzGo(t *testing.T) {
	t.Parallel()
	key := mustKey(t, testcert.NewRSAJWTKey, "k1")
	ecKey := mustKey(t, testcert.NewECJWTKey, "k-ec")
	forger := mustKey(t, testcert.NewRSAJWTKey, "k1")
	next := mustKey(t, testcert.NewRSAJWTKey, "k2")
	p := newIDP(t, key, ecKey)
	var logs lockedBuffer
	authz := acl.New(acl.Config{SuperUsers: []acl.Principal{"User:admin"}})
	ts := startServer(t, broker.Config{}, Config{OAuthBearer: oauthValidator(t, p.srv.URL, 0), Authorizer: authz,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	createTopic(t, ts.b, "events", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hour := time.Now().Add(time.Hour)

	adm := kadm.NewClient(oauthClient(t, ts.addr, ecKey.Sign(tokenClaims("admin", hour, nil))))
	grant := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("events").Groups("readers").
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, grant); err != nil || res[0].Err != nil {
		t.Fatalf("admin (ES256 token) grants alice: %v %v", err, res)
	}

	alice := oauthClient(t, ts.addr, key.Sign(tokenClaims("alice", hour, nil)), kgo.DefaultProduceTopic("events"))
	if err := alice.ProduceSync(ctx, &kgo.Record{Value: []byte("from alice")}).FirstErr(); err != nil {
		t.Fatalf("alice produces: %v", err)
	}
	reader := oauthClient(t, ts.addr, key.Sign(tokenClaims("alice", hour, nil)), kgo.ConsumeTopics("events"),
		kgo.ConsumerGroup("readers"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := reader.PollFetches(ctx)
	if errs := fetches.Errors(); len(errs) > 0 || fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "from alice" {
		t.Fatalf("alice consumes: %v, %d records", errs, fetches.NumRecords())
	}
	bob := oauthClient(t, ts.addr, key.Sign(tokenClaims("bob", hour, nil)), kgo.DefaultProduceTopic("events"))
	if err := bob.ProduceSync(ctx, &kgo.Record{Value: []byte("from bob")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob, authenticated but without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	p.serve(key, ecKey, next) // the identity provider rotates a key in
	rotated := oauthClient(t, ts.addr, next.Sign(tokenClaims("alice", hour, nil)), kgo.DefaultProduceTopic("events"))
	if err := rotated.ProduceSync(ctx, &kgo.Record{Value: []byte("rotated")}).FirstErr(); err != nil {
		t.Errorf("a token signed with a key rotated into the JWKS: %v", err)
	}

	for _, tc := range []struct {
		name, token, reason string
	}{
		{"expired", key.Sign(tokenClaims("alice", time.Now().Add(-time.Minute), nil)), "check=exp"},
		{"wrong audience", key.Sign(tokenClaims("alice", hour, map[string]any{"aud": "someone-else"})), "check=aud"},
		{"wrong signature", forger.Sign(tokenClaims("alice", hour, nil)), "check=signature"},
		{"unknown key", mustKey(t, testcert.NewECJWTKey, "k-unknown").Sign(tokenClaims("alice", hour, nil)), "check=kid"},
	} {
		// A direct request: a producer would retry until its deadline.
		_, err := oauthClient(t, ts.addr, tc.token).Request(ctx, kmsg.NewPtrMetadataRequest())
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "invalid_token") {
			t.Errorf("%s: %v, want SASL_AUTHENTICATION_FAILED with invalid_token", tc.name, err)
		}
		if strings.Contains(err.Error(), strings.TrimPrefix(tc.reason, "check=")) {
			t.Errorf("%s: the client was told why: %v", tc.name, err)
		}
		if !strings.Contains(logs.String(), tc.reason) {
			t.Errorf("%s: the broker log has no %q:\n%s", tc.name, tc.reason, logs.String())
		}
	}

	part, _ := ts.b.Partition("events", 0)
	if hw := part.HighWatermark(); hw != 2 {
		t.Errorf("%d records in the log, want alice's 2", hw)
	}
}

// TestOAuthBearerBesidePlain: with users as well, SaslHandshake offers
// PLAIN, SCRAM and OAUTHBEARER, and both kinds of client authenticate;
// on the raw protocol a refused token is answered with the JSON status,
// the client's ^A with SASL_AUTHENTICATION_FAILED, and the connection
// closes.
func TestOAuthBearerBesidePlain(t *testing.T) {
	t.Parallel()
	key := mustKey(t, testcert.NewECJWTKey, "k1")
	p := newIDP(t, key)
	users, err := sasl.New(map[string]string{"app": "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, broker.Config{}, Config{SASL: users, OAuthBearer: oauthValidator(t, p.srv.URL, 0)})
	createTopic(t, ts.b, "mixed", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, cl := range map[string]*kgo.Client{
		"oauth": oauthClient(t, ts.addr, key.Sign(tokenClaims("svc", time.Now().Add(time.Hour), nil)), kgo.DefaultProduceTopic("mixed")),
		"plain": func() *kgo.Client {
			cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("mixed"), kgo.SASL(plain.Auth{User: "app", Pass: "s3cret"}.AsMechanism()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cl.Close)
			return cl
		}(),
	} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(name)}).FirstErr(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	c := dial(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	h := c.do(hs, 1).(*kmsg.SASLHandshakeResponse)
	wantCode(t, "handshake", h.ErrorCode, nil)
	if got := strings.Join(h.SupportedMechanisms, ","); got != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
		t.Errorf("mechanisms %s", got)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + key.Sign(tokenClaims("svc", time.Now().Add(-time.Hour), nil)) + "\x01\x01")
	r := c.do(auth, 1).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: code %d, challenge %q", r.ErrorCode, r.SASLAuthBytes)
	}
	auth.SASLAuthBytes = []byte{1}
	r = c.do(auth, 1).(*kmsg.SASLAuthenticateResponse)
	wantCode(t, "after ^A", r.ErrorCode, kerr.SaslAuthenticationFailed)
	if r.ErrorMessage == nil || *r.ErrorMessage != `{"status":"invalid_token"}` {
		t.Errorf("error message %v", r.ErrorMessage)
	}
	c.expectClosed()
}

// TestOAuthBearerSessionEnds: a connection authenticated with a token is
// closed when the token expires (Strand's stand-in for KIP-368
// re-authentication), and SessionLifetimeMillis stays 0 so that a client
// does not try to re-authenticate on it.
func TestOAuthBearerSessionEnds(t *testing.T) {
	t.Parallel()
	key := mustKey(t, testcert.NewECJWTKey, "k1")
	p := newIDP(t, key)
	var logs lockedBuffer
	ts := startServer(t, broker.Config{}, Config{OAuthBearer: oauthValidator(t, p.srv.URL, -1), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := dial(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	wantCode(t, "handshake", c.do(hs, 1).(*kmsg.SASLHandshakeResponse).ErrorCode, nil)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + key.Sign(tokenClaims("svc", time.Now().Add(2*time.Second), nil)) + "\x01\x01")
	r := c.do(auth, 2).(*kmsg.SASLAuthenticateResponse)
	wantCode(t, "authenticate", r.ErrorCode, nil)
	if r.SessionLifetimeMillis != 0 {
		t.Errorf("session lifetime %d ms", r.SessionLifetimeMillis)
	}
	c.do(kmsg.NewPtrMetadataRequest(), 9) // served while the token is valid
	c.expectClosed()
	if !strings.Contains(logs.String(), "SASL token expired") || !strings.Contains(logs.String(), "user=svc") {
		t.Errorf("the close is not logged as the token's expiry:\n%s", logs.String())
	}
}
