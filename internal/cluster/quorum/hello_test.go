package quorum

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// logBuffer is a slog sink a test reads back.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// helloListener serves a mux on loopback whose hellos check against id
// (strict: silent connections refused); raft streams that pass it are
// echoed one byte, controller RPCs answered empty.
func helloListener(t *testing.T, id string, strict bool, member func(int32, string) bool, logs *logBuffer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var all connSet
	ident := &identity{node: 9, cluster: func() string { return id }, strict: func() bool { return strict }, member: member, logger: logs.logger()}
	m := newMuxListener(ln, ident, func(cluster.NodeID, rpcRequest) rpcResponse { return rpcResponse{Index: 7} }, nil, &all)
	t.Cleanup(func() { m.Close(); all.closeAll() })
	go func() {
		for {
			c, err := m.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err == nil {
					_, _ = c.Write(b)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHelloRules: the cluster-id hello on the raft port, both ways — two
// known ids that differ are refused on both sides with
// ErrInconsistentClusterID and logged with both ids; an unknown id on
// either side is let through; a connection without a hello passes only
// below MetadataVersionClusterID.
func TestHelloRules(t *testing.T) {
	for _, tc := range []struct {
		name, dialer, acceptor string
		strict, silent         bool
		// stranger: the dialer is not in the acceptor's raft
		// configuration.
		stranger bool
		refused  bool
	}{
		{name: "same cluster", dialer: "a", acceptor: "a"},
		{name: "other cluster", dialer: "b", acceptor: "a", refused: true},
		{name: "other cluster, strict", dialer: "b", acceptor: "a", strict: true, refused: true},
		{name: "dialer knows none yet", dialer: "", acceptor: "a", strict: true},
		{name: "acceptor knows none yet", dialer: "b", acceptor: ""},
		{name: "acceptor knows none yet, dialer not in its quorum", dialer: "b", acceptor: "", stranger: true, refused: true},
		{name: "neither knows one, dialer not in its quorum", dialer: "", acceptor: "", stranger: true},
		{name: "dialer not in its quorum, same cluster", dialer: "a", acceptor: "a", stranger: true},
		{name: "no hello, below the level", silent: true, acceptor: "a"},
		{name: "no hello, at the level", silent: true, acceptor: "a", strict: true, refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var acceptLogs, dialLogs logBuffer
			member := func(node int32, addr string) bool { return node == 3 && addr == "127.0.0.1:3" && !tc.stranger }
			addr := helloListener(t, tc.acceptor, tc.strict, member, &acceptLogs)
			var nw, rpcNw Network = TCPNetwork{}, TCPNetwork{}
			if !tc.silent {
				id := &identity{node: 3, addr: "127.0.0.1:3", cluster: func() string { return tc.dialer },
					strict: func() bool { return tc.strict }, logger: dialLogs.logger()}
				nw, rpcNw = helloNetwork{Network: TCPNetwork{}, id: id}, helloNetwork{Network: TCPNetwork{}, id: id, rpc: true}
			}
			// A raft stream: one byte out, its echo back.
			c, err := nw.Dial("3", addr, 5*time.Second)
			if err == nil {
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = c.Write([]byte{1})
				if err == nil {
					_, err = io.ReadFull(c, make([]byte, 1))
				}
				c.Close()
			}
			// A controller RPC.
			resp, rpcErr := call(rpcNw, "3", addr, rpcRequest{ReadIndex: true}, 5*time.Second, func() bool { return false })
			if rpcErr == nil && resp.Code != "" {
				rpcErr = cluster.RPCError(resp.Code, resp.Err)
			}
			if !tc.refused {
				if err != nil || rpcErr != nil || resp.Index != 7 {
					t.Fatalf("stream: %v; rpc: %+v %v; want both through", err, resp, rpcErr)
				}
				if s := acceptLogs.String() + dialLogs.String(); s != "" {
					t.Fatalf("logged on an accepted connection:\n%s", s)
				}
				return
			}
			if tc.silent {
				// An older build's connection: raft's is closed, an RPC
				// is told why.
				if err == nil || !errors.Is(rpcErr, cluster.ErrInconsistentClusterID) {
					t.Fatalf("stream: %v; rpc: %v; want both refused", err, rpcErr)
				}
				if !strings.Contains(acceptLogs.String(), "did not say its cluster") {
					t.Fatalf("acceptor's log:\n%s", acceptLogs.String())
				}
				return
			}
			if tc.stranger {
				for _, e := range []error{err, rpcErr} {
					if !errors.Is(e, cluster.ErrInconsistentClusterID) || !strings.Contains(e.Error(), "knows no cluster yet and has no node 3 at \"127.0.0.1:3\"") {
						t.Fatalf("dialer's error %v, want INCONSISTENT_CLUSTER_ID saying the acceptor's quorum lacks it", e)
					}
				}
				if !strings.Contains(acceptLogs.String(), "peer_cluster=b") {
					t.Fatalf("acceptor's log:\n%s", acceptLogs.String())
				}
				return
			}
			for _, e := range []error{err, rpcErr} {
				if !errors.Is(e, cluster.ErrInconsistentClusterID) || !strings.Contains(e.Error(), "belongs to cluster "+tc.dialer) ||
					!strings.Contains(e.Error(), "the node at "+addr+" belongs to cluster "+tc.acceptor) || !strings.Contains(e.Error(), "--controller-quorum") {
					t.Fatalf("dialer's error %v, want INCONSISTENT_CLUSTER_ID naming both clusters, the address and what to do", e)
				}
			}
			for who, l := range map[string]string{"acceptor": acceptLogs.String(), "dialer": dialLogs.String()} {
				if !strings.Contains(l, "this_cluster=") || !strings.Contains(l, "peer_cluster=") || !strings.Contains(l, "peer=") {
					t.Fatalf("the %s's log lacks both ids and the peer:\n%s", who, l)
				}
			}
		})
	}
}

// TestHelloToOlderBuild: a peer of an older build closes on the hello (it
// reads 'H' as an unknown raft RPC); below MetadataVersionClusterID the
// dialer dials it again without one, and at that level it refuses to.
func TestHelloToOlderBuild(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // an older build's raft transport
				defer c.Close()
				b := make([]byte, 1)
				if _, err := io.ReadFull(c, b); err != nil || b[0] == helloMagic {
					return
				}
				_, _ = c.Write(b)
			}()
		}
	}()
	for _, strict := range []bool{false, true} {
		var logs logBuffer
		nw := helloNetwork{Network: TCPNetwork{}, id: &identity{node: 3, cluster: func() string { return "a" },
			strict: func() bool { return strict }, logger: logs.logger()}}
		for i := range 2 { // the second time from the remembered address
			c, err := nw.Dial("3", ln.Addr().String(), 5*time.Second)
			if strict {
				if !errors.Is(err, errHelloUnanswered) {
					t.Fatalf("strict: dial %d: %v, want the unanswered hello", i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("dial %d: %v", i, err)
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
				t.Fatalf("dial %d: the older peer did not answer without a hello: %v", i, err)
			}
			c.Close()
		}
	}
}

// startQuorum opens three voters at addrs (node ids 1–3) that name their
// cluster clusterID; with formatted, each data directory's meta.properties
// names it before the first start (as a formatted Kafka node's does):
// RaftConfig.ClusterID.
func startQuorum(t *testing.T, addrs []string, clusterID string, formatted bool, logs map[int32]*logBuffer) map[int32]*RaftStore {
	t.Helper()
	var voters []Voter
	for i, a := range addrs {
		voters = append(voters, Voter{int32(i + 1), a})
	}
	nodes := map[int32]*RaftStore{}
	for _, v := range voters {
		logs[v.ID] = &logBuffer{}
		rc := RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: voters, Logger: logs[v.ID].logger(),
			Controller: ControllerConfig{ClusterID: clusterID}}
		if formatted {
			rc.ClusterID = clusterID
		}
		s, err := OpenRaftStore(rc)
		if err != nil {
			t.Fatal(err)
		}
		nodes[v.ID] = s
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		named, state := 0, ""
		for id, s := range nodes {
			_, leader, _ := s.Leader()
			state += fmt.Sprintf(" node %d: cluster %q, leader at %q;", id, s.Image().ClusterID(), leader)
			if s.Image().ClusterID() == clusterID {
				named++
			}
		}
		if named == len(nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s not named on every node in 20 s:%s", clusterID, state)
		}
	}
	return nodes
}

func membersOf(t *testing.T, s *RaftStore) []string {
	t.Helper()
	ms, err := s.QuorumMembers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%d@%s voter=%v", m.ID, m.Addr, m.Voter))
	}
	slices.Sort(out)
	return out
}

// TestAnotherClusterRefused is the CI incident: node 3 of cluster A
// stops, and node 3 of a new cluster B takes its raft address. A's
// leader keeps sending to that address — appends, and votes when it
// elects — and without the cluster id B's node followed A's leader (a
// higher term wins in raft): the two quorums merged. With it, B's node
// refuses every connection from A, and A's leader refuses B's node: A's
// membership and metadata are unchanged, B's node stays in B, and both
// sides log the two ids. B's directories are formatted (meta.properties
// names cluster B before the first start) or new: a new node that knows
// no cluster yet refuses A's leader because its own quorum has no node 1
// at A's leader's address.
func TestAnotherClusterRefused(t *testing.T) {
	for _, formatted := range []bool{true, false} {
		t.Run(fmt.Sprintf("formatted=%v", formatted), func(t *testing.T) { anotherClusterRefused(t, formatted) })
	}
}

// startClusterA starts cluster-a, three nodes with a topic of its own,
// and returns their addresses, logs, stores and membership.
func startClusterA(t *testing.T) ([]string, map[int32]*logBuffer, map[int32]*RaftStore, []string) {
	t.Helper()
	aAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	aLogs := map[int32]*logBuffer{}
	a := startQuorum(t, aAddrs, "cluster-a", false, aLogs)
	t.Cleanup(func() {
		for _, s := range a {
			s.Close()
		}
	})
	if _, err := a[1].ApplyWithin(10*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "of-a", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	return aAddrs, aLogs, a, membersOf(t, a[1])
}

func anotherClusterRefused(t *testing.T, formatted bool) {
	aAddrs, aLogs, a, aMembers := startClusterA(t)
	// Node 3 of A stops; A keeps a majority, and its leader keeps trying
	// node 3's address.
	if err := a[3].Close(); err != nil {
		t.Fatal(err)
	}
	delete(a, 3)
	// Raise A's term above any B will have, so without the check B's
	// node 3 would take A's leader for its own.
	for range 3 {
		var leader *RaftStore
		eventually(t, "a leader of A", 20*time.Second, func() bool {
			for _, s := range a {
				if s.r.State().String() == "Leader" {
					leader = s
					return true
				}
			}
			return false
		})
		_ = leader.r.LeadershipTransfer().Error()
	}

	bAddrs := []string{freeAddr(t), freeAddr(t), aAddrs[2]}
	bLogs := map[int32]*logBuffer{}
	b := startQuorum(t, bAddrs, "cluster-b", formatted, bLogs)
	t.Cleanup(func() {
		for _, s := range b {
			s.Close()
		}
	})
	bMembers := membersOf(t, b[3])
	// A changes its metadata while B's node sits at its node 3's
	// address: its leader sends the entry there.
	var aLeader *RaftStore
	eventually(t, "a leader of A", 20*time.Second, func() bool {
		for _, s := range a {
			if s.r.State().String() == "Leader" {
				aLeader = s
				return true
			}
		}
		return false
	})
	if _, err := aLeader.ApplyWithin(10*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "of-a-2", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	refused := func(logs map[int32]*logBuffer, what string) bool {
		for _, l := range logs {
			if strings.Contains(l.String(), what) {
				return true
			}
		}
		return false
	}
	// Until both sides have logged a refusal (a second or two), B's node
	// 3 must follow only B.
	deadline := time.Now().Add(30 * time.Second)
	for !(refused(bLogs, "refused a raft-port connection from a node of") && refused(aLogs, "belongs to another cluster")) {
		if time.Now().After(deadline) {
			t.Fatalf("no refusal logged in 30 s\nA:\n%s\nB:\n%s", aLogs[1].String()+aLogs[2].String(), bLogs[3].String())
		}
		if _, addr, ok := b[3].Leader(); ok && !slices.Contains(bAddrs, addr) {
			t.Fatalf("B's node 3 follows %s, a leader of cluster A", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // more of A's retries
	if _, addr, ok := b[3].Leader(); ok && !slices.Contains(bAddrs, addr) {
		t.Fatalf("B's node 3 follows %s, a leader of cluster A", addr)
	}
	// B's node registering as a broker with A's controller: refused,
	// and A registers nothing.
	_, leaderAddr, _ := aLeader.Leader()
	resp, err := call(b[3].peers, "3", leaderAddr, rpcRequest{Register: &cluster.Registration{ID: 3, IncarnationID: "b3", Features: cluster.SupportedFeatures()}},
		5*time.Second, func() bool { return false })
	if !errors.Is(err, cluster.ErrInconsistentClusterID) {
		t.Fatalf("B's node registering with A's controller: %+v, %v; want INCONSISTENT_CLUSTER_ID", resp, err)
	}
	if got := b[3].Image(); got.ClusterID() != "cluster-b" || len(got.Topics()) != 0 {
		t.Fatalf("B's node 3 holds cluster %q with topics %v: it took A's log", got.ClusterID(), got.Topics())
	}
	if got := membersOf(t, b[3]); !slices.Equal(got, bMembers) {
		t.Fatalf("B's quorum is %v, was %v", got, bMembers)
	}
	for id, s := range a {
		if got := membersOf(t, s); !slices.Equal(got, aMembers) {
			t.Fatalf("A's quorum on node %d is %v, was %v", id, got, aMembers)
		}
		if img := s.Image(); img.ClusterID() != "cluster-a" || len(img.Topics()) != 2 {
			t.Fatalf("A's node %d holds cluster %q with %d topics", id, img.ClusterID(), len(img.Topics()))
		}
		if _, ok := s.Image().Broker(3); ok {
			t.Fatalf("A's node %d has a broker 3 registered", id)
		}
	}
	l := bLogs[3].String()
	if !strings.Contains(l, "peer_cluster=cluster-a") || formatted && !strings.Contains(l, "this_cluster=cluster-b") {
		t.Fatalf("B's node 3 logged no mismatch naming both clusters:\n%s", l)
	}
}

// TestObserverOfAnotherClusterRefused: a broker-only node whose data
// directory is cluster B's, pointed at cluster A's voters, is never added
// to A's quorum; it logs what to do.
func TestObserverOfAnotherClusterRefused(t *testing.T) {
	aAddrs := []string{freeAddr(t), freeAddr(t), freeAddr(t)}
	a := startQuorum(t, aAddrs, "cluster-a", false, map[int32]*logBuffer{})
	t.Cleanup(func() {
		for _, s := range a {
			s.Close()
		}
	})
	before := membersOf(t, a[1])
	var logs logBuffer
	var voters []Voter
	for i, addr := range aAddrs {
		voters = append(voters, Voter{int32(i + 1), addr})
	}
	obs, err := OpenRaftStore(RaftConfig{NodeID: 4, Dir: t.TempDir(), ClusterID: "cluster-b", Bind: "127.0.0.1:0", Voters: voters, Observer: true, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	eventually(t, "the observer's refusal logged", 20*time.Second, func() bool {
		return strings.Contains(logs.String(), "another cluster's; not joining it")
	})
	l := logs.String()
	for _, want := range []string{"belongs to cluster cluster-b", "belongs to cluster cluster-a", "--controller-quorum", "empty data directory"} {
		if !strings.Contains(l, want) {
			t.Fatalf("the observer's log lacks %q:\n%s", want, l)
		}
	}
	if got := membersOf(t, a[1]); !slices.Equal(got, before) {
		t.Fatalf("A's quorum is %v, was %v: the other cluster's node joined", got, before)
	}
	if obs.Image().ClusterID() != "" {
		t.Fatalf("the observer applied cluster %q's log", obs.Image().ClusterID())
	}
}

// TestUnnamedDialerOnRaftNeedsMembership: a node that knows no cluster
// yet may open a controller RPC to a named node (to join), but a raft
// connection only if the named node's quorum has it at its address — a
// new cluster's unnamed leader must not make another cluster's node
// follow it.
func TestUnnamedDialerOnRaftNeedsMembership(t *testing.T) {
	for _, member := range []bool{false, true} {
		var acceptLogs, dialLogs logBuffer
		addr := helloListener(t, "a", true, func(int32, string) bool { return member }, &acceptLogs)
		id := &identity{node: 3, addr: "127.0.0.1:3", cluster: func() string { return "" }, strict: func() bool { return true }, logger: dialLogs.logger()}
		c, err := helloNetwork{Network: TCPNetwork{}, id: id}.Dial("3", addr, 5*time.Second)
		if err == nil {
			c.Close()
		}
		if member != (err == nil) || !member && (!errors.Is(err, cluster.ErrInconsistentClusterID) || !strings.Contains(err.Error(), "whose quorum has no node 3")) {
			t.Fatalf("member %v: raft connection: %v", member, err)
		}
		if !member && !strings.Contains(acceptLogs.String(), "not in this quorum") {
			t.Fatalf("acceptor's log:\n%s", acceptLogs.String())
		}
		resp, err := call(helloNetwork{Network: TCPNetwork{}, id: id, rpc: true}, "3", addr, rpcRequest{ReadIndex: true}, 5*time.Second, func() bool { return false })
		if err != nil || resp.Index != 7 {
			t.Fatalf("member %v: controller RPC: %+v %v, want it through", member, resp, err)
		}
	}
}

// TestNewQuorumListingAnotherClustersNode is the incident the other way
// round: a new cluster B's configuration lists, as its node 3, the raft
// address of a running node of cluster A. B's first leader is unnamed
// until its first entry commits, and raft takes a heartbeat of an equal
// or higher term from any leader: were its connections let through, A's
// node 3 could follow it and cut its log to B's. (Whether it does depends
// on the two clusters' terms and raft's pre-vote, so this test guards the
// outcome; TestUnnamedDialerOnRaftNeedsMembership pins the rule.) A's
// node 3 refuses B's raft connections, named or not, and stays in A with
// A's metadata and leader; B runs on its two nodes.
func TestNewQuorumListingAnotherClustersNode(t *testing.T) {
	aAddrs, aLogs, a, aMembers := startClusterA(t)
	bVoters := []Voter{{1, freeAddr(t)}, {2, freeAddr(t)}, {3, aAddrs[2]}}
	var b []*RaftStore
	t.Cleanup(func() {
		for _, s := range b {
			s.Close()
		}
	})
	for _, v := range bVoters[:2] {
		s, err := OpenRaftStore(RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: bVoters, Controller: ControllerConfig{ClusterID: "cluster-b"}})
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, s)
	}
	eventually(t, "B named on its two nodes", 20*time.Second, func() bool {
		return b[0].Image().ClusterID() == "cluster-b" && b[1].Image().ClusterID() == "cluster-b"
	})
	eventually(t, "A's node 3 refusing B", 20*time.Second, func() bool {
		return strings.Contains(aLogs[3].String(), "refused a raft")
	})
	time.Sleep(2 * time.Second) // B's leader keeps sending
	for id, s := range a {
		if _, addr, ok := s.Leader(); ok && !slices.Contains(aAddrs, addr) {
			t.Fatalf("A's node %d follows %s, B's leader", id, addr)
		}
		if img := s.Image(); img.ClusterID() != "cluster-a" || len(img.Topics()) != 1 {
			t.Fatalf("A's node %d holds cluster %q with %d topics", id, img.ClusterID(), len(img.Topics()))
		}
		if got := membersOf(t, s); !slices.Equal(got, aMembers) {
			t.Fatalf("A's quorum on node %d is %v, was %v", id, got, aMembers)
		}
	}
	// A still commits, and its node 3 applies the change.
	if _, err := a[3].ApplyWithin(10*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "of-a-2", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "A's node 3 applying A's change", 10*time.Second, func() bool { return len(a[3].Image().Topics()) == 2 })
}

// FuzzHello feeds arbitrary bytes to the raft port's hello check, as a
// stranger's connection would open (after the 'H' the mux consumed): it
// never panics, and anything that is not a well-formed hello of an
// acceptable cluster is refused. Inputs are read in two parts.
func FuzzHello(f *testing.F) {
	for _, h := range []hello{{Cluster: "a", Node: 1, Addr: "127.0.0.1:1"}, {Cluster: "b", Node: 2}, {Cluster: "", Node: 3, RPC: true}, {}} {
		var b bytes.Buffer
		_ = writeFrame(&b, h)
		f.Add(b.Bytes(), 3)
	}
	f.Add([]byte{0, 0, 0, 2, '{', '}'}, 1)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 2)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		id := &identity{node: 9, cluster: func() string { return "a" }, strict: func() bool { return true },
			member: func(node int32, addr string) bool { return node == 1 && addr == "127.0.0.1:1" }, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		// The bytes come from data (in two parts, the first a byte at a
		// time); the answer goes to a pipe drained on the other side.
		server, client := net.Pipe()
		defer server.Close()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		defer client.Close()
		cut = min(max(cut, 0), len(data))
		r := bufio.NewReader(io.MultiReader(iotest.OneByteReader(bytes.NewReader(data[:cut])), bytes.NewReader(data[cut:])))
		hi, err := id.accept(server, r)
		if err == nil && hi.Cluster != "" && hi.Cluster != "a" {
			t.Fatalf("accepted a hello of cluster %q", hi.Cluster)
		}
		if err == nil && hi.Cluster == "" && !hi.RPC && !(hi.Node == 1 && hi.Addr == "127.0.0.1:1") {
			t.Fatalf("accepted an unnamed raft connection from a node not in the quorum: %+v", hi)
		}
	})
}
