package nodetls_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/testcert"
)

// syncBuf is a log sink tests read while connections write to it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nodeFiles writes node id's certificate from ca and the CA into dir.
func nodeFiles(t testing.TB, ca *testcert.CA, dir string, id int32, validFor time.Duration) nodetls.Files {
	t.Helper()
	leaf, err := ca.Node(id, validFor)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := leaf.WriteFiles(dir, nodetls.NodeCommonName(id))
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteFile(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	return nodetls.Files{Cert: cert, Key: key, CA: caFile}
}

func mustCA(t testing.TB) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func load(t testing.TB, f nodetls.Files, self int32, log io.Writer) *nodetls.Source {
	t.Helper()
	s, err := nodetls.Load(f, self, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// server listens with src; each accepted connection reads one line and
// answers it, and its peer node and read error are sent to got.
type accepted struct {
	peer int32
	line string
	err  error
}

func serve(t *testing.T, src *nodetls.Source) (string, <-chan accepted) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := src.Listener(raw)
	t.Cleanup(func() { ln.Close() })
	got := make(chan accepted, 16)
	acceptEach(ln, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err == nil {
			_, _ = c.Write(buf[:n])
		}
		got <- accepted{peer: c.(*nodetls.Conn).PeerNode(), line: string(buf[:n]), err: err}
	})
	return raw.Addr().String(), got
}

// acceptEach serves every connection ln accepts with fn, on a goroutine of
// its own, and closes it after; it returns at once.
func acceptEach(ln net.Listener, fn func(net.Conn)) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(c)
			}()
		}
	}()
}

func dial(ctx context.Context, src *nodetls.Source, addr string, expect int32) (*nodetls.Conn, error) {
	return src.Dial(ctx, &net.Dialer{}, addr, expect)
}

func TestNodesHandshakeAndKnowEachOther(t *testing.T) {
	ca := mustCA(t)
	dir := t.TempDir()
	var log syncBuf
	n1 := load(t, nodeFiles(t, ca, dir, 1, 0), 1, &log)
	n2 := load(t, nodeFiles(t, ca, dir, 2, 0), 2, &log)
	addr, got := serve(t, n1)
	c, err := dial(t.Context(), n2, addr, 1)
	if err != nil {
		t.Fatalf("node 2 dialling node 1: %v", err)
	}
	defer c.Close()
	if c.PeerNode() != 1 {
		t.Fatalf("dialler sees node %d, want 1", c.PeerNode())
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.peer != 2 || a.line != "hello" {
		t.Fatalf("server saw %+v, want node 2 saying hello", a)
	}
}

func TestRefusals(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	dir, otherDir := t.TempDir(), t.TempDir()
	var serverLog syncBuf
	n1 := load(t, nodeFiles(t, ca, dir, 1, 0), 1, &serverLog)
	addr, got := serve(t, n1)

	t.Run("a node dialled as another", func(t *testing.T) {
		n2 := load(t, nodeFiles(t, ca, dir, 2, 0), 2, io.Discard)
		if _, err := dial(t.Context(), n2, addr, 3); err == nil || !strings.Contains(err.Error(), "names node 1, but node 3 was dialled") {
			t.Fatalf("dialling node 3 and reaching node 1: %v", err)
		}
		<-got // the server side's handshake fails too (the client hung up)
	})
	t.Run("another CA", func(t *testing.T) {
		stranger := load(t, nodeFiles(t, other, otherDir, 2, 0), 2, io.Discard)
		if _, err := dial(t.Context(), stranger, addr, 1); err == nil {
			t.Fatal("a node of another CA completed a handshake")
		}
		if a := <-got; a.err == nil || a.line != "" {
			t.Fatalf("server accepted a node of another CA: %+v", a)
		}
	})
	t.Run("a client certificate", func(t *testing.T) {
		leaf, err := ca.Client("alice")
		if err != nil {
			t.Fatal(err)
		}
		cert, key, err := leaf.WriteFiles(dir, "alice")
		if err != nil {
			t.Fatal(err)
		}
		alice := load(t, nodetls.Files{Cert: cert, Key: key, CA: dir + "/ca.crt"}, nodetls.AnyNode, io.Discard)
		c, err := dial(t.Context(), alice, addr, 1)
		if err == nil {
			// TLS 1.3: the client finishes before the server checks its
			// certificate; the refusal arrives on the first read.
			_, _ = c.Write([]byte("fetch"))
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err = c.Read(make([]byte, 8)); err == nil {
				t.Fatal("a client certificate was answered by a node")
			}
			c.Close()
		}
		if a := <-got; a.err == nil || !strings.Contains(a.err.Error(), "names no Strand node") {
			t.Fatalf("server side of a client certificate: %+v", a)
		}
	})
	t.Run("plaintext", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("\x00\x00\x00\x10plaintext raft!!"))
		if a := <-got; a.err == nil || a.line != "" {
			t.Fatalf("plaintext bytes reached the server's reader: %+v", a)
		}
	})
	t.Run("logged once per peer and reason", func(t *testing.T) {
		before := strings.Count(serverLog.String(), "refused an inter-node connection")
		for range 3 {
			c, _ := net.Dial("tcp", addr)
			_, _ = c.Write([]byte("\x00\x00\x00\x10plaintext raft!!"))
			<-got
			c.Close()
		}
		if after := strings.Count(serverLog.String(), "refused an inter-node connection"); after != before {
			t.Fatalf("three more plaintext refusals from one host logged %d more lines, want 0 (already logged):\n%s", after-before, serverLog.String())
		}
	})
}

func TestLoadRefusesAnotherNodesCertificate(t *testing.T) {
	ca := mustCA(t)
	f := nodeFiles(t, ca, t.TempDir(), 2, 0)
	if _, err := nodetls.Load(f, 3, nil); err == nil || !strings.Contains(err.Error(), "names node 2, not this node (3)") {
		t.Fatalf("node 3 loading node 2's certificate: %v", err)
	}
	other := mustCA(t)
	otherCA, err := other.WriteFile(t.TempDir(), "ca")
	if err != nil {
		t.Fatal(err)
	}
	f.CA = otherCA
	if _, err := nodetls.Load(f, 2, nil); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("a certificate the CA did not sign: %v", err)
	}
}

func TestReloadReachesNewConnections(t *testing.T) {
	ca := mustCA(t)
	dir := t.TempDir()
	files := nodeFiles(t, ca, dir, 1, 0)
	n1 := load(t, files, 1, io.Discard)
	n2 := load(t, nodeFiles(t, ca, dir, 2, 0), 2, io.Discard)
	addr, got := serve(t, n1)
	serial := func() string {
		c, err := dial(t.Context(), n2, addr, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte("x"))
		<-got
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	if changed, err := n1.Reload(); err != nil || changed {
		t.Fatalf("reload of unchanged files: changed %v, %v", changed, err)
	}
	renewed, err := ca.Node(1, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// A half-written renewal keeps the old material.
	if err := os.WriteFile(files.Key, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.Reload(); err == nil {
		t.Fatal("a broken key file was loaded")
	}
	if got := serial(); got != before {
		t.Fatal("a failed reload changed the certificate in use")
	}
	if _, _, err := renewed.WriteFiles(dir, nodetls.NodeCommonName(1)); err != nil {
		t.Fatal(err)
	}
	if changed, err := n1.Reload(); err != nil || !changed {
		t.Fatalf("reload of renewed files: changed %v, %v", changed, err)
	}
	if after := serial(); after == before {
		t.Fatal("a new connection still gets the certificate from before the reload")
	}
	if !n1.NotAfter().After(time.Now().Add(47 * time.Hour)) {
		t.Fatalf("NotAfter %v is not the renewed certificate's", n1.NotAfter())
	}
}

func TestConnectionClosesWhenCertificateExpires(t *testing.T) {
	ca := mustCA(t)
	dir := t.TempDir()
	n1 := load(t, nodeFiles(t, ca, dir, 1, 0), 1, io.Discard)
	n2 := load(t, nodeFiles(t, ca, dir, 2, 3*time.Second), 2, io.Discard) // expires soon
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := n1.Listener(raw)
	defer ln.Close()
	serverErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			serverErr <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c) // until the connection ends
		serverErr <- err
	}()
	c, err := dial(t.Context(), n2, raw.Addr().String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("x"))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("a connection on an expiring certificate was still open 30 s later: %v", err)
	}
	select {
	case <-serverErr:
	case <-time.After(30 * time.Second):
		t.Fatal("the server side kept a connection whose peer certificate expired")
	}
}

// TestListenerReload: a client-facing listener serves a renewed
// certificate to new connections after Reload, and keeps the old one when
// the new files do not load.
func TestListenerReload(t *testing.T) {
	ca := mustCA(t)
	dir := t.TempDir()
	server, err := ca.Server()
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := server.WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	l, err := nodetls.LoadListener(cert, key, "", tls.RequireAndVerifyClientCert, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(raw, l.Config())
	defer ln.Close()
	acceptEach(ln, func(c net.Conn) { _ = c.(*tls.Conn).Handshake() })
	serial := func() string {
		c, err := tls.Dial("tcp", raw.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := serial()
	if err := os.WriteFile(key, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reload(); err == nil {
		t.Fatal("a broken key loaded")
	}
	if serial() != before {
		t.Fatal("a failed reload changed the certificate served")
	}
	renewed, err := ca.Server()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := renewed.WriteFiles(dir, "server"); err != nil {
		t.Fatal(err)
	}
	if changed, err := l.Reload(); err != nil || !changed {
		t.Fatalf("reload: %v %v", changed, err)
	}
	if serial() == before {
		t.Fatal("a new connection got the certificate from before the reload")
	}
}
