package strand_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/testcert"
)

// TestStartOAuthBearer: the embed API's OAuthBearerConfig — a broker
// trusting a JWKS URL takes a franz-go client with a signed token, and
// its JWKS refresh stops with Close (goleak, TestMain); configurations
// that cannot work stop Start.
func TestStartOAuthBearer(t *testing.T) {
	key, err := testcert.NewECJWTKey("k1")
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(testcert.JWKS(key)) }))
	defer idp.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Logger: quiet,
		OAuthBearer: &strand.OAuthBearerConfig{JWKSURL: idp.URL, Audience: []string{"strand"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("embedded", 1, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok := key.Sign(map[string]any{"sub": "app", "aud": "strand", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("embedded"), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Errorf("produce with a signed token: %v", err)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	for name, cfg := range map[string]*strand.OAuthBearerConfig{
		"no key source":        {},
		"not an http URL":      {JWKSURL: "ftp://idp/jwks"},
		"JWKS and unsecured":   {JWKSURL: idp.URL, AllowUnsecured: true},
		"URL and file":         {JWKSURL: idp.URL, JWKSFile: "jwks.json"},
		"JWKS without a key":   {JWKSURL: idp.URL + "/", HTTPClient: &http.Client{Transport: emptyJWKS{}}},
		"negative refresh":     {JWKSURL: idp.URL, JWKSRefresh: -time.Second},
		"unreachable identity": {JWKSURL: "http://127.0.0.1:1/jwks"},
		"missing file":         {JWKSFile: t.TempDir() + "/none.json"},
	} {
		if b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Logger: quiet, OAuthBearer: cfg}); err == nil {
			_ = b.Close()
			t.Errorf("%s: started", name)
		}
	}
}

// emptyJWKS answers every request with a JWKS of no keys.
type emptyJWKS struct{}

func (emptyJWKS) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: io.NopCloser(strings.NewReader(`{"keys":[]}`)), Header: http.Header{}}, nil
}
