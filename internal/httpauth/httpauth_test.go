package httpauth

import (
	"crypto/tls"
	"crypto/x509"
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
