package kafka

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/testcert"
)

// TestInternalListenerRequiresNodes: an internal listener with
// RequireNodePeers serves a peer whose verified certificate names a node
// (node-2: ApiVersions, which lists Envelope, and Metadata), and closes
// every other connection before answering anything — a client certificate
// the cluster CA signed that names no node (alice), no certificate, no
// TLS at all — logging why once per remote address.
func TestInternalListenerRequiresNodes(t *testing.T) {
	t.Parallel()
	ca, err := testcert.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server()
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(cn string) []tls.Certificate {
		l, err := ca.Client(cn)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{l.TLS}
	}
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// VerifyClientCertIfGiven lets a peer without a certificate through
	// the handshake, so that the listener's own check is what refuses it.
	serverTLS := &tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientCAs: ca.Pool(), ClientAuth: tls.VerifyClientCertIfGiven}
	ts := startServerTLS(t, broker.Config{}, Config{Internal: true, RequireNodePeers: true, Logger: logger}, serverTLS)
	connect := func(certs []tls.Certificate) *rawClient {
		c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: certs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &rawClient{t: t, conn: c}
	}

	node := connect(leaf("node-2"))
	versions := node.do(kmsg.NewPtrApiVersionsRequest(), 2).(*kmsg.ApiVersionsResponse)
	envelope := false
	for _, k := range versions.ApiKeys {
		envelope = envelope || k.ApiKey == apiKeyEnvelope
		if !nodeAPIs[k.ApiKey] {
			t.Errorf("the internal listener advertises %s, which nodes do not send each other", kmsg.NameForKey(k.ApiKey))
		}
	}
	if versions.ErrorCode != 0 || !envelope {
		t.Fatalf("node-2's ApiVersions: %v, Envelope listed: %v", kerr.ErrorForCode(versions.ErrorCode), envelope)
	}
	if md := node.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse); len(md.Brokers) != 1 {
		t.Fatalf("node-2's Metadata lists %d brokers, want this one", len(md.Brokers))
	}

	refused := func(what string, c *rawClient, reason string) {
		t.Helper()
		c.send(kmsg.NewPtrApiVersionsRequest(), 3)
		_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		got, err := io.ReadAll(c.conn)
		if len(got) != 0 {
			t.Fatalf("%s: the internal listener answered %d bytes, want the connection closed unanswered", what, len(got))
		}
		if err != nil && !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("%s: want the connection closed, got %v", what, err)
		}
		if reason != "" && !strings.Contains(logs.String(), reason) {
			t.Fatalf("%s: no WARN line giving the reason %q; log:\n%s", what, reason, logs.String())
		}
	}
	refused("alice's certificate", connect(leaf("alice")), "names no Strand node")
	if n := strings.Count(logs.String(), "refused a peer"); n != 1 {
		t.Fatalf("%d refusal lines after one refusal, want 1:\n%s", n, logs.String())
	}
	refused("alice again", connect(leaf("alice")), "")
	refused("no certificate", connect(nil), "") // its line is the one suppressed
	if n := strings.Count(logs.String(), "refused a peer"); n != 1 {
		t.Fatalf("%d refusal lines for three refusals from one address within 10 s, want 1:\n%s", n, logs.String())
	}
	// node-2's connection is unaffected by the refusals.
	if v := node.do(kmsg.NewPtrApiVersionsRequest(), 2).(*kmsg.ApiVersionsResponse); v.ErrorCode != 0 {
		t.Fatalf("node-2 after the refusals: %v", kerr.ErrorForCode(v.ErrorCode))
	}
	// An admin request, even from a node, is not served bare (only inside
	// an Envelope, as the client's principal).
	node.send(kmsg.NewPtrCreateACLsRequest(), 3)
	_ = node.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if got, _ := io.ReadAll(node.conn); len(got) != 0 {
		t.Fatalf("a bare CreateAcls on the internal listener was answered (%d bytes)", len(got))
	}

	var plainLogs lockedBuffer
	plain := startServer(t, broker.Config{}, Config{Internal: true, RequireNodePeers: true,
		Logger: slog.New(slog.NewTextHandler(&plainLogs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	c := dial(t, plain.addr)
	c.send(kmsg.NewPtrApiVersionsRequest(), 3)
	_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if got, _ := io.ReadAll(c.conn); len(got) != 0 {
		t.Fatalf("a RequireNodePeers listener without TLS answered a plaintext peer (%d bytes)", len(got))
	}
	if !strings.Contains(plainLogs.String(), "not a TLS connection") {
		t.Fatalf("no WARN line for the plaintext peer:\n%s", plainLogs.String())
	}
}

// TestRequireNodePeersOnlyInternal: RequireNodePeers on a client listener
// is a configuration error, not silently ignored.
func TestRequireNodePeersOnlyInternal(t *testing.T) {
	t.Parallel()
	b, err := broker.Open(broker.Config{Dir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s, err := NewServer(Config{Broker: b, RequireNodePeers: true}); err == nil {
		s.Close()
		t.Fatal("NewServer accepted RequireNodePeers on a client listener")
	}
}

// TestPrincipalSerde: RequestPrincipal is Kafka's DefaultKafkaPrincipalBuilder
// serialization — MessageUtil.toVersionPrefixedBytes(0, DefaultPrincipalData):
// the int16 version, then the flexible v0 body (compact strings, a bool, an
// empty tag section). The bytes are derived from Kafka's DefaultPrincipalData
// schema, not from kmsg, so a change of either encoder shows here.
func TestPrincipalSerde(t *testing.T) {
	t.Parallel()
	alice := []byte{
		0x00, 0x00, // version 0
		0x05, 'U', 's', 'e', 'r', // Type: compact string, length+1
		0x06, 'a', 'l', 'i', 'c', 'e', // Name
		0x00, // TokenAuthenticated false
		0x00, // no tagged fields
	}
	if got := encodePrincipal("User:alice"); !bytes.Equal(got, alice) {
		t.Fatalf("encode User:alice = % x, want % x", got, alice)
	}
	dn := acl.Principal("User:CN=node-2,O=strand")
	if p, err := decodePrincipal(encodePrincipal(dn)); err != nil || p != dn {
		t.Fatalf("round trip of %s: %q, %v", dn, p, err)
	}
	// Kafka's brokers set TokenAuthenticated for delegation-token clients;
	// it changes no ACL decision.
	token := append(append([]byte{}, alice[:len(alice)-2]...), 0x01, 0x00)
	if p, err := decodePrincipal(token); err != nil || p != "User:alice" {
		t.Fatalf("token-authenticated User:alice: %q, %v", p, err)
	}
	for name, b := range map[string][]byte{
		"missing":     nil,
		"empty":       {},
		"version 1":   append([]byte{0x00, 0x01}, alice[2:]...),
		"cut short":   alice[:9],
		"empty name":  {0x00, 0x00, 0x05, 'U', 's', 'e', 'r', 0x01, 0x00, 0x00},
		"only a type": {0x00, 0x00, 0x05, 'U', 's', 'e', 'r'},
	} {
		if p, err := decodePrincipal(b); err == nil {
			t.Errorf("%s: decoded as %q, want an error (PRINCIPAL_DESERIALIZATION_FAILURE)", name, p)
		}
	}
	if got := clientAddress("127.0.0.1"); !bytes.Equal(got, []byte{127, 0, 0, 1}) {
		t.Errorf("ClientHostAddress of 127.0.0.1 = % x, want 4 bytes as Java's InetAddress.getAddress", got)
	}
	if got := net.IP(clientAddress("::1")); len(got) != 16 || got.String() != "::1" {
		t.Errorf("ClientHostAddress of ::1 = % x, want 16 bytes", []byte(got))
	}
}

// TestEnvelopeNotServedOnClientListener: on a client listener with an
// authorizer, an Envelope closes the connection unanswered whoever sends
// it — a user without ClusterAction (Kafka does not answer
// CLUSTER_AUTHORIZATION_FAILED there: the API is not enabled on that
// listener) and a super user alike.
func TestEnvelopeNotServedOnClientListener(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{}, nil)
	for _, user := range []string{"alice", "admin"} {
		c := dial(t, ts.addr)
		plainLogin(t, c, user, user+"pw")
		env := kmsg.NewPtrEnvelopeRequest()
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.SetVersion(6)
		env.RequestData = kmsg.NewRequestFormatter().AppendRequest(nil, del, 1)[4:]
		env.RequestPrincipal = encodePrincipal("User:admin")
		env.ClientHostAddress = []byte{127, 0, 0, 1}
		c.send(env, 0)
		_ = c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if got, _ := io.ReadAll(c.conn); len(got) != 0 {
			t.Errorf("Envelope from %s on a client listener was answered (%d bytes); want the connection closed", user, len(got))
		}
	}
}
