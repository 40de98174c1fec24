package strand

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strandmq/strand/internal/testcert"
)

// loopbackURL turns a listener bound to every interface (0.0.0.0:port or
// [::]:port) into a URL on 127.0.0.1: the listener is not loopback, the
// test's client is.
func loopbackURL(t *testing.T, scheme, addr, path string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return scheme + "://127.0.0.1:" + port + path
}

type httpProbe struct {
	t      *testing.T
	client *http.Client
}

// get requests url as user:pass (none when user is "") and returns the
// status and body.
func (h httpProbe) get(url, user, pass string) (int, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHTTPListenersTLSAndAuth: the console, metrics and schema registry
// bound beyond loopback serve HTTPS and require authentication: 401
// without credentials or with a wrong password, 200 with a fixed SASL user
// or a run-time SCRAM user created over the Kafka API (its password
// checked against the stored salted credential), or with a client
// certificate mapped to its principal; plain HTTP to the port gets no
// page. With the authorizer on, the console lists only the topics and
// groups the principal may describe and answers 404 for the others, and
// /metrics needs Cluster:Describe.
func TestHTTPListenersTLSAndAuth(t *testing.T) {
	t.Parallel()
	certs := testcert.MustSet(t, "carol")
	b, err := Start(context.Background(), Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		SASLUsers:  map[string]string{"admin": "adminpw", "alice": "alicepw"},
		Authorizer: true, SuperUsers: []string{"User:admin"}, PrincipalMappingRules: `RULE:^CN=(.*?)$/$1/,DEFAULT`,
		HTTPTLS:     &tls.Config{Certificates: []tls.Certificate{certs.Server.TLS}, ClientCAs: certs.CA.Pool(), ClientAuth: tls.VerifyClientCertIfGiven},
		MetricsAddr: "0.0.0.0:0", ConsoleAddr: "0.0.0.0:0", SchemaRegistryAddr: "0.0.0.0:0", DisableAutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(plain.Auth{User: "admin", Pass: "adminpw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "shown"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "hidden"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bobpw"}}); err != nil {
		t.Fatal(err)
	}
	acls := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("shown").Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("ACL for bob: %v %v", err, res)
	}
	acls = kadm.NewACLs().Allow("User:carol").AllowHosts("*").Topics("hidden").Operations(kadm.OpRead)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("ACL for carol: %v %v", err, res)
	}
	// The ACLs reach the authorizer through the metadata watch.
	waitFor(t, func() bool {
		d, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		return err == nil && len(d) == 1 && len(d[0].Described) == 2
	})

	h := httpProbe{t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.CA.Pool()}}}}
	metrics := loopbackURL(t, "https", b.MetricsAddr(), "/metrics")
	console := func(path string) string { return loopbackURL(t, "https", b.ConsoleAddr(), path) }
	registry := loopbackURL(t, "https", b.SchemaRegistryAddr(), "/subjects")

	for _, u := range []string{metrics, console("/api/v1/topics"), registry} {
		if code, _ := h.get(u, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials: %d, want 401", u, code)
		}
		if code, _ := h.get(u, "alice", "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong password: %d, want 401", u, code)
		}
		if code, _ := h.get(u, "nobody", "bobpw"); code != http.StatusUnauthorized {
			t.Errorf("GET %s as an unknown user: %d, want 401", u, code)
		}
		if code, body := h.get(u, "admin", "adminpw"); code != http.StatusOK {
			t.Errorf("GET %s as admin: %d %s, want 200", u, code, body)
		}
	}
	// Plain HTTP to an HTTPS port is not served.
	plainURL := strings.Replace(metrics, "https://", "http://", 1)
	if code, _ := (httpProbe{t, &http.Client{Timeout: 10 * time.Second}}).get(plainURL, "admin", "adminpw"); code == http.StatusOK {
		t.Errorf("plain HTTP to the HTTPS metrics port answered 200")
	}
	// A liveness probe needs no credentials.
	if code, _ := h.get(loopbackURL(t, "https", b.MetricsAddr(), "/healthz"), "", ""); code != http.StatusOK {
		t.Errorf("/healthz without credentials: %d, want 200", code)
	}
	// bob may not describe the cluster: no metrics.
	if code, _ := h.get(metrics, "bob", "bobpw"); code != http.StatusForbidden {
		t.Errorf("/metrics as bob: %d, want 403", code)
	}
	// The registry asks only for authentication.
	if code, _ := h.get(registry, "bob", "bobpw"); code != http.StatusOK {
		t.Errorf("registry as bob: %d, want 200", code)
	}

	topicsAs := func(probe httpProbe, user, pass string) []string {
		t.Helper()
		code, body := probe.get(console("/api/v1/topics"), user, pass)
		if code != http.StatusOK {
			t.Fatalf("topics as %q: %d %s", user, code, body)
		}
		var page struct {
			Topics []struct{ Name string } `json:"topics"`
		}
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tp := range page.Topics {
			if strings.HasPrefix(tp.Name, "__") {
				continue // internal topics: a super user sees them
			}
			names = append(names, tp.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := topicsAs(h, "admin", "adminpw"); !slices.Equal(got, []string{"hidden", "shown"}) {
		t.Errorf("admin sees %v, want [hidden shown]", got)
	}
	if got := topicsAs(h, "bob", "bobpw"); !slices.Equal(got, []string{"shown"}) {
		t.Errorf("bob (run-time SCRAM user) sees %v, want [shown]", got)
	}
	if got := topicsAs(h, "alice", "alicepw"); len(got) != 0 {
		t.Errorf("alice (no ACL) sees %v, want none", got)
	}
	if code, _ := h.get(console("/api/v1/topics/hidden"), "bob", "bobpw"); code != http.StatusNotFound {
		t.Errorf("bob's GET of the hidden topic: %d, want 404", code)
	}
	if code, _ := h.get(console("/api/v1/topics/shown"), "bob", "bobpw"); code != http.StatusOK {
		t.Errorf("bob's GET of the shown topic: %d, want 200", code)
	}
	// bob may describe "shown" but not read it: no records.
	if code, _ := h.get(console("/api/v1/topics/shown/records"), "bob", "bobpw"); code != http.StatusNotFound {
		t.Errorf("bob's GET of shown's records: %d, want 404", code)
	}
	// The HTML page hides it too.
	if code, body := h.get(console("/"), "bob", "bobpw"); code != http.StatusOK || strings.Contains(body, "/topics/hidden") || !strings.Contains(body, "/topics/shown") {
		t.Errorf("bob's overview page: %d, links the hidden topic: %v", code, strings.Contains(body, "/topics/hidden"))
	}

	// Mutual TLS: carol's certificate (CN=carol → User:carol) with no
	// password; Read implies Describe on "hidden".
	mtls := httpProbe{t, &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: certs.CA.Pool(), Certificates: []tls.Certificate{certs.Client.TLS}}}}}
	if got := topicsAs(mtls, "", ""); !slices.Equal(got, []string{"hidden"}) {
		t.Errorf("carol (client certificate) sees %v, want [hidden]", got)
	}
	if code, _ := mtls.get(console("/api/v1/topics/hidden/records"), "", ""); code != http.StatusOK {
		t.Errorf("carol's GET of hidden's records: %d, want 200", code)
	}

	// A user deleted over the Kafka API can no longer sign in.
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		code, _ := h.get(console("/api/v1/topics"), "bob", "bobpw")
		return code == http.StatusUnauthorized
	})
}

// TestHTTPListenerNeedsAuthentication: an HTTP listener bound beyond
// loopback that cannot authenticate refuses to start and says what to
// configure; basic authentication over plain HTTP is refused the same
// way; --http-insecure serves it anyway, unauthenticated; and a loopback
// listener still serves without credentials.
func TestHTTPListenerNeedsAuthentication(t *testing.T) {
	t.Parallel()
	start := func(cfg Config) (*Broker, error) {
		cfg.Dir, cfg.Logger = t.TempDir(), slog.New(slog.DiscardHandler)
		return Start(context.Background(), cfg)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"console, nothing", Config{ConsoleAddr: "0.0.0.0:0"}, []string{"console", "no way to authenticate", "--http-tls-cert", "--sasl-users", "--http-tls-client-ca", "--http-insecure"}},
		{"metrics, nothing", Config{MetricsAddr: "0.0.0.0:0"}, []string{"metrics endpoint", "no way to authenticate"}},
		{"registry, users but plain HTTP", Config{SchemaRegistryAddr: "0.0.0.0:0", SASLUsers: map[string]string{"a": "b"}}, []string{"schema registry", "in the clear", "--http-tls-cert"}},
	} {
		b, err := start(tc.cfg)
		if err == nil {
			b.Close()
			t.Errorf("%s: started", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	b, err := start(Config{ConsoleAddr: "0.0.0.0:0", HTTPInsecure: true})
	if err != nil {
		t.Fatalf("--http-insecure: %v", err)
	}
	h := httpProbe{t, &http.Client{Timeout: 10 * time.Second}}
	if code, body := h.get(loopbackURL(t, "http", b.ConsoleAddr(), "/api/v1/topics"), "", ""); code != http.StatusOK {
		t.Errorf("insecure console: %d %s", code, body)
	}
	b.Close()
	b, err = start(Config{MetricsAddr: "127.0.0.1:0", SASLUsers: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if code, _ := h.get("http://"+b.MetricsAddr()+"/metrics", "", ""); code != http.StatusOK {
		t.Errorf("loopback metrics without credentials: %d, want 200", code)
	}
	if code, _ := h.get("http://"+b.MetricsAddr()+"/metrics", "a", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("loopback metrics with a wrong password: %d, want 401", code)
	}
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met in 10 s")
}

// TestConsoleActionsAuthorized: with an authorizer, even a loopback
// console requires authentication (else a local client would bypass the
// ACLs), and an action needs what the Kafka API doing it needs: alice may
// not create a topic until she is granted Create on its name.
func TestConsoleActionsAuthorized(t *testing.T) {
	t.Parallel()
	b, err := Start(context.Background(), Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		SASLUsers:  map[string]string{"admin": "adminpw", "alice": "alicepw"},
		Authorizer: true, SuperUsers: []string{"User:admin"}, ConsoleAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base := "http://" + b.ConsoleAddr()
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h := httpProbe{t, client}
	if code, _ := h.get(base+"/api/v1/topics", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("loopback console with an authorizer, no credentials: %d, want 401", code)
	}
	_, page := h.get(base+"/", "alice", "alicepw")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in alice's overview page")
	}
	create := func() int {
		t.Helper()
		form := url.Values{"name": {"mine.1"}, "csrf": {m[1]}}
		req, err := http.NewRequest(http.MethodPost, base+"/actions/topics", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.SetBasicAuth("alice", "alicepw")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := create(); code != http.StatusForbidden {
		t.Fatalf("alice creates a topic without Create: %d, want 403", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.SASL(plain.Auth{User: "admin", Pass: "adminpw"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acls := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("mine.").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate)
	if res, err := kadm.NewClient(cl).CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("ACL: %v %+v", err, res)
	}
	waitFor(t, func() bool { return create() == http.StatusSeeOther })
	if code, _ := h.get(base+"/api/v1/topics/mine.1", "admin", "adminpw"); code != http.StatusOK {
		t.Fatalf("the topic alice created: %d", code)
	}
}
