package strand

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/testcert"
	"github.com/strandmq/strand/internal/wire"
)

// clusterCerts writes a CA and node certificates 1..n into dir and returns
// a tune function that turns inter-node TLS on for each node.
type clusterCerts struct {
	dir string
	ca  *testcert.CA
}

func newClusterCerts(t *testing.T) *clusterCerts {
	t.Helper()
	ca, err := testcert.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	cc := &clusterCerts{dir: t.TempDir(), ca: ca}
	if _, err := ca.WriteFile(cc.dir, "ca"); err != nil {
		t.Fatal(err)
	}
	return cc
}

// node writes node id's files and returns them.
func (cc *clusterCerts) node(t *testing.T, id int32) nodetls.Files {
	t.Helper()
	leaf, err := cc.ca.Node(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := leaf.WriteFiles(cc.dir, nodetls.NodeCommonName(id))
	if err != nil {
		t.Fatal(err)
	}
	return nodetls.Files{Cert: cert, Key: key, CA: filepath.Join(cc.dir, "ca.crt")}
}

// startTLSCluster starts n nodes with inter-node TLS.
func startTLSCluster(t *testing.T, n int32, config func(*Config)) (*testCluster, *clusterCerts) {
	t.Helper()
	certs := newClusterCerts(t)
	for id := int32(1); id <= n; id++ {
		certs.node(t, id)
	}
	c := startClusterWith(t, n, nil, func(cfg *Config) {
		f := certs.files(cfg.NodeID)
		cfg.Cluster.TLS = &InterNodeTLS{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
		if config != nil {
			config(cfg)
		}
	})
	return c, certs
}

func (cc *clusterCerts) files(id int32) nodetls.Files {
	base := filepath.Join(cc.dir, nodetls.NodeCommonName(id))
	return nodetls.Files{Cert: base + ".crt", Key: base + ".key", CA: filepath.Join(cc.dir, "ca.crt")}
}

// TestClusterInterNodeTLS: a cluster whose nodes talk mutual TLS serves as
// one without: a topic created through a non-controller node (a forwarded
// Envelope), acks=all records replicated to every node, read back, and
// the certificate's expiry on /metrics.
func TestClusterInterNodeTLS(t *testing.T) {
	c, _ := startTLSCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(2))
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, "secured"); err != nil {
		t.Fatal(err)
	}
	prod := c.client(3, kgo.DefaultProduceTopic("secured"), kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 300
	for i := range n {
		if err := prod.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatalf("record %d with min.insync.replicas=3 (every follower fetching over TLS): %v", i, err)
		}
	}
	cons := c.client(1, kgo.ConsumeTopics("secured"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d", got, n)
		}
		got += fs.NumRecords()
	}
	lines := c.scrape(1, "strand_tls_certificate_expiry_timestamp_seconds")
	if len(lines) != 2 {
		t.Fatalf("certificate expiry metrics: %q, want inter-node and inter-node-ca", lines)
	}
}

// TestClusterTLSRefusesStrangers: on a cluster with inter-node TLS, what
// reaches a node's Raft port or internal listener without a node's
// certificate is refused before it is read, and a node's certificate
// speaks only for its own node.
func TestClusterTLSRefusesStrangers(t *testing.T) {
	c, certs := startTLSCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client(1))
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "kept"); err != nil {
		t.Fatal(err)
	}
	controller := c.controller(t)
	raftAddr := c.quorum[controller-1].Addr

	t.Run("plaintext controller RPC", func(t *testing.T) {
		conn, err := net.Dial("tcp", raftAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A registration as it travels without TLS: 'S', a length, JSON.
		if _, err := conn.Write(rpcFrame(t, map[string]any{"register": map[string]any{"ID": 7, "IncarnationID": "evil"}})); err != nil {
			t.Fatal(err)
		}
		expectClosedSilently(t, conn)
	})
	t.Run("plaintext Kafka on the internal listener", func(t *testing.T) {
		wc, err := wire.Dialer{}.Dial(ctx, c.nodes[controller].InternalAddr(), "attacker")
		if err != nil {
			t.Fatal(err)
		}
		defer wc.Close()
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.TopicNames = []string{"kept"}
		env := kmsg.NewPtrEnvelopeRequest()
		env.RequestData = wire.AppendRequest(nil, del, 1, "attacker")[4:]
		if _, err := wc.RoundTrip(env, time.Now().Add(10*time.Second)); err == nil {
			t.Fatal("a plaintext Envelope got an answer")
		}
	})
	t.Run("a client certificate fetching as a replica", func(t *testing.T) {
		alice, err := certs.ca.Client("alice")
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.Dial("tcp", c.nodes[controller].InternalAddr(), &tls.Config{
			Certificates: []tls.Certificate{alice.TLS}, RootCAs: certs.ca.Pool(), InsecureSkipVerify: true})
		if err == nil {
			defer conn.Close()
			f := kmsg.NewPtrFetchRequest()
			f.Version, f.ReplicaID = 11, 2
			_, _ = conn.Write(wire.AppendRequest(nil, f, 1, "alice"))
			expectClosedSilently(t, conn)
		}
	})
	t.Run("a node registering as another", func(t *testing.T) {
		other := int32(1)
		if other == controller {
			other = 2
		}
		src, err := nodetls.Load(certs.files(other), other, nil)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := src.Dial(ctx, &net.Dialer{}, raftAddr, controller)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		victim := 6 - controller - other // the third node
		// Its hello names its own cluster, as a node's does: the check
		// under test is the sender's.
		meta, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(helloFrame(t, meta.Cluster, other)); err != nil {
			t.Fatal(err)
		}
		var hello struct{ Cluster, Code, Err string }
		if readRPC(t, conn, &hello); hello.Code != "" {
			t.Fatalf("hello refused: %+v", hello)
		}
		if _, err := conn.Write(rpcFrame(t, map[string]any{"register": map[string]any{"ID": victim, "IncarnationID": "impersonator"}})); err != nil {
			t.Fatal(err)
		}
		var resp struct{ Code, Err string }
		readRPC(t, conn, &resp)
		if resp.Code != "not_the_sender" {
			t.Fatalf("node %d's certificate registering node %d: %+v, want not_the_sender", other, victim, resp)
		}
	})
	t.Run("another CA", func(t *testing.T) {
		stranger := newClusterCerts(t)
		src, err := nodetls.Load(stranger.node(t, 4), 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.Dial(ctx, &net.Dialer{}, raftAddr, controller); err == nil {
			t.Fatal("a node of another CA accepted the controller's certificate")
		}
		// The other way round: its certificate presented to the controller.
		raw, err := net.Dial("tcp", raftAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		f := stranger.files(4)
		pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(raw, &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true})
		if _, err := tc.Write(rpcFrame(t, map[string]any{"register": map[string]any{"ID": 4, "IncarnationID": "stranger"}})); err == nil {
			expectClosedSilently(t, tc)
		}
	})
	// Nothing the strangers sent changed the cluster: the topic is there
	// and the brokers are the three.
	md := c.metadata(controller, []string{"kept"})
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != 1 {
		t.Fatalf("topic kept after the attempts: %+v", md.Topics)
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers after the attempts: %v %v", brokers, err)
	}
}

// TestClusterRefusesExposedPlaintext: a node reachable beyond loopback
// will not start without inter-node TLS unless told it may.
func TestClusterRefusesExposedPlaintext(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Addr: "127.0.0.1:0", NodeID: 1, Cluster: &ClusterConfig{
		Quorum: []Voter{{ID: 1, Addr: "127.0.0.1:0"}}, InternalAddr: "127.0.0.1:0"}, AdvertisedAddr: "broker1.example.com:9092"}
	_, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "--inter-node-tls-cert") || !strings.Contains(err.Error(), "advertised broker1.example.com:9092") {
		t.Fatalf("a node advertised beyond loopback without TLS: %v", err)
	}
}

// controller is the node leading the metadata quorum.
func (c *testCluster) controller(t *testing.T) int32 {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for id, b := range c.nodes {
			if b.b.IsController() {
				return id
			}
		}
	}
	t.Fatal("no controller")
	return 0
}

// helloFrame is the cluster-id hello that opens every connection on the
// raft port (internal/cluster/quorum/hello.go), for a controller RPC.
func helloFrame(t *testing.T, clusterID string, node int32) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"cluster": clusterID, "node": node, "rpc": true})
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{'H'}
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

// rpcFrame is a controller RPC as it travels on the raft port.
func rpcFrame(t *testing.T, req any) []byte {
	t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := []byte{'S'}
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

func readRPC(t *testing.T, conn net.Conn, v any) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		t.Fatalf("controller RPC answer: %v", err)
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// expectClosedSilently waits for conn to be closed without an answer.
func expectClosedSilently(t *testing.T, conn net.Conn) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	b, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the node neither answered nor closed the connection in 15 s")
	}
	if len(b) > 0 && !looksLikeTLSAlert(b) {
		t.Fatalf("the node answered %d bytes (%q) to a peer without a node certificate", len(b), b[:min(len(b), 40)])
	}
}

// looksLikeTLSAlert: a TLS server may answer plaintext with an alert
// record (content type 21) or HTTP-ish text; neither is Raft or Kafka.
func looksLikeTLSAlert(b []byte) bool {
	return b[0] == 21 || strings.HasPrefix(string(b), "HTTP/1.0 400")
}
