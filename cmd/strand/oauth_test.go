package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/strandmq/strand/internal/testcert"
)

// tokenIDP is a test identity provider for librdkafka's OIDC login: its
// JWKS at /jwks and a client-credentials token endpoint at /token that
// issues a JWT for client "kcat" with secret "s3cret". audience is the
// "aud" of the tokens it issues next.
type tokenIDP struct {
	*httptest.Server
	key      *testcert.JWTKey
	audience atomic.Pointer[string]
	issued   atomic.Int32
}

func newTokenIDP(t *testing.T) *tokenIDP {
	t.Helper()
	key, err := testcert.NewRSAJWTKey("kcat-key")
	if err != nil {
		t.Fatal(err)
	}
	p := &tokenIDP{key: key}
	aud := "strand"
	p.audience.Store(&aud)
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(testcert.JWKS(key)) })
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "kcat" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		p.issued.Add(1)
		now := time.Now()
		tok := key.Sign(map[string]any{"sub": "kcat-svc", "iss": "https://idp.test", "aud": *p.audience.Load(),
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// kcat runs kcat with args and stdin, bounded, returning its output and
// whether it succeeded.
func kcat(t *testing.T, stdin string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err == nil
}

// TestKcatOAuthBearer: `strand serve --oauth-jwks URL` and kcat
// (librdkafka's OIDC login against the test's client-credentials token
// endpoint): kcat produces and consumes as the token's subject; a token
// for another audience is refused and the broker logs why.
func TestKcatOAuthBearer(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed")
	}
	t.Parallel()
	p := newTokenIDP(t)
	srv := startServe(t, "--data-dir", t.TempDir(), "--oauth-jwks", p.URL+"/jwks",
		"--oauth-issuer", "https://idp.test", "--oauth-audience", "strand,other")
	if srv.addr == "" {
		t.Fatalf("strand serve exited:\n%s", srv.logs.String())
	}
	oidc := []string{"-b", srv.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
		"-X", "sasl.oauthbearer.method=oidc", "-X", "sasl.oauthbearer.client.id=kcat", "-X", "sasl.oauthbearer.client.secret=s3cret",
		"-X", "sasl.oauthbearer.token.endpoint.url=" + p.URL + "/token"}
	if out, ok := kcat(t, "one\ntwo\n", append(oidc, "-P", "-t", "oauth-events")...); !ok {
		if strings.Contains(out, "not supported in this build") {
			// Debian's librdkafka 2.0 is built without libcurl: no OIDC
			// login. TestKcatOAuthBearerUnsecured still drives kcat.
			t.Skipf("this kcat's librdkafka has no OIDC login: %s", strings.TrimSpace(out))
		}
		t.Fatalf("kcat produce: %s\n%s", out, srv.logs.String())
	}
	out, ok := kcat(t, "", append(oidc, "-C", "-t", "oauth-events", "-o", "beginning", "-e", "-c", "2", "-f", "%s\n")...)
	if !ok || out != "one\ntwo\n" {
		t.Fatalf("kcat consume: %q\n%s", out, srv.logs.String())
	}
	if p.issued.Load() == 0 {
		t.Error("kcat never asked the token endpoint")
	}
	wrong := "someone-else"
	p.audience.Store(&wrong)
	if out, ok := kcat(t, "", append(oidc, "-L", "-m", "5")...); ok {
		t.Errorf("kcat with a token for another audience listed metadata:\n%s", out)
	}
	if !srv.contains("check=aud") {
		t.Errorf("the broker did not log the refused audience:\n%s", srv.logs.String())
	}
}

// TestKcatOAuthBearerUnsecured: with --oauth-allow-unsecured (warned
// about at start) librdkafka's built-in unsecured JWT authenticates as
// the principal it names: User:dev, the only principal the ACLs let in.
func TestKcatOAuthBearerUnsecured(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Skip("kcat is not installed")
	}
	t.Parallel()
	srv := startServe(t, "--data-dir", t.TempDir(), "--oauth-allow-unsecured", "--authorizer", "--super-users", "User:dev")
	if srv.addr == "" {
		t.Fatalf("strand serve exited:\n%s", srv.logs.String())
	}
	if !srv.contains("level=WARN") || !srv.contains("unsecured tokens") {
		t.Errorf("no warning about unsecured tokens at start:\n%s", srv.logs.String())
	}
	args := []string{"-b", srv.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
		"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=dev"}
	if out, ok := kcat(t, "hello\n", append(args, "-P", "-t", "dev-events")...); !ok {
		t.Fatalf("kcat produce: %s\n%s", out, srv.logs.String())
	}
	if out, ok := kcat(t, "", append(args, "-C", "-t", "dev-events", "-o", "beginning", "-e", "-c", "1", "-f", "%s\n")...); !ok || out != "hello\n" {
		t.Fatalf("kcat consume: %q\n%s", out, srv.logs.String())
	}
	other := []string{"-b", srv.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
		"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=intruder",
		"-X", "message.timeout.ms=3000"}
	if out, ok := kcat(t, "denied\n", append(other, "-P", "-t", "dev-events")...); ok {
		t.Errorf("User:intruder, with no ACL, produced:\n%s", out)
	}
}

// TestServeRefusesOAuthMisconfiguration: settings that would be ignored
// or contradict each other stop strand serve with a message naming the
// flags.
func TestServeRefusesOAuthMisconfiguration(t *testing.T) {
	t.Parallel()
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	key, err := testcert.NewECJWTKey("k")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jwks, testcert.JWKS(key), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--oauth-issuer", "https://idp"}, "need --oauth-jwks"},
		{[]string{"--oauth-jwks", jwks, "--oauth-allow-unsecured"}, "exclude each other"},
		{[]string{"--oauth-allow-unsecured", "--oauth-audience", "strand"}, "need --oauth-jwks"},
		{[]string{"--oauth-jwks", "file://" + jwks, "--oauth-jwks-refresh", "5m"}, "applies to a JWKS URL"},
		{[]string{"--oauth-jwks", jwks, "--oauth-clock-skew", "-1s"}, "negative"},
		{[]string{"--oauth-jwks", "https://", "--oauth-principal-claim", " "}, "--oauth-principal-claim is empty"},
		{[]string{"--oauth-jwks", filepath.Join(t.TempDir(), "missing.json")}, "JWKS file"},
		{[]string{"--oauth-jwks", "http://127.0.0.1:1/jwks"}, "JWKS fetch"},
	} {
		cmd := newRootCmd()
		cmd.SetArgs(append([]string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--metrics-listen", "",
			"--console-listen", "", "--schema-registry-listen", ""}, tc.args...))
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetOut(&bytes.Buffer{})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestServeOAuthJWKSFile: `strand serve --oauth-jwks file:///…` (Kafka's
// file URL form) serves OAUTHBEARER alone, and a franz-go client with a
// token signed by the file's key is User:<sub>, the only super user.
func TestServeOAuthJWKSFile(t *testing.T) {
	t.Parallel()
	key, err := testcert.NewECJWTKey("file-key")
	if err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, testcert.JWKS(key), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--data-dir", t.TempDir(), "--oauth-jwks", "file://"+jwks, "--authorizer", "--super-users", "User:ops")
	if srv.addr == "" || !srv.contains("SASL OAUTHBEARER on") {
		t.Fatalf("strand serve:\n%s", srv.logs.String())
	}
	now := time.Now()
	tok := key.Sign(map[string]any{"sub": "ops", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.addr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "ops-topic"); err != nil {
		t.Errorf("User:ops creates a topic: %v", err)
	}
}
