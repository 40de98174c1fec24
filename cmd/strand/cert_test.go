package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/nodetls"
)

// certCLI runs "strand cert ..." and fails the test unless it exits 0.
func certCLI(t *testing.T, args ...string) string {
	t.Helper()
	return ok(t, "", "", append([]string{"cert"}, args...)...).stdout
}

// makeCluster makes, in dir, a CA, nodes 1 and 2 (127.0.0.1, localhost)
// and the client user admin.
func makeCluster(t *testing.T, dir string) {
	t.Helper()
	certCLI(t, "create-ca", "--certs-dir", dir)
	for _, id := range []string{"1", "2"} {
		certCLI(t, "create-node", "--certs-dir", dir, "--node-id", id, "--host", "127.0.0.1", "--host", "localhost")
	}
	certCLI(t, "create-client", "--certs-dir", dir, "--user", "admin")
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("%s: no PEM CERTIFICATE first", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func certPool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(readCert(t, path))
	return pool
}

func loadPair(t *testing.T, dir, base string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key"))
	if err != nil {
		t.Fatalf("tls.LoadX509KeyPair(%s): %v", base, err)
	}
	return pair
}

// TestCLICertCreate: create-ca, create-node and create-client write a CA
// (P-256, CA, cert-sign), node certificates that name their node both
// ways, carry the --host SANs and verify against ca.crt for server and
// client authentication, and a client certificate that names no node and
// verifies for client authentication only. Keys are 0600 and every pair
// loads with tls.LoadX509KeyPair; each command prints the file, subject,
// SANs, validity and fingerprint.
func TestCLICertCreate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "certs") // created by create-ca
	out := certCLI(t, "create-ca", "--certs-dir", dir)
	ca := readCert(t, filepath.Join(dir, "ca.crt"))
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("certs dir: %v, mode %v; want 0700", err, fi.Mode())
	}
	pub, okKey := ca.PublicKey.(*ecdsa.PublicKey)
	if !ca.IsCA || ca.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign || ca.Subject.CommonName != "Strand cluster CA" ||
		!okKey || pub.Curve != elliptic.P256() || ca.SerialNumber.Sign() <= 0 || ca.SerialNumber.Cmp(new(big.Int).Lsh(big.NewInt(1), 128)) >= 0 {
		t.Errorf("CA: IsCA %v, key usage %b, subject %q, key %T, serial %v", ca.IsCA, ca.KeyUsage, ca.Subject.CommonName, ca.PublicKey, ca.SerialNumber)
	}
	if life := ca.NotAfter.Sub(time.Now()); life < 87500*time.Hour || life > 87600*time.Hour {
		t.Errorf("CA valid for another %v, want 10 years", life)
	}
	checkPrinted(t, out, filepath.Join(dir, "ca.crt"), ca)

	hosts := []string{"--host", "127.0.0.1", "--host", "localhost", "--host", "::1", "--host", "node1.example"}
	out = certCLI(t, append([]string{"create-node", "--certs-dir", dir, "--node-id", "7"}, hosts...)...)
	node := readCert(t, filepath.Join(dir, "node-7.crt"))
	checkPrinted(t, out, filepath.Join(dir, "node-7.crt"), node)
	if !strings.Contains(out, "DNS:localhost, DNS:node1.example, IP:127.0.0.1, IP:::1, URI:strand://node/7") {
		t.Errorf("create-node did not print the SANs:\n%s", out)
	}
	if id, err := nodetls.NodeID(node); err != nil || id != 7 {
		t.Errorf("nodetls.NodeID(node-7.crt) = %d, %v", id, err)
	}
	if node.Subject.CommonName != nodetls.NodeCommonName(7) || len(node.URIs) != 1 || node.URIs[0].String() != nodetls.NodeURI(7).String() {
		t.Errorf("node-7: CN %q, URIs %v", node.Subject.CommonName, node.URIs)
	}
	if node.KeyUsage != x509.KeyUsageDigitalSignature || node.IsCA {
		t.Errorf("node-7: key usage %b, IsCA %v", node.KeyUsage, node.IsCA)
	}
	roots := certPool(t, filepath.Join(dir, "ca.crt"))
	for _, name := range []string{"127.0.0.1", "::1", "localhost", "node1.example"} {
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("node-7 as %s for usage %v: %v", name, usage, err)
			}
		}
	}
	if _, err := node.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.0.0.9"}); err == nil {
		t.Errorf("node-7 verified for a host it was not made for")
	}

	out = certCLI(t, "create-client", "--certs-dir", dir, "--user", "alice")
	client := readCert(t, filepath.Join(dir, "client-alice.crt"))
	checkPrinted(t, out, filepath.Join(dir, "client-alice.crt"), client)
	if _, err := nodetls.NodeID(client); !errors.Is(err, nodetls.ErrNotANode) {
		t.Errorf("nodetls.NodeID(client-alice.crt): %v, want ErrNotANode", err)
	}
	if client.Subject.CommonName != "alice" {
		t.Errorf("client CN %q", client.Subject.CommonName)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client-alice for client auth: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Errorf("client-alice verified for server auth")
	}

	for _, base := range []string{"ca", "node-7", "client-alice"} {
		loadPair(t, dir, base)
		for ext, want := range map[string]os.FileMode{".key": 0o600, ".crt": 0o644} {
			if fi, err := os.Stat(filepath.Join(dir, base+ext)); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s%s: %v, mode %v, want %04o", base, ext, err, fi.Mode().Perm(), want)
			}
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 6 {
		t.Errorf("the certs dir holds %d files, want 6 (no temporary files left)", len(ents))
	}
}

// checkPrinted: a create command printed the file, subject, validity in
// RFC 3339 UTC and the certificate's SHA-256 fingerprint.
func checkPrinted(t *testing.T, out, path string, c *x509.Certificate) {
	t.Helper()
	sum := sha256.Sum256(c.Raw)
	var hexes []string
	for _, b := range sum {
		hexes = append(hexes, strings.ToUpper(hex.EncodeToString([]byte{b})))
	}
	fp := strings.Join(hexes, ":") // as openssl x509 -fingerprint -sha256
	for _, want := range []string{"wrote " + path, "subject     CN=" + c.Subject.CommonName,
		"not before  " + c.NotBefore.UTC().Format(time.RFC3339), "not after   " + c.NotAfter.UTC().Format(time.RFC3339),
		"SHA-256     " + fp, "(private key, mode 0600)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCLICertRefusals: an existing file is not overwritten without
// --overwrite (and is with it); a missing CA, a CA key elsewhere, a
// client user that would name a node, a node without --host and a
// missing --certs-dir each fail saying what to do; a certificate never
// outlives its CA.
func TestCLICertRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fail := func(wantCode int, wantErr string, args ...string) {
		t.Helper()
		r := runCLI(t, "", "", append([]string{"cert"}, args...)...)
		if r.code != wantCode || !strings.Contains(r.stderr, wantErr) {
			t.Errorf("strand cert %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), r.code, r.stderr, wantCode, wantErr)
		}
	}
	fail(exitError, `no CA in `+dir+` (no ca.crt): run "strand cert create-ca --certs-dir `+dir+`" first`,
		"create-node", "--certs-dir", dir, "--node-id", "1", "--host", "127.0.0.1")
	fail(exitUsage, "--certs-dir is required", "create-ca")
	fail(exitUsage, "--certs-dir is required", "list")

	certCLI(t, "create-ca", "--certs-dir", dir, "--lifetime", "1000h")
	fail(exitUsage, "name at least one --host", "create-node", "--certs-dir", dir, "--node-id", "1")
	for _, host := range []string{"127.0.0.1:9192", "https://broker1", "[::1]", ""} {
		fail(exitUsage, "want a DNS name or an IP address alone", "create-node", "--certs-dir", dir, "--node-id", "1", "--host", host)
	}
	fail(exitUsage, "--node-id is required", "create-node", "--certs-dir", dir, "--host", "127.0.0.1")
	for _, user := range []string{"node-2", "node-0", "node-x"} {
		fail(exitUsage, `--user "`+user+`": a certificate with subject CN `+user+` reads as a Strand node's`, "create-client", "--certs-dir", dir, "--user", user)
	}
	fail(exitUsage, "use letters, digits", "create-client", "--certs-dir", dir, "--user", "../evil")
	if _, err := os.Stat(filepath.Join(dir, "client-node-2.crt")); err == nil {
		t.Errorf("a refused create-client wrote a certificate")
	}

	// A node certificate asked for a year gets the CA's 1000 hours.
	out := certCLI(t, "create-node", "--certs-dir", dir, "--node-id", "1", "--host", "127.0.0.1")
	if n, ca := readCert(t, filepath.Join(dir, "node-1.crt")), readCert(t, filepath.Join(dir, "ca.crt")); !n.NotAfter.Equal(ca.NotAfter) ||
		!strings.Contains(out, "a certificate cannot outlive its CA") {
		t.Errorf("node not after %v, CA's %v; output:\n%s", n.NotAfter, ca.NotAfter, out)
	}

	// No overwriting without --overwrite: the files stay as they were.
	before := map[string][]byte{}
	for _, f := range []string{"ca.crt", "ca.key", "node-1.crt", "node-1.key"} {
		before[f], _ = os.ReadFile(filepath.Join(dir, f))
	}
	fail(exitError, filepath.Join(dir, "ca.crt")+" already exists: not overwriting it (a new CA invalidates every certificate the old one signed); pass --overwrite",
		"create-ca", "--certs-dir", dir)
	fail(exitError, filepath.Join(dir, "node-1.crt")+" already exists: not overwriting it; pass --overwrite",
		"create-node", "--certs-dir", dir, "--node-id", "1", "--host", "127.0.0.1")
	for f, b := range before {
		if now, _ := os.ReadFile(filepath.Join(dir, f)); !bytes.Equal(now, b) {
			t.Errorf("%s changed though --overwrite was not given", f)
		}
	}
	certCLI(t, "create-node", "--certs-dir", dir, "--node-id", "1", "--host", "127.0.0.1", "--overwrite")
	for _, f := range []string{"node-1.crt", "node-1.key"} {
		if now, _ := os.ReadFile(filepath.Join(dir, f)); bytes.Equal(now, before[f]) {
			t.Errorf("%s unchanged by --overwrite", f)
		}
	}
	loadPair(t, dir, "node-1")

	// A CA whose key is kept elsewhere.
	other, offline := t.TempDir(), filepath.Join(t.TempDir(), "offline", "ca.key")
	certCLI(t, "create-ca", "--certs-dir", other, "--ca-key", offline)
	if _, err := os.Stat(filepath.Join(other, "ca.key")); err == nil {
		t.Errorf("create-ca --ca-key also wrote ca.key in --certs-dir")
	}
	fail(exitError, "no CA key at "+filepath.Join(other, "ca.key")+": if it is kept elsewhere, pass --ca-key FILE",
		"create-client", "--certs-dir", other, "--user", "bob")
	fail(exitError, "does not belong to", "create-client", "--certs-dir", other, "--user", "bob", "--ca-key", filepath.Join(dir, "ca.key"))
	certCLI(t, "create-client", "--certs-dir", other, "--user", "bob", "--ca-key", offline)
	if _, err := readCert(t, filepath.Join(other, "client-bob.crt")).Verify(x509.VerifyOptions{Roots: certPool(t, filepath.Join(other, "ca.crt")),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client-bob signed with --ca-key: %v", err)
	}
}

// TestCLICertMutualTLS: over a real loopback TCP connection, node 1's
// certificate as the server and node 2's as the client, both from one
// CA, complete a handshake that requires and verifies the client's
// certificate, and each end reads the other's node id from it; a node
// certificate of another CA is refused at either end.
func TestCLICertMutualTLS(t *testing.T) {
	t.Parallel()
	dir, stranger := t.TempDir(), t.TempDir()
	makeCluster(t, dir)
	makeCluster(t, stranger)
	roots := certPool(t, filepath.Join(dir, "ca.crt"))
	node1, node2, foreign := loadPair(t, dir, "node-1"), loadPair(t, dir, "node-2"), loadPair(t, stranger, "node-2")

	serverID, clientID, serverErr, clientErr := handshake(t, roots, node1, node2)
	if serverErr != nil || clientErr != nil || serverID != 2 || clientID != 1 {
		t.Fatalf("node-1 ↔ node-2: server saw node %d (%v), client saw node %d (%v)", serverID, serverErr, clientID, clientErr)
	}
	if _, _, serverErr, _ := handshake(t, roots, node1, foreign); serverErr == nil {
		t.Errorf("the server accepted a client certificate of another CA")
	}
	if _, _, _, clientErr := handshake(t, roots, foreign, node2); clientErr == nil {
		t.Errorf("the client accepted a server certificate of another CA")
	}
}

// handshake runs one TLS connection over loopback TCP: the server
// requires and verifies a client certificate from roots, the client
// verifies the server as 127.0.0.1; the server then writes a byte the
// client reads. It returns the node id each end read from the other's
// certificate, and each end's error.
func handshake(t *testing.T, roots *x509.CertPool, server, client tls.Certificate) (serverSaw, clientSaw int32, serverErr, clientErr error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		id  int32
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{-1, err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second)) // a bound, not an assertion
		tc := c.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			done <- result{-1, err}
			return
		}
		id, err := nodetls.NodeID(tc.ConnectionState().PeerCertificates[0])
		if err == nil {
			_, err = tc.Write([]byte{1})
		}
		done <- result{id, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{Certificates: []tls.Certificate{client}, RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}
	clientSaw = -1
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err == nil {
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		// With TLS 1.3 the server checks the client's certificate after the
		// client's handshake is done: its refusal shows on the first read.
		if _, err = io.ReadFull(c, make([]byte, 1)); err == nil {
			clientSaw, err = nodetls.NodeID(c.(*tls.Conn).ConnectionState().PeerCertificates[0])
		}
	}
	clientErr = err
	if err != nil {
		c, _ := net.Dial("tcp", ln.Addr().String()) // unblock Accept if the client never connected
		if c != nil {
			c.Close()
		}
	}
	r := <-done
	return r.id, clientSaw, r.err, clientErr
}

// TestCLICertList: "strand cert list" shows each certificate with its
// kind (ca, node N, client U), subject, SANs and expiry; it flags a key
// that does not match its certificate, a key without a certificate, a
// certificate another CA signed and an expired one; it exits 0.
func TestCLICertList(t *testing.T) {
	t.Parallel()
	dir, stranger := t.TempDir(), t.TempDir()
	makeCluster(t, dir)
	makeCluster(t, stranger)

	out := certCLI(t, "list", "--certs-dir", dir)
	wantRows := []string{
		"ca.crt ca Strand cluster CA - ",
		"node-1.crt node 1 node-1 DNS:localhost,IP:127.0.0.1,URI:strand://node/1 ",
		"node-2.crt node 2 node-2 DNS:localhost,IP:127.0.0.1,URI:strand://node/2 ",
		"client-admin.crt client admin admin - ",
	}
	lines := strings.Split(normalize(strings.TrimSpace(out)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "FILE KIND SUBJECT CN SANS EXPIRES PROBLEMS") {
		t.Fatalf("cert list:\n%s", out)
	}
	for i, want := range wantRows {
		if !strings.HasPrefix(lines[i+1], want) || !strings.HasSuffix(lines[i+1], " -") {
			t.Errorf("row %d is %q, want it to start with %q and show no problem", i+1, lines[i+1], want)
		}
	}
	yearOn := time.Now().Add(8760 * time.Hour).UTC().Format(time.DateOnly)
	if !strings.Contains(lines[2], yearOn+" in 364d") {
		t.Errorf("node-1's row does not expire %s in 364d: %q", yearOn, lines[2])
	}

	// Break things: node-1 gets node-2's key, a stray key, a certificate
	// of another CA, an expired client certificate.
	copyFile(t, filepath.Join(dir, "node-2.key"), filepath.Join(dir, "node-1.key"))
	copyFile(t, filepath.Join(dir, "node-2.key"), filepath.Join(dir, "stray.key"))
	copyFile(t, filepath.Join(stranger, "client-admin.crt"), filepath.Join(dir, "client-intruder.crt"))
	copyFile(t, filepath.Join(stranger, "client-admin.key"), filepath.Join(dir, "client-intruder.key"))
	writeExpiredClient(t, dir, "old")
	// A pair kept elsewhere and linked in is listed like any other.
	for _, ext := range []string{".crt", ".key"} {
		if err := os.Symlink(filepath.Join(stranger, "node-1"+ext), filepath.Join(dir, "node-9"+ext)); err != nil {
			t.Fatal(err)
		}
	}

	r := runCLI(t, "", "", "cert", "list", "--certs-dir", dir)
	if r.code != 0 {
		t.Fatalf("cert list with problems: exit %d\n%s", r.code, r.stderr)
	}
	have := normalize(r.stdout)
	for _, want := range []string{
		"node-1.key does not match this certificate",
		"stray.key key - - - - a key without a certificate (no stray.crt)",
		"client-intruder.crt client admin admin - ",
		"not signed by ca.crt",
		"client-old.crt client old old - ",
		" EXPIRED ",
		"node-9.crt node 1 node-1 ",
		"its file would be node-1.crt",
		"its file would be client-admin.crt", // client-intruder.crt
	} {
		if !strings.Contains(have, want) {
			t.Errorf("cert list lacks %q:\n%s", want, r.stdout)
		}
	}
	var rows []certRow
	decodeJSON(t, certCLI(t, "list", "--certs-dir", dir, "-o", "json"), &rows)
	kinds := map[string]string{}
	problems := map[string]int{}
	for _, row := range rows {
		kinds[row.File], problems[row.File] = row.Kind, len(row.Problems)
	}
	wantKinds := map[string]string{"ca.crt": "ca", "node-1.crt": "node 1", "node-2.crt": "node 2", "client-admin.crt": "client admin",
		"client-intruder.crt": "client admin", "client-old.crt": "client old", "stray.key": "key",
		"node-9.crt": "node 1"}
	for f, k := range wantKinds {
		if kinds[f] != k {
			t.Errorf("cert list -o json: %s is %q, want %q", f, kinds[f], k)
		}
	}
	for _, f := range []string{"ca.crt", "node-2.crt", "client-admin.crt"} {
		if problems[f] != 0 {
			t.Errorf("cert list -o json: %s has problems: %+v", f, rows)
		}
	}
	if len(rows) != len(wantKinds) {
		t.Errorf("cert list -o json has %d rows, want %d", len(rows), len(wantKinds))
	}
	if raw, _ := json.Marshal(rows); !strings.Contains(string(raw), `"expired":true`) {
		t.Errorf("no row expired in %s", raw)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeExpiredClient signs, with dir's CA, a client certificate that
// expired yesterday (the CLI refuses to make one).
func writeExpiredClient(t *testing.T, dir, user string) {
	t.Helper()
	ca := &certOptions{dir: dir}
	authority, err := ca.loadCA("")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := newCertTemplate(user, time.Now().Add(-48*time.Hour), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if err := ca.issue(io.Discard, authority, tmpl, filepath.Join(dir, "client-"+user+".crt"), filepath.Join(dir, "client-"+user+".key")); err != nil {
		t.Fatal(err)
	}
}

// TestCLICertServe: the files work with strand serve's and the client
// commands' TLS flags: node 1's certificate on the Kafka listener, ca.crt
// as its client CA, and admin's client certificate, mapped to User:admin,
// is a super user who creates a topic under the authorizer.
func TestCLICertServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeCluster(t, dir)
	p := filepath.Join
	srv := startServe(t, "--data-dir", t.TempDir(), "--tls-cert", p(dir, "node-1.crt"), "--tls-key", p(dir, "node-1.key"),
		"--tls-client-ca", p(dir, "ca.crt"), "--authorizer", "--super-users", "User:admin",
		"--ssl-principal-mapping-rules", "RULE:^CN=(.*)$/$1/,DEFAULT")
	admin := []string{"--tls-ca", p(dir, "ca.crt"), "--tls-cert", p(dir, "client-admin.crt"), "--tls-key", p(dir, "client-admin.key")}
	ok(t, srv.addr, "", append([]string{"topic", "create", "secured"}, admin...)...)
	if r := ok(t, srv.addr, "", append([]string{"topic", "list"}, admin...)...); !strings.Contains(r.stdout, "secured") {
		t.Errorf("topic list as admin:\n%s", r.stdout)
	}
	// node-2's certificate is valid but maps to User:node-2, no super user.
	node2 := []string{"--tls-ca", p(dir, "ca.crt"), "--tls-cert", p(dir, "node-2.crt"), "--tls-key", p(dir, "node-2.key"), "--timeout", "5s"}
	if r := runCLI(t, srv.addr, "", append([]string{"topic", "create", "other"}, node2...)...); r.code == 0 || !strings.Contains(strings.ToLower(r.stderr), "authoriz") {
		t.Errorf("node-2's certificate created a topic under the authorizer: exit %d\n%s", r.code, r.stderr)
	}
}

// TestSecurityDocCertificates runs the commands of docs/SECURITY.md's
// "Certificates with strand cert" section in a scratch directory and
// checks each prints what the page says after it.
func TestSecurityDocCertificates(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	var steps []readmeCmd
	for _, b := range parseReadme(t, string(raw)) {
		if b.section == "Certificates with strand cert" {
			steps = append(steps, b.cmds...)
		}
	}
	if len(steps) < 6 {
		t.Fatalf("the section has %d commands, want at least 6", len(steps))
	}
	bin, dir := strandBin(t), t.TempDir()
	for _, s := range steps {
		if !strings.HasPrefix(s.text, "strand cert ") {
			continue // strand serve and client commands: TestCLICertServe runs their like
		}
		cmd := exec.Command("bash", "-o", "pipefail", "-c", bin+strings.TrimPrefix(s.text, "strand"))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("SECURITY.md command failed (%v): %s\n%s", err, s.text, out)
		}
		if bad := matchLines(string(out), s.want); bad != "" {
			t.Errorf("SECURITY.md command %s\nprinted:\n%s\n%s", s.text, out, bad)
		}
	}
	for _, f := range []string{"ca.crt", "node-1.crt", "node-2.crt", "node-3.crt", "client-admin.crt"} {
		if _, err := os.Stat(filepath.Join(dir, "certs", f)); err != nil {
			t.Errorf("after the section's commands: %v", err)
		}
	}
}
