package httpauth

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/sasl"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9644": true, "[::1]:9644": true, "localhost:9644": true, "127.0.0.2:1": true,
		"0.0.0.0:9644": false, ":9644": false, "[::]:9644": false, "10.0.0.1:9644": false, "example.com:80": false,
	} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestCheckListener(t *testing.T) {
	users, err := sasl.New(map[string]string{"a": "b"})
	if err != nil {
		t.Fatal(err)
	}
	tlsOnly := &tls.Config{}
	mtls := &tls.Config{ClientCAs: x509.NewCertPool()}
	for _, tc := range []struct {
		c    Config
		fail string // "" when it may start
	}{
		{Config{Addr: "127.0.0.1:1"}, ""},
		{Config{Addr: "0.0.0.0:1"}, "no way to authenticate"},
		{Config{Addr: "0.0.0.0:1", TLS: tlsOnly}, "no way to authenticate"},
		{Config{Addr: "0.0.0.0:1", Users: users}, "in the clear"},
		{Config{Addr: "0.0.0.0:1", Users: users, TLS: tlsOnly}, ""},
		{Config{Addr: "0.0.0.0:1", TLS: mtls}, ""},
		{Config{Addr: "0.0.0.0:1", Insecure: true}, ""},
	} {
		err := CheckListener(tc.c)
		if (err == nil) != (tc.fail == "") || err != nil && !strings.Contains(err.Error(), tc.fail) {
			t.Errorf("CheckListener(%+v) = %v, want %q", tc.c, err, tc.fail)
		}
	}
}

// FuzzGuard sends Guard arbitrary Authorization headers on a listener
// bound beyond loopback: it must never panic, and must let a request
// through only with the one right user and password.
func FuzzGuard(f *testing.F) {
	users, err := sasl.New(map[string]string{"alice": "alicepw"})
	if err != nil {
		f.Fatal(err)
	}
	ok := httptest.NewRequest(http.MethodGet, "/", nil)
	ok.SetBasicAuth("alice", "alicepw")
	for _, seed := range []string{ok.Header.Get("Authorization"), "Basic", "Basic !!!", "Bearer x", "Basic YWxpY2U6", "basic YWxpY2U6YWxpY2Vwdw==", ""} {
		f.Add(seed)
	}
	served := false
	h := Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = true }),
		Config{Name: "test", Addr: "0.0.0.0:1", Users: users, TLS: &tls.Config{}, Logger: slog.New(slog.DiscardHandler)}, nil)
	f.Fuzz(func(t *testing.T, header string) {
		served = false
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", header)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		user, pass, basic := r.BasicAuth()
		valid := basic && user == "alice" && pass == "alicepw"
		if served != valid || (w.Code == http.StatusOK) != valid {
			t.Fatalf("Authorization %q: served %v, status %d; valid credentials: %v", header, served, w.Code, valid)
		}
	})
}
