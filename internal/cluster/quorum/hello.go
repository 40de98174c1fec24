package quorum

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// Every connection on the raft port opens with a hello that names the
// dialer's cluster, as every KRaft RPC carries its ClusterId (Kafka's
// KafkaRaftClient.hasValidClusterId): a node that reaches another
// cluster's raft port — an address reused after a node of that cluster
// stopped, a wrong --controller-quorum — is refused before raft or the
// controller reads a byte of what it sends, so it is granted no vote,
// appends no entry, registers nothing, and is not absorbed into the
// other quorum.
//
//	dialer → acceptor: 'H' | len uint32 | JSON {"cluster":"…","node":N,"addr":"host:port"}
//	acceptor → dialer:       len uint32 | JSON {"cluster":"…","code":"…","err":"…"}
//
// ("cluster" "" while the node knows none; "addr" the dialer's raft
// address; "code" "" when accepted, else "inconsistent_cluster_id".)
//
// then the connection goes on as before: raft's RPC type byte, or
// rpcMagic and one controller RPC. A hello is once per connection, not per
// RPC: raft keeps its connections pooled, so it costs one round trip per
// connection, and a connection cannot change cluster midway.
//
// The rules (both sides check; either refuses with
// cluster.ErrInconsistentClusterID):
//   - Two known ids that differ: refused. The acceptor answers with the
//     code and closes; both log both ids and the peer's address.
//   - A dialer that knows no id yet ("": a new node whose quorum has not
//     named the cluster, or one waiting to be added), on a controller
//     RPC: accepted. Kafka accepts a null ClusterId from old clients too;
//     here it is what a node that has yet to learn its cluster sends to
//     join (the Observer RPC), and the controller decides what it may do.
//   - The same on a raft stream: accepted only if the acceptor's raft
//     configuration has the dialer under its id at the raft address its
//     hello gives. A new cluster's leader is unnamed until its first
//     entry commits, and raft obeys a higher term at once: were the new
//     cluster's configuration to list a running node of another cluster,
//     its first heartbeat (and the pooled connection it opens, which
//     outlives the naming) would make that node follow it and truncate
//     its log to the new one's.
//   - An acceptor that knows no id yet, and a dialer that names one: the
//     dialer must be in the acceptor's raft configuration under its id at
//     the raft address its hello gives — a voter the new node was started
//     with. This is the CI incident's other form: a new node started on
//     the address of a stopped node of a running cluster would otherwise
//     take that cluster's leader for its own before its own quorum named
//     it. A node with no configuration at all (one waiting for add-voter,
//     or a broker-only node joining) has nothing to check against and
//     trusts the first quorum that reaches it — the limit OPERATIONS.md
//     states.
//   - No hello at all (an older build): accepted while the finalized
//     metadata.version is below MetadataVersionClusterID — a rolling
//     upgrade mixes builds — and refused from that level on. A dialer
//     whose hello the peer answers by closing (an older build reads 'H'
//     as an unknown raft RPC) dials it again without one, below that
//     level only, and remembers the address for helloSkipFor.
const helloMagic byte = 'H'

// maxHelloBytes bounds a hello: a stranger's connection must not make the
// acceptor allocate a controller RPC's 64 MiB before it is checked.
const maxHelloBytes = 4 << 10

// helloSkipFor is how long a dialer sends no hello to an address that
// closed on one (an older build, during a rolling upgrade), rather than
// paying a refused hello on every connection to it.
const helloSkipFor = time.Minute

type hello struct {
	Cluster string `json:"cluster"`
	Node    int32  `json:"node"`
	// Addr is the dialer's raft address, as its quorum knows it.
	Addr string `json:"addr,omitempty"`
	// RPC says the connection carries a controller RPC (rpcMagic next),
	// not raft's transport.
	RPC bool `json:"rpc,omitempty"`
}

type helloReply struct {
	Cluster string `json:"cluster"`
	Code    string `json:"code,omitempty"`
	Err     string `json:"err,omitempty"`
}

// errHelloUnanswered: the peer closed (or went quiet) on a hello without
// answering it — an older build, or a peer going away.
var errHelloUnanswered = errors.New("cluster: the peer did not answer the cluster-id hello")

// identity is what a node says and checks in hellos.
type identity struct {
	node cluster.NodeID
	// cluster returns this node's cluster id, "" while it is unknown.
	cluster func() string
	// strict says whether a connection without a hello is refused (the
	// finalized metadata.version is MetadataVersionClusterID or more).
	strict func() bool
	// addr is this node's raft address, as its hellos give it.
	addr string
	// member says whether node at addr is in this node's raft
	// configuration, or that it has none (nil: everyone is).
	member func(node int32, addr string) bool
	logger *slog.Logger

	mu struct {
		sync.Mutex
		skip   map[string]time.Time // address → until when no hello is sent
		logged map[string]time.Time // log key → last logged
		// foreign is the last refusal by a peer that named another
		// cluster than this node's (RaftStore.CatchUp reports it).
		foreign error
	}
}

// foreignRefusal is the last refusal of this node by a peer of another
// named cluster, nil if none.
func (h *identity) foreignRefusal() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.foreign
}

// logEvery bounds how often one refusal is logged: a stranger's leader
// retries every heartbeat.
const logEvery = 10 * time.Second

// logRefusal logs msg unless the same key was logged within logEvery.
func (h *identity) logRefusal(key, msg string, args ...any) {
	h.mu.Lock()
	if h.mu.logged == nil {
		h.mu.logged = map[string]time.Time{}
	}
	last, seen := h.mu.logged[key]
	now := time.Now()
	if seen && now.Sub(last) < logEvery {
		h.mu.Unlock()
		return
	}
	h.mu.logged[key] = now
	h.mu.Unlock()
	h.logger.Error(msg, args...)
}

func (h *identity) skipHello(addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	until, ok := h.mu.skip[addr]
	if ok && time.Now().After(until) {
		delete(h.mu.skip, addr)
		return false
	}
	return ok
}

func (h *identity) markNoHello(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.skip == nil {
		h.mu.skip = map[string]time.Time{}
	}
	h.mu.skip[addr] = time.Now().Add(helloSkipFor)
}

// mismatch is the error both sides report for two clusters' ids, worded
// for the operator of this node.
func mismatch(mine, theirs, addr string) error {
	return fmt.Errorf("%w: this node's data directory belongs to cluster %s; the node at %s belongs to cluster %s. "+
		"Check --controller-quorum (and --raft-addr): every address there must be a node of cluster %s. "+
		"To make this node a member of cluster %s instead, start it with an empty data directory",
		cluster.ErrInconsistentClusterID, mine, addr, theirs, mine, theirs)
}

// greet sends c's hello and checks the answer; c is dialled to addr, for
// a controller RPC if rpc.
func (h *identity) greet(c net.Conn, addr string, rpc bool, deadline time.Time) error {
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	mine := h.cluster()
	if _, err := c.Write([]byte{helloMagic}); err != nil {
		return fmt.Errorf("%w: %w", errHelloUnanswered, err)
	}
	if err := writeFrame(c, hello{Cluster: mine, Node: int32(h.node), Addr: h.addr, RPC: rpc}); err != nil {
		return fmt.Errorf("%w: %w", errHelloUnanswered, err)
	}
	var rep helloReply
	if err := readFrame(c, &rep); err != nil {
		return fmt.Errorf("%w: %w", errHelloUnanswered, err)
	}
	if rep.Code != "" || (mine != "" && rep.Cluster != "" && rep.Cluster != mine) {
		err := mismatch(mine, rep.Cluster, addr)
		if rep.Cluster == "" || mine == "" {
			err = fmt.Errorf("%w: the node at %s refused this node (node %d at %s, cluster %q): %s", cluster.ErrInconsistentClusterID, addr, h.node, h.addr, mine, rep.Err)
		}
		h.logRefusal("dial "+addr+" "+rep.Cluster, "cluster: refused: the raft port dialled belongs to another cluster",
			"this_cluster", mine, "peer_cluster", rep.Cluster, "peer", addr, "err", err)
		if mine != "" && rep.Cluster != "" && rep.Cluster != mine {
			h.mu.Lock()
			h.mu.foreign = err
			h.mu.Unlock()
		}
		return err
	}
	return nil
}

// accept reads a connection's hello (its first byte, helloMagic, already
// consumed from r) and answers it: nil lets the connection go on.
func (h *identity) accept(c net.Conn, r *bufio.Reader) (hello, error) {
	var hi hello
	b, err := readFrameWithin(r, maxHelloBytes)
	if err == nil {
		err = json.Unmarshal(b, &hi)
	}
	if err != nil {
		return hi, fmt.Errorf("cluster: reading a raft-port hello: %w", err)
	}
	return hi, h.check(c, hi)
}

// check decides on hello hi and answers it.
func (h *identity) check(c net.Conn, hi hello) error {
	mine := h.cluster()
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	defer c.SetWriteDeadline(time.Time{})
	if mine != "" && hi.Cluster != "" && hi.Cluster != mine {
		err := fmt.Errorf("%w: node %d of cluster %s, at %s, reached node %d of cluster %s; a node of cluster %s lists this address "+
			"(a wrong --controller-quorum there, or an address its node left and this one took)",
			cluster.ErrInconsistentClusterID, hi.Node, hi.Cluster, c.RemoteAddr(), h.node, mine, hi.Cluster)
		h.logRefusal(fmt.Sprintf("accept %s %d %s", hostOf(c.RemoteAddr()), hi.Node, hi.Cluster),
			"cluster: refused a raft-port connection from a node of another cluster",
			"this_cluster", mine, "peer_cluster", hi.Cluster, "peer_node", hi.Node, "peer", c.RemoteAddr().String(), "err", err)
		_ = writeFrame(c, helloReply{Cluster: mine, Code: cluster.RPCFailure(cluster.ErrInconsistentClusterID).Code, Err: err.Error()})
		return err
	}
	if mine != "" && hi.Cluster == "" && !hi.RPC && h.member != nil && !h.member(hi.Node, hi.Addr) {
		err := fmt.Errorf("%w: node %d at %s (raft address %q), which knows no cluster yet, opened a raft connection to node %d of cluster %s, "+
			"whose quorum has no node %d at %q: a new quorum lists this address (a wrong --controller-quorum there, or an address reused)",
			cluster.ErrInconsistentClusterID, hi.Node, c.RemoteAddr(), hi.Addr, h.node, mine, hi.Node, hi.Addr)
		h.logRefusal(fmt.Sprintf("unnamed %s %d", hostOf(c.RemoteAddr()), hi.Node),
			"cluster: refused a raft connection from a new node that is not in this quorum",
			"this_cluster", mine, "peer_cluster", hi.Cluster, "peer_node", hi.Node, "peer", c.RemoteAddr().String(), "peer_raft_addr", hi.Addr, "err", err)
		_ = writeFrame(c, helloReply{Cluster: mine, Code: cluster.RPCFailure(cluster.ErrInconsistentClusterID).Code, Err: err.Error()})
		return err
	}
	if mine == "" && hi.Cluster != "" && h.member != nil && !h.member(hi.Node, hi.Addr) {
		err := fmt.Errorf("%w: node %d of cluster %s, at %s (raft address %q), reached node %d, which knows no cluster yet and has no node %d at %q in its quorum: "+
			"a node of cluster %s lists this address (a wrong --controller-quorum there, or an address its node left and this new node took)",
			cluster.ErrInconsistentClusterID, hi.Node, hi.Cluster, c.RemoteAddr(), hi.Addr, h.node, hi.Node, hi.Addr, hi.Cluster)
		h.logRefusal(fmt.Sprintf("stranger %s %d %s", hostOf(c.RemoteAddr()), hi.Node, hi.Cluster),
			"cluster: refused a raft-port connection from a node of a cluster this new node is not in",
			"this_cluster", mine, "peer_cluster", hi.Cluster, "peer_node", hi.Node, "peer", c.RemoteAddr().String(), "peer_raft_addr", hi.Addr, "err", err)
		_ = writeFrame(c, helloReply{Code: cluster.RPCFailure(cluster.ErrInconsistentClusterID).Code, Err: err.Error()})
		return err
	}
	return writeFrame(c, helloReply{Cluster: mine})
}

// refuseSilent decides on a connection that sent no hello: nil accepts it
// (below MetadataVersionClusterID, where an older build may be its
// dialer).
func (h *identity) refuseSilent(c net.Conn) error {
	if !h.strict() {
		return nil
	}
	h.logRefusal("silent "+hostOf(c.RemoteAddr()), "cluster: refused a raft-port connection that did not say its cluster "+
		"(a build older than metadata.version 5, which this cluster has finalized, or not a Strand node)",
		"this_cluster", h.cluster(), "peer", c.RemoteAddr().String())
	return fmt.Errorf("%w: the connection did not say its cluster, and this cluster (%s) requires it (metadata.version %d)",
		cluster.ErrInconsistentClusterID, h.cluster(), cluster.MetadataVersionClusterID)
}

func hostOf(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// helloNetwork is a Network whose connections open with this node's
// hello: raft's transport's, or, with rpc, controller RPCs'.
type helloNetwork struct {
	Network
	id  *identity
	rpc bool
}

// Dial connects to addr and greets it; below MetadataVersionClusterID a
// peer that closes on the hello is dialled again without one.
func (n helloNetwork) Dial(from, addr string, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	if !n.id.skipHello(addr) || n.id.strict() {
		c, err := n.Network.Dial(from, addr, timeout)
		if err != nil {
			return nil, err
		}
		err = n.id.greet(c, addr, n.rpc, deadline)
		if err == nil {
			return c, nil
		}
		c.Close()
		if !errors.Is(err, errHelloUnanswered) || n.id.strict() {
			return nil, err
		}
		n.id.markNoHello(addr)
	}
	return n.Network.Dial(from, addr, time.Until(deadline))
}
