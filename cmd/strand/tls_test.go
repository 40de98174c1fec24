package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/testcert"
)

// TestCLIMutualTLS runs "strand serve" with --tls-cert, --tls-key and
// --tls-client-ca, and client commands against it: with the CA and a
// client certificate they work; without the certificate, or without TLS,
// they fail with a non-zero exit.
func TestCLIMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certs := testcert.MustSet(t, "cli")
	ca, server, client := certs.CA, certs.Server, certs.Client
	files := map[string][]byte{"ca.pem": ca.CertPEM, "server.pem": server.CertPEM, "server.key": server.KeyPEM,
		"client.pem": client.CertPEM, "client.key": client.KeyPEM}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := func(name string) string { return filepath.Join(dir, name) }

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, strandBin(t), "serve", "--listen", addr, "--data-dir", path("data"),
		"--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", "",
		"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--tls-client-ca", path("ca.pem"))
	var logs syncBuffer
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(syscall.SIGINT)
		serve.Wait()
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "serving Kafka on"); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	mtls := []string{"--tls-ca", path("ca.pem"), "--tls-cert", path("client.pem"), "--tls-key", path("client.key")}
	ok(t, addr, "", append([]string{"topic", "create", "secure", "--partitions", "2"}, mtls...)...)
	if r := ok(t, addr, "", append([]string{"topic", "list"}, mtls...)...); !strings.Contains(r.stdout, "secure") {
		t.Fatalf("topic list over mutual TLS:\n%s", r.stdout)
	}
	for _, args := range [][]string{
		{"topic", "list", "--timeout", "3s", "--tls-ca", path("ca.pem")}, // no client certificate
		{"topic", "list", "--timeout", "3s"},                             // no TLS at all
	} {
		if r := runCLI(t, addr, "", args...); r.code == 0 {
			t.Fatalf("strand %s succeeded against a mutual-TLS listener:\n%s", strings.Join(args, " "), r.stdout)
		}
	}
	if r := runCLI(t, addr, "", "topic", "list", "--tls-cert", path("client.pem")); r.code == 0 || !strings.Contains(r.stderr, "go together") {
		t.Fatalf("--tls-cert without --tls-key: exit %d\n%s", r.code, r.stderr)
	}
}
