package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/testcert"
	"github.com/strandmq/strand/internal/wire"
)

// secure makes the cluster's nodes talk mutual TLS: a CA and a
// certificate for each node (one more for a node added later), valid for
// a day.
func (c *procCluster) secure(t *testing.T) {
	t.Helper()
	c.secureFor(t, 24*time.Hour)
}

func (c *procCluster) secureFor(t *testing.T, validFor time.Duration) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	c.certs, c.ca = t.TempDir(), ca
	if _, err := ca.WriteFile(c.certs, "ca"); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= c.size+1; n++ {
		writeNodeCert(t, ca, c.certs, int32(n), validFor)
	}
	return ca
}

func writeNodeCert(t *testing.T, ca *testcert.CA, dir string, id int32, validFor time.Duration) {
	t.Helper()
	leaf, err := ca.Node(id, validFor)
	if err != nil {
		t.Fatal(err)
	}
	// Replace, not rewrite in place: a node reloading mid-write must see
	// the old pair or the new, never half of one.
	tmp := t.TempDir()
	cert, key, err := leaf.WriteFiles(tmp, nodetls.NodeCommonName(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{key, cert} {
		if err := os.Rename(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
}

// tlsFlags are node n's inter-node TLS flags.
func (c *procCluster) tlsFlags(n int) []string {
	base := filepath.Join(c.certs, nodetls.NodeCommonName(int32(n)))
	return []string{"--inter-node-tls-cert", base + ".crt", "--inter-node-tls-key", base + ".key",
		"--inter-node-tls-ca", filepath.Join(c.certs, "ca.crt")}
}

// newSecuredCluster is the shape a cluster spanning machines runs in:
// mutual TLS between nodes, SASL for clients, ACLs with admin a super
// user; each node's internal listener on a known address.
func newSecuredCluster(t *testing.T) (c *procCluster, admin *kgo.Client, internal []string) {
	t.Helper()
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("admin:admin-secret\nalice:alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = newCluster(3, []string{"--sasl-users", users, "--authorizer", "--super-users", "User:admin"})
	c.secure(t)
	internal = make([]string, 4)
	for n := 1; n <= 3; n++ {
		internal[n] = freeAddr(t)
		c.own[n] = []string{"--internal-listen", internal[n]}
	}
	startProcCluster(t, c)
	admin, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.brokers(0), ",")...),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	awaitBrokers(t, admin, 3)
	return c, admin, internal
}

// quorum is the metadata quorum's leader and raft term.
func quorum(ctx context.Context, t *testing.T, cl *kgo.Client) (leader, term int32) {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 && len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == 0 && p.LeaderID >= 0 {
				return p.LeaderID, p.LeaderEpoch
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeQuorum: %v %+v", err, resp)
		}
	}
}

// TestSecuredClusterRefusesStrangers: three `strand serve` processes with
// mutual TLS between them, SASL and ACLs for clients. What an attacker on
// the same network tries is refused and changes nothing: an Envelope
// (DeleteTopics) with no credentials to the controller's internal
// listener, a plaintext Raft AppendEntries with a higher term, a
// registration in node 2's name with node 1's certificate, a replica
// Fetch with a client's certificate, a node whose certificate another CA
// signed, and a node started with another node's certificate.
func TestSecuredClusterRefusesStrangers(t *testing.T) {
	c, admin, internal := newSecuredCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "precious"); err != nil {
		t.Fatal(err)
	}
	leader, term := quorum(ctx, t, admin)
	raftAddr := strings.Split(strings.Split(c.quorum, ",")[leader-1], "@")[1]

	// The attack that deleted a topic before inter-node TLS.
	if wc, err := (wire.Dialer{}).Dial(ctx, internal[leader], "attacker"); err == nil {
		del := kmsg.NewPtrDeleteTopicsRequest()
		del.TopicNames = []string{"precious"}
		del.Version = 4
		env := kmsg.NewPtrEnvelopeRequest()
		env.RequestData = wire.AppendRequest(nil, del, 1, "attacker")[4:]
		if resp, err := wc.RoundTrip(env, time.Now().Add(10*time.Second)); err == nil {
			t.Fatalf("an unauthenticated Envelope was answered: %+v", resp)
		}
		wc.Close()
	}

	// Plaintext Raft, with raft's own transport: a term far ahead, which
	// would depose the leader if it were heard.
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var aeResp raft.AppendEntriesResponse
	aeErr := trans.AppendEntries(raft.ServerID(fmt.Sprint(leader)), raft.ServerAddress(raftAddr),
		&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("9"), Addr: []byte(trans.LocalAddr())}, Term: uint64(term) + 100, LeaderCommitIndex: 1 << 40}, &aeResp)
	trans.Close()
	if aeErr == nil {
		t.Fatalf("a plaintext AppendEntries was answered: %+v", aeResp)
	}

	// A registration in another node's name, over TLS with a real node
	// certificate (a stolen one, or a compromised node).
	other := int32(1 + leader%3)
	victim := 6 - leader - other
	src, err := nodetls.Load(nodetls.Files{Cert: filepath.Join(c.certs, nodetls.NodeCommonName(other)+".crt"),
		Key: filepath.Join(c.certs, nodetls.NodeCommonName(other)+".key"), CA: filepath.Join(c.certs, "ca.crt")}, other, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := src.Dial(ctx, &net.Dialer{}, raftAddr, leader)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	readFrame := func(v any) {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(body, v)
	}
	// Every connection on the raft port opens with the cluster-id hello
	// (quorum/hello.go); one that names no cluster passes it, and the
	// check under test is the sender's.
	hello, _ := json.Marshal(map[string]any{"cluster": "", "node": other, "rpc": true})
	_, _ = conn.Write(binary.BigEndian.AppendUint32([]byte{'H'}, uint32(len(hello))))
	_, _ = conn.Write(hello)
	var helloReply struct{ Cluster, Code, Err string }
	if readFrame(&helloReply); helloReply.Code != "" {
		t.Fatalf("hello refused: %+v", helloReply)
	}
	frame, _ := json.Marshal(map[string]any{"register": map[string]any{"ID": victim, "IncarnationID": "impersonator"}})
	_, _ = conn.Write(binary.BigEndian.AppendUint32([]byte{'S'}, uint32(len(frame))))
	_, _ = conn.Write(frame)
	var reply struct{ Code, Err string }
	readFrame(&reply)
	conn.Close()
	if reply.Code != "not_the_sender" {
		t.Fatalf("node %d's certificate registering node %d: %+v", other, victim, reply)
	}

	// A replica Fetch with a client's certificate from the same CA.
	alice, err := c.ca.Client("alice")
	if err != nil {
		t.Fatal(err)
	}
	if tc, err := tls.Dial("tcp", internal[leader], &tls.Config{Certificates: []tls.Certificate{alice.TLS}, InsecureSkipVerify: true}); err == nil {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.ReplicaID = 11, other
		_, _ = tc.Write(wire.AppendRequest(nil, f, 1, "alice"))
		_ = tc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, _ := io.ReadAll(tc); len(b) > 0 {
			t.Fatalf("a client certificate's replica Fetch was answered %d bytes", len(b))
		}
		tc.Close()
	}

	// A node whose certificate another CA signed (it believes itself a
	// voter of a quorum with the three, so it asks them for votes), and
	// one started with another node's certificate.
	stranger := newCluster(4, nil)
	stranger.secure(t)
	quorum4 := c.quorum + ",4@" + freeAddr(t)
	p4 := launchServe(t, 0, append([]string{"--node-id", "4", "--listen", freeAddr(t), "--data-dir", filepath.Join(t.TempDir(), "n4"),
		"--controller-quorum", quorum4}, stranger.tlsFlags(4)...)...)
	impostor := launchServe(t, 0, append([]string{"--node-id", "4", "--listen", freeAddr(t), "--data-dir", filepath.Join(t.TempDir(), "n4b"),
		"--controller-quorum", quorum4}, c.tlsFlags(2)...)...)
	if err := impostor.wait(t, 20*time.Second); err == nil || !impostor.contains("names node 2, not this node (4)") {
		t.Fatalf("a node started with node 2's certificate: %v\n%s", err, impostor.logs.String())
	}
	// Node 4 refuses the cluster's certificates (TLS 1.3: the dialler
	// checks the server's first) and the cluster's nodes log the refusal.
	p4.logged(t, regexp.MustCompile(`(certificate signed by unknown authority)`))
	refused := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !refused; time.Sleep(200 * time.Millisecond) {
		for n := 1; n <= 3; n++ {
			refused = refused || c.procs[n].contains("certificate signed by unknown authority") || c.procs[n].contains("tls: bad certificate")
		}
	}
	if !refused {
		t.Fatalf("no node logged refusing node 4 of another CA\n%s", c.tailLogs(20))
	}
	_ = p4.cmd.Process.Kill() // it never finished starting: no quorum would have it
	_ = p4.wait(t, 10*time.Second)

	// Nothing changed: the topic, the three brokers, the quorum's term.
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has("precious") {
		t.Fatalf("topics after the attempts: %v %v", topics.Names(), err)
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers after the attempts: %v %v", brokers.NodeIDs(), err)
	}
	if l2, term2 := quorum(ctx, t, admin); l2 != leader || term2 != term {
		t.Fatalf("quorum leader/term %d/%d after the attempts, %d/%d before", l2, term2, leader, term)
	}
}

// TestSecuredClusterCertRotation replaces every node's certificate under
// an idempotent acks=all load and signals SIGHUP: nothing acknowledged is
// lost, and after the old certificates expire the cluster still
// replicates (every connection made with them was closed and remade).
func TestSecuredClusterCertRotation(t *testing.T) {
	c := newCluster(3, []string{"--replica-lag-time-max", "3s"})
	const firstValid = 45 * time.Second
	ca := c.secureFor(t, firstValid)
	issued := time.Now()
	startProcCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ch, prod, stopLoad := c.startLoad(ctx, t, "rot", 300)
	c.load = ch
	time.Sleep(3 * time.Second)
	for n := 1; n <= 3; n++ {
		writeNodeCert(t, ca, c.certs, int32(n), 24*time.Hour)
		if err := c.procs[n].cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		c.procs[n].logged(t, regexp.MustCompile("(certificates reloaded)"))
		time.Sleep(time.Second)
	}
	// Past the first certificates' expiry, with the load running.
	time.Sleep(time.Until(issued.Add(firstValid + 5*time.Second)))
	closed := 0
	for n := 1; n <= 3; n++ {
		closed += strings.Count(c.procs[n].logs.String(), "closing a connection whose certificate expired")
	}
	c.waitInSync(ctx, t, "rot", 30*time.Second)
	time.Sleep(2 * time.Second) // acknowledgements after the expiry
	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()
	t.Log(ch.verify(t, finalLog(ctx, t, c.brokers(0), "rot")))
	t.Logf("connections closed at the old certificates' expiry: %d", closed)
	if closed == 0 {
		// Raft's pooled connections and the replica fetchers' outlive a
		// reload: they must have been closed when the old ones expired.
		t.Fatal("no connection made with the old certificates was closed at their expiry")
	}
	for n := 1; n <= 3; n++ {
		c.procs[n].stop(t)
	}
	checkReplicasConverged(t, c.dirs[1:], "rot", 3)
}
