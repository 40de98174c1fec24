package strand

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/cluster/quorum"
	"github.com/strandmq/strand/internal/datadir"
	"github.com/strandmq/strand/internal/kafka"
	"github.com/strandmq/strand/internal/nodetls"
	"github.com/strandmq/strand/internal/vfs"
	"github.com/strandmq/strand/internal/wire"
)

// ClusterConfig makes a Strand process one node of a cluster: brokers that
// share one set of topics, each partition led by one node, with the
// cluster's metadata (topics, placement, brokers) in a Raft quorum of
// controller voters. Every node listed in Quorum is a voter; Roles says
// whether this node is also (or only) a broker. Config.NodeID names this
// node.
type ClusterConfig struct {
	// Quorum is every voter's node id and Raft address, identical on every
	// node ("1@host:9193,2@host:9193,…", see ParseQuorum). This node's
	// entry is its own Raft address.
	Quorum []Voter
	// HeartbeatInterval is broker.heartbeat.interval.ms; default 1 s.
	HeartbeatInterval time.Duration
	// SessionTimeout is broker.session.timeout.ms: a broker not heard from
	// for this long is fenced and its partitions lose their leader;
	// default 9 s.
	SessionTimeout time.Duration
	// InternalAddr is the internal listener's address: Kafka's protocol for
	// the cluster's own traffic (admin requests forwarded to the
	// controller), never the client port. Default: the client listener's
	// host, a free port.
	InternalAddr string
	// SourceIP, if set, is the address this node's connections to other
	// nodes (Raft, controller calls, replica fetches, forwarded requests)
	// leave from. Nodes sharing a host on distinct loopback addresses set
	// it to their own, so a firewall rule can cut one pair of nodes; by
	// default the operating system chooses (for loopback: 127.0.0.1).
	SourceIP net.IP
	// Roles are this node's roles (Kafka's process.roles, see
	// ParseRoles): nil for controller and broker both, the default.
	// A controller is a voter and must be in Quorum; a broker-only node
	// must not be: it follows the metadata log as a raft non-voter at
	// RaftAddr, registers like any broker, and never votes. A
	// controller-only node hosts no partition.
	Roles []string
	// RaftAddr is a broker-only node's raft listener (host:port), where
	// the quorum's leader sends it the metadata log; default the client
	// listener's host, a free port. Voters use their Quorum entry.
	RaftAddr string
	// Rack is the node's rack or availability zone (Kafka's broker.rack):
	// placement spreads each partition's replicas over racks, and a
	// consumer that names its rack (client.rack) is sent to an in-sync
	// replica there (KIP-392). Empty: no rack.
	Rack string
	// Join starts a node that the running cluster will add to its quorum
	// (`strand cluster add-voter`): it does not bootstrap a quorum of its
	// own, and serves once it has been added and has caught up. Quorum
	// then lists the voters to reach, this node among them.
	Join bool
	// ReplicaLagTime is replica.lag.time.max.ms: a follower that has not
	// caught up with its leader for this long leaves the ISR; default 30 s.
	ReplicaLagTime time.Duration
	// DefaultReplicationFactor is default.replication.factor, the replica
	// count of topics created without one (auto-created too); default 1.
	DefaultReplicationFactor int
	// LeaderImbalanceCheckInterval is how often the controller moves
	// leadership back to each partition's preferred (first) replica where
	// that replica is in sync (auto.leader.rebalance.enable,
	// leader.imbalance.check.interval.seconds); default 5 minutes,
	// negative: never.
	LeaderImbalanceCheckInterval time.Duration
	// PartitionBalancerInterval is how often the controller's partition
	// balancer evens out replica and preferred-leader counts over the
	// brokers (a broker that joined gets its share); default 10 s,
	// negative: off.
	PartitionBalancerInterval time.Duration
	// ReassignmentThrottle caps, in bytes per second, what this node
	// fetches for the replicas a reassignment is adding to it (the
	// balancer's moves, a drain's, an operator's), below any
	// follower.replication.throttled.rate that also applies; in-sync
	// replicas are never held back. 0: DefaultReassignmentThrottle;
	// negative: no cap.
	ReassignmentThrottle int64
	// DisableELR turns off KIP-966's eligible leader replicas (on by
	// default): a partition's last in-sync replica then stays in its ISR
	// when it goes, and replicas that left an ISR below
	// min.insync.replicas are not eligible to lead.
	DisableELR bool
	// ElectionTimeout tunes Raft: a quorum without a leader for this long
	// elects one (heartbeat timeout too; the leader lease is half);
	// default 1 s, 100 ms for a quorum of one.
	ElectionTimeout time.Duration
	// TLS, if set, is mutual TLS on every connection between nodes: Raft,
	// the controller RPCs, the internal listener, replica fetches and
	// forwarded requests. A peer must present a certificate the cluster CA
	// signed that names a node (`strand cert create-node`); this node's
	// must name Config.NodeID.
	TLS *InterNodeTLS
	// Insecure lets a node whose Raft, internal or advertised addresses
	// are not all loopback start without TLS (--insecure-inter-node):
	// anyone who reaches those ports can then act as a node. Without it,
	// Start refuses such a node. A WARN says so at every start.
	Insecure bool
}

// InterNodeTLS names the files of a node's inter-node mutual TLS. They are
// read again on Broker.ReloadCertificates and when they change, so renewed
// certificates need no restart.
type InterNodeTLS struct {
	CertFile, KeyFile, CAFile string
	// ReloadInterval is how often the files are checked for changes;
	// default 30 s, negative: only on ReloadCertificates.
	ReloadInterval time.Duration
}

// loadTLS reads the inter-node certificates (nil without TLS) and refuses
// a node reachable beyond loopback without them unless Insecure.
func (c *ClusterConfig) loadTLS(cfg Config, client net.Addr) (*nodetls.Source, error) {
	if c.TLS == nil {
		exposed := c.exposedAddrs(cfg, client)
		switch {
		case len(exposed) > 0 && !c.Insecure:
			return nil, fmt.Errorf("strand: node %d is reachable beyond loopback (%s) and its traffic with other nodes would be "+
				"plaintext and unauthenticated: anyone who reaches those ports could act as a node. Give it a node certificate "+
				"(--inter-node-tls-cert, --inter-node-tls-key, --inter-node-tls-ca; `strand cert create-ca` and `strand cert create-node` make them), "+
				"or accept the risk with --insecure-inter-node", cfg.NodeID, strings.Join(exposed, ", "))
		case len(exposed) > 0:
			cfg.Logger.Warn("strand: inter-node traffic is plaintext and unauthenticated (--insecure-inter-node): anyone who reaches "+
				"these addresses can act as a node", "addresses", strings.Join(exposed, ", "))
		}
		return nil, nil
	}
	src, err := nodetls.Load(nodetls.Files{Cert: c.TLS.CertFile, Key: c.TLS.KeyFile, CA: c.TLS.CAFile}, cfg.NodeID, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("strand: inter-node TLS: %w", err)
	}
	return src, nil
}

// exposedAddrs lists the node's addresses other nodes use that are not
// loopback: its quorum entries, its internal listener and its advertised
// client address (each defaulting as Start does).
func (c *ClusterConfig) exposedAddrs(cfg Config, client net.Addr) []string {
	var out []string
	check := func(what, addr string) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if host == "localhost" {
			return
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return
		}
		out = append(out, what+" "+addr)
	}
	for _, v := range c.Quorum {
		check(fmt.Sprintf("raft (node %d)", v.ID), v.Addr)
	}
	if c.RaftAddr != "" {
		check("raft", c.RaftAddr)
	}
	clientAddr := client.String()
	if cfg.AdvertisedAddr != "" {
		clientAddr = cfg.AdvertisedAddr
	}
	check("advertised", clientAddr)
	internal := c.InternalAddr
	if internal == "" {
		internal = clientAddr
	}
	check("internal", internal)
	return out
}

// Voter is one member of the metadata quorum.
type Voter struct {
	ID   int32
	Addr string // host:port of its Raft listener
}

// ParseRoles parses --roles ("controller,broker", "broker" or
// "controller") into ClusterConfig.Roles.
func ParseRoles(s string) ([]string, error) {
	roles, err := cluster.ParseRoles(s)
	if err != nil {
		return nil, fmt.Errorf("strand: %w", err)
	}
	return roles, nil
}

// ParseQuorum parses Kafka's controller.quorum.voters form:
// "1@host:port,2@host:port,3@host:port".
func ParseQuorum(s string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("quorum entry %q: want <node id>@<host>:<port>", part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("quorum entry %q: %w", part, err)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("quorum lists node %d twice", n)
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Addr: addr})
	}
	return out, nil
}

// listenInternal binds the internal listener.
func (c *ClusterConfig) listenInternal(ctx context.Context, lc net.ListenConfig, client net.Addr) (net.Listener, error) {
	addr := c.InternalAddr
	if addr == "" {
		host, _, _ := net.SplitHostPort(client.String())
		addr = net.JoinHostPort(host, "0")
	}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("strand: internal listener on %s: %w", addr, err)
	}
	return ln, nil
}

// configure makes bcfg a cluster member's: its client and internal
// endpoints, and the Raft store it opens once its data directory is
// locked.
func (c *ClusterConfig) configure(bcfg *broker.Config, cfg Config, ln, internal net.Addr, tlsSrc *nodetls.Source) error {
	var self *Voter
	voters := make([]quorum.Voter, len(c.Quorum))
	for i, v := range c.Quorum {
		voters[i] = quorum.Voter{ID: v.ID, Addr: v.Addr}
		if v.ID == cfg.NodeID {
			self = &c.Quorum[i]
		}
	}
	observer := !cluster.HasRole(c.Roles, cluster.RoleController)
	switch {
	case observer && self != nil:
		return fmt.Errorf("strand: node %d has --roles broker but is in the controller quorum %v; a broker-only node is not a voter: list only the controllers there", cfg.NodeID, c.Quorum)
	case observer:
		self = &Voter{ID: cfg.NodeID, Addr: c.RaftAddr}
		if self.Addr == "" {
			h, _, _ := net.SplitHostPort(ln.String())
			self.Addr = net.JoinHostPort(h, "0")
		}
	case self == nil:
		return fmt.Errorf("strand: node %d is not in the quorum %v; a controller (--roles controller or controller,broker) is a voter", cfg.NodeID, c.Quorum)
	case c.RaftAddr != "":
		return fmt.Errorf("strand: a raft address of its own (--raft-addr) is for a broker-only node; a voter's is its --controller-quorum entry")
	}
	host, port, err := kafka.Advertise(cfg.AdvertisedAddr, ln)
	if err != nil {
		return fmt.Errorf("strand: %w", err)
	}
	election := c.ElectionTimeout
	if election <= 0 {
		election = time.Second
		if len(voters) == 1 {
			election = 100 * time.Millisecond
		}
	}
	rc := quorum.RaftConfig{
		NodeID: cfg.NodeID, Dir: cfg.Dir, Bind: self.Addr, Voters: voters, Logger: cfg.Logger,
		HeartbeatTimeout: election, ElectionTimeout: election, LeaderLease: election / 2,
		Controller: quorum.ControllerConfig{SessionTimeout: c.SessionTimeout, LeaderImbalanceCheckInterval: c.imbalanceCheck(),
			PartitionBalancerInterval: orDefault(c.PartitionBalancerInterval, 10*time.Second),
			DisableELR:                c.DisableELR, DefaultMinISR: defaultMinISR(cfg.TopicDefaults)},
		Join: c.Join, Observer: observer, Network: quorum.TCPNetwork{LocalIP: c.SourceIP, TLS: tlsSrc, Voters: voterAddrs(voters)},
	}
	bcfg.Dialer = wire.Dialer{LocalIP: c.SourceIP, TLS: tlsSrc}
	bcfg.OpenMetadata = func() (cluster.Store, error) {
		// A directory that was a cluster member (meta.properties) but has
		// no raft log lost it: bootstrapping afresh could roll back the
		// quorum (hashicorp/raft#122), so refuse.
		_, metaErr := os.Stat(filepath.Join(cfg.Dir, "meta.properties"))
		_, raftErr := os.Stat(filepath.Join(cfg.Dir, "raft", "raft.db"))
		if metaErr == nil && errors.Is(raftErr, os.ErrNotExist) {
			return nil, fmt.Errorf("%s was a cluster member but its raft log (raft/raft.db) is gone; "+
				"rejoining would start a fresh quorum log. Move the directory aside and start this node with an empty one", cfg.Dir)
		}
		// The cluster the directory belongs to, if meta.properties names
		// it: the raft port's hellos say it from the first connection,
		// before the metadata log has replayed (quorum/hello.go).
		m, ok, err := datadir.ReadNodeMeta(vfs.Default, cfg.Dir)
		if err != nil {
			return nil, err
		}
		if ok {
			rc.ClusterID = m.ClusterID
		}
		return quorum.OpenRaftStore(rc)
	}
	ihost, iport, err := kafka.Advertise("", internal)
	if err != nil {
		return fmt.Errorf("strand: %w", err)
	}
	bcfg.Endpoints = []cluster.Endpoint{{Name: "CLIENT", Host: host, Port: port}, {Name: "INTERNAL", Host: ihost, Port: iport}}
	bcfg.Rack, bcfg.Roles = c.Rack, c.Roles
	bcfg.HeartbeatInterval, bcfg.SessionTimeout = c.HeartbeatInterval, c.SessionTimeout
	bcfg.ReplicaLagTime, bcfg.DefaultReplicationFactor = c.ReplicaLagTime, c.DefaultReplicationFactor
	switch {
	case c.ReassignmentThrottle == 0:
		bcfg.ReassignmentThrottle = DefaultReassignmentThrottle
	case c.ReassignmentThrottle > 0:
		bcfg.ReassignmentThrottle = c.ReassignmentThrottle
	}
	return nil
}

// DefaultReassignmentThrottle is ClusterConfig.ReassignmentThrottle's
// default, 100 MiB/s: Redpanda's default for a new replica's recovery
// (raft_learner_recovery_rate). A new replica still catches up with a
// partition written at up to that rate, and a node moving many at once
// leaves most of a 10 Gb/s link and of its disk to clients.
const DefaultReassignmentThrottle = 100 << 20

func voterAddrs(voters []quorum.Voter) map[string]cluster.NodeID {
	m := make(map[string]cluster.NodeID, len(voters))
	for _, v := range voters {
		m[v.Addr] = v.ID
	}
	return m
}

// defaultMinISR is the brokers' min.insync.replicas default, which the
// controller's ELR rules must agree with (0: Kafka's 1).
func defaultMinISR(defaults map[string]string) int {
	n, _ := strconv.Atoi(defaults[cluster.MinInsyncReplicas])
	return n
}

// orDefault is d, def when d is 0, and 0 (off) when d is negative.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// imbalanceCheck is the controller's preferred-leader balancing interval:
// 0 (off) for a negative setting, Kafka's 5 minutes for none.
func (c *ClusterConfig) imbalanceCheck() time.Duration {
	switch {
	case c.LeaderImbalanceCheckInterval < 0:
		return 0
	case c.LeaderImbalanceCheckInterval == 0:
		return 5 * time.Minute
	}
	return c.LeaderImbalanceCheckInterval
}

// InternalAddr is a cluster node's internal listener address ("" for a
// single node): where other nodes fetch replicas and forward requests.
func (b *Broker) InternalAddr() string { return b.internalAddr }
