package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/nodetls"
)

// Voter is one member of the metadata quorum.
type Voter struct {
	ID   int32
	Addr string // host:port of its raft transport
}

// RaftConfig configures a node of the metadata quorum.
type RaftConfig struct {
	NodeID int32
	// Dir holds the raft log, stable store and snapshots.
	Dir string
	// Bind is this node's raft address (host:port), as Voters lists it.
	Bind string
	// Voters is the initial quorum, identical on every initial voter:
	// bootstrapped once, on a node with no raft state. Later starts ignore
	// it (the quorum's configuration is in the log).
	Voters []Voter
	// HeartbeatTimeout, ElectionTimeout and LeaderLease tune raft; zero:
	// 500/500/250 ms, which two loaded cores hold without flapping.
	HeartbeatTimeout, ElectionTimeout, LeaderLease time.Duration
	Logger                                         *slog.Logger
	// Network, if set, carries raft's connections instead of plain TCP
	// (tests: internal/vnet, to cut and delay links).
	Network Network
	// Controller tunes the controller this node runs while it leads.
	Controller ControllerConfig
	// ClusterID is the cluster the data directory belongs to, as its
	// meta.properties names it ("" if it names none yet: a new node): the
	// id this node's raft-port hellos give before its image holds one,
	// and in preference to it (hello.go).
	ClusterID string
	// Join starts a node that an existing quorum will add (ChangeVoter):
	// it never bootstraps, and waits to be contacted by the leader.
	Join bool
	// Observer starts a broker-only node (--roles broker): it never
	// bootstraps and never votes; at every start it asks the quorum (the
	// Voters, none of which is this node) to add it as a raft non-voter at
	// its Bind address — which may have port 0, a free one — so the leader
	// sends it the metadata log.
	Observer bool
}

// Network is what raft's transport needs of a network: vnet.Network in
// tests.
type Network interface {
	Listen(node, addr string) (net.Listener, error)
	Dial(from, addr string, timeout time.Duration) (net.Conn, error)
}

// streamLayer adapts a Network to raft's transport.
type streamLayer struct {
	net.Listener
	nw   Network
	node string
	all  *connSet
}

// Dial connects to a peer's raft port. A refused connection (the peer's
// process is down) is tried again until timeout: raft doubles its wait
// after every failed contact (up to 10 s), so failing in a millisecond
// would leave a restarted peer unheard of for seconds, its brokers fenced
// and its replicas out of every ISR that long. Waiting here instead keeps
// the count of failures low and reaches the peer as soon as it listens.
func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, err := s.nw.Dial(s.node, string(addr), time.Until(deadline))
		if err == nil && !s.all.add(c) {
			return nil, net.ErrClosed
		}
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Until(deadline) < refusedRetry {
			return c, err
		}
		time.Sleep(refusedRetry)
	}
}

// refusedRetry is how often Dial tries a peer that refused a connection.
const refusedRetry = 50 * time.Millisecond

// RaftStore is cluster metadata replicated by a hashicorp/raft quorum: the
// same records as FileStore, applied by the leader and, once committed,
// by every node's FSM.
type RaftStore struct {
	r     *raft.Raft
	fsm   *fsm
	trans *raft.NetworkTransport
	logs  *raftboltdb.BoltStore
	ctl   *controller
	nw    Network // raw: the session probe's (session.go)
	// ident is this node's cluster-id hello (hello.go).
	ident *identity
	// peers is nw with this node's cluster-id hello (hello.go) for
	// controller RPCs: every one this node dials goes through it (raft's
	// streams through the same, saying so).
	peers helloNetwork
	// metaCluster is RaftConfig.ClusterID: the data directory's cluster
	// (meta.properties), before the image has replayed far enough to say.
	metaCluster string
	// savedCluster is the cluster id this node's raft directory recorded
	// (raft/cluster.id) once its image first held one: the quorum's own
	// record of it, for a node whose meta.properties names none (a
	// controller-only node, an embedded store) and whose image is empty
	// after a restart until the leader commits (hashicorp/raft#549).
	savedCluster atomic.Value // string
	// running is s.r once NewRaft has returned: the raft port serves
	// (and checks hellos) before.
	running atomic.Pointer[raft.Raft]
	node    string // this node's id, as Network names it
	self    cluster.NodeID
	// incarnation is this process's broker incarnation, once it registers.
	incarnation atomic.Value
	watchOnce   sync.Once // starts this process's session watch (session.go)
	// prevToken and token are the successor tokens the raft directory
	// held at this start and holds now (successor.go).
	prevToken, token string
	dir              string // the raft directory
	// lease is raft's leader lease: the shortest heartbeat timeout raft
	// accepts, which maybeHastenElection uses (session.go).
	lease     time.Duration
	hastening atomic.Bool
	done      chan struct{} // closed by Close: ends the controller's watch
	conns     connSet       // raft's connections, both ways
	// leaderless is when this node last saw the quorum without a leader
	// it knows (unix ns; 0 while it knows one), and leaderlessLimit how
	// long that lasts before callers are told at once (ErrNoLeader).
	leaderless      atomic.Int64
	leaderlessLimit time.Duration
	// lastOtherLeader is the last node other than this one seen leading
	// the quorum (0: none yet), for the controller's first session clock.
	lastOtherLeader atomic.Int32
}

// OpenRaftStore starts this node's raft and, when it has no raft state
// yet, bootstraps the configured voters.
func OpenRaftStore(cfg RaftConfig) (*RaftStore, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	dir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	logs, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("cluster: raft log store: %w", err)
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: io.Discard})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hlog)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("cluster: raft snapshots: %w", err)
	}
	if cfg.Network == nil {
		cfg.Network = TCPNetwork{}
	}
	node := strconv.Itoa(int(cfg.NodeID))
	s := &RaftStore{fsm: newFSM(), logs: logs, nw: cfg.Network, node: node, self: cfg.NodeID, done: make(chan struct{}), dir: dir}
	if s.prevToken, s.token, err = rotateSuccessorToken(dir); err != nil {
		logs.Close()
		return nil, err
	}
	s.metaCluster = cfg.ClusterID
	if b, err := os.ReadFile(filepath.Join(dir, clusterIDFile)); err == nil {
		s.savedCluster.Store(strings.TrimSpace(string(b)))
	}
	s.fsm.subscribe(s.saveClusterID)
	id := &identity{node: cfg.NodeID, cluster: s.ClusterID, strict: s.helloRequired, member: s.inConfiguration, logger: cfg.Logger}
	s.ident = id
	s.peers = helloNetwork{Network: cfg.Network, id: id, rpc: true}
	s.ctl = newController(s, cfg.Controller, cfg.Logger)
	ln, err := cfg.Network.Listen(node, cfg.Bind)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("cluster: raft port %s: %w", cfg.Bind, err)
	}
	bind := cfg.Bind
	if cfg.Observer {
		bind = ln.Addr().String() // port 0 resolved: what the leader dials
	}
	id.addr = bind
	mux := newMuxListener(ln, id, s.ctl.serve, s.ctl.hold, &s.conns)
	s.trans = raft.NewNetworkTransportWithLogger(streamLayer{mux, helloNetwork{Network: cfg.Network, id: id}, node, &s.conns}, 3, transportTimeout, hlog)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(strconv.Itoa(int(cfg.NodeID)))
	rc.Logger = hlog
	rc.HeartbeatTimeout = orDefault(cfg.HeartbeatTimeout, 500*time.Millisecond)
	rc.ElectionTimeout = orDefault(cfg.ElectionTimeout, 500*time.Millisecond)
	rc.LeaderLeaseTimeout = orDefault(cfg.LeaderLease, 250*time.Millisecond)
	// A quorum that can elect does so within two election timeouts (raft
	// randomises each between one and two); a node that sees none for
	// longer is likely cut off, and its clients are better off elsewhere.
	s.leaderlessLimit = 2 * max(rc.HeartbeatTimeout, rc.ElectionTimeout)
	s.lease = rc.LeaderLeaseTimeout
	notify := make(chan bool, 8) // raft blocks on a full NotifyCh: watch drains it
	rc.NotifyCh = notify
	existing, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil {
		s.closeStores()
		return nil, fmt.Errorf("cluster: raft state: %w", err)
	}
	if !existing && len(cfg.Voters) > 0 && !cfg.Join && !cfg.Observer {
		var servers []raft.Server
		for _, v := range cfg.Voters {
			servers = append(servers, raft.Server{ID: raft.ServerID(strconv.Itoa(int(v.ID))), Address: raft.ServerAddress(v.Addr)})
		}
		if err := raft.BootstrapCluster(rc, logs, logs, snaps, s.trans, raft.Configuration{Servers: servers}); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			s.closeStores()
			return nil, fmt.Errorf("cluster: bootstrap raft: %w", err)
		}
	}
	if s.r, err = raft.NewRaft(rc, s.fsm, logs, logs, snaps, s.trans); err != nil {
		s.closeStores()
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	s.running.Store(s.r)
	if existing {
		check := s.checkVoters
		if cfg.Observer {
			check = s.checkObserver
		}
		if err := check(cfg.NodeID, cfg.Bind); err != nil {
			_ = s.r.Shutdown().Error()
			s.closeStores()
			return nil, err
		}
	}
	s.watchLeaders()
	go s.ctl.watch(notify, s.done)
	if cfg.Observer {
		go s.joinAsObserver(cfg.Voters, bind, cfg.Logger)
	}
	return s, nil
}

// watchLeaders keeps lastOtherLeader.
func (s *RaftStore) watchLeaders() {
	ch := make(chan raft.Observation, 8)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.r.RegisterObserver(obs)
	go func() {
		defer s.r.DeregisterObserver(obs)
		for {
			select {
			case <-s.done:
				return
			case o := <-ch:
				lo := o.Data.(raft.LeaderObservation)
				if n, err := strconv.Atoi(string(lo.LeaderID)); err == nil && cluster.NodeID(n) != s.self {
					s.lastOtherLeader.Store(int32(n))
				}
			}
		}
	}()
}

// isLocal says whether r is this process's own registration.
func (s *RaftStore) isLocal(r cluster.Registration) bool {
	inc, _ := s.incarnation.Load().(string)
	return r.ID == s.self && inc != "" && (r.IncarnationID == inc || r.IncarnationID == withTokenHash(inc, s.token))
}

// previousLeader is the node that led the quorum before this one and the
// last time this node heard from it (raft's last contact: an append from
// that leader or, later, a vote this node granted), ok false if unknown.
func (s *RaftStore) previousLeader() (cluster.NodeID, time.Time, bool) {
	id, at := s.lastOtherLeader.Load(), s.r.LastContact()
	return cluster.NodeID(id), at, id != 0 && !at.IsZero()
}

// checkVoters refuses a raft log whose quorum does not have this node at
// this address: a data directory of another quorum, or of another node,
// would follow (or lead) that one. (The rest of the list may differ from
// the flag: voters added or removed since.)
func (s *RaftStore) checkVoters(self cluster.NodeID, bind string) error {
	f := s.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("cluster: raft configuration: %w", err)
	}
	have := map[string]string{}
	for _, srv := range f.Configuration().Servers {
		have[string(srv.ID)] = string(srv.Address)
	}
	if len(have) > 0 && have[strconv.Itoa(int(self))] != bind {
		return fmt.Errorf("cluster: this node's raft log has the quorum %v, which has no node %d at %s: the data directory belongs to another quorum or node (or this node's raft address changed)", have, self, bind)
	}
	return nil
}

// transportTimeout bounds each raft RPC's I/O (snapshots get it scaled by
// their size). Metadata entries are small; a connection that has gone
// quiet mid-RPC (a link that dropped its bytes) is given up after this,
// and a healed node rejoins that much sooner than with raft's usual 10 s.
const transportTimeout = 3 * time.Second

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ClusterID is this node's cluster id, as its hellos say it: its data
// directory's (meta.properties) if that names one, else the one its raft
// directory recorded, else its image's; "" while none does (a new node
// whose quorum has not named the cluster yet).
func (s *RaftStore) ClusterID() string {
	if s.metaCluster != "" {
		return s.metaCluster
	}
	if id, _ := s.savedCluster.Load().(string); id != "" {
		return id
	}
	return s.Image().ClusterID()
}

// clusterIDFile, in the raft directory, records the cluster id.
const clusterIDFile = "cluster.id"

// saveClusterID records img's cluster id in the raft directory the first
// time an image holds one (an FSM subscriber: once per directory).
func (s *RaftStore) saveClusterID(img *cluster.Image) {
	id := img.ClusterID()
	if id == "" {
		return
	}
	if saved, _ := s.savedCluster.Load().(string); saved != "" {
		return
	}
	s.savedCluster.Store(id)
	path := filepath.Join(s.dir, clusterIDFile)
	if err := os.WriteFile(path+".tmp", []byte(id+"\n"), 0o644); err == nil {
		_ = os.Rename(path+".tmp", path)
	}
}

// inConfiguration says whether node is in this node's raft configuration
// at raft address addr, or that the configuration is empty (a node
// waiting to be added, or a broker-only node joining). Asked by the raft
// port before raft runs, it waits for it (a moment at start).
func (s *RaftStore) inConfiguration(node int32, addr string) bool {
	r := s.running.Load()
	for deadline := time.Now().Add(5 * time.Second); r == nil; r = s.running.Load() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	servers := f.Configuration().Servers
	if len(servers) == 0 {
		return true
	}
	for _, srv := range servers {
		if string(srv.ID) == strconv.Itoa(int(node)) && string(srv.Address) == addr {
			return true
		}
	}
	return false
}

// helloRequired says whether a raft-port connection must open with a
// hello: once the cluster has finalized MetadataVersionClusterID, every
// node is of a build that sends one.
func (s *RaftStore) helloRequired() bool {
	return s.Image().FeatureLevel(cluster.MetadataVersion) >= cluster.MetadataVersionClusterID
}

// Image returns the image this node has applied.
func (s *RaftStore) Image() *cluster.Image { return s.fsm.img.Load() }

// AppliedIndex is the raft index of the last entry this node applied.
func (s *RaftStore) AppliedIndex() uint64 { return s.fsm.index.Load() }

// Subscribe calls fn with every image this node applies from now on.
func (s *RaftStore) Subscribe(fn func(*cluster.Image)) (cancel func()) { return s.fsm.subscribe(fn) }

// Leader returns the node id and raft address of the quorum's leader, or
// ok false while there is none.
func (s *RaftStore) Leader() (id int32, addr string, ok bool) {
	a, sid := s.r.LeaderWithID()
	if sid == "" {
		s.leaderless.CompareAndSwap(0, time.Now().UnixNano())
		return 0, "", false
	}
	s.leaderless.Store(0)
	n, err := strconv.Atoi(string(sid))
	return int32(n), string(a), err == nil
}

// DefaultApplyTimeout bounds Apply.
const DefaultApplyTimeout = 10 * time.Second

// Apply is ApplyWithin DefaultApplyTimeout: the Store interface.
func (s *RaftStore) Apply(recs ...cluster.Record) (*cluster.Image, error) {
	return s.ApplyWithin(DefaultApplyTimeout, recs...)
}

// ApplyWithin commits recs through the quorum and returns this node's
// image once it holds them, or the conflict the controller found. On the
// controller it applies them; elsewhere it forwards them to the
// controller (following a leader change) and waits until this node has
// applied the entry, so a caller reads its own write. It waits at most
// timeout.
func (s *RaftStore) ApplyWithin(timeout time.Duration, recs ...cluster.Record) (*cluster.Image, error) {
	data, err := cluster.EncodeRecords(recs)
	if err != nil {
		return nil, err
	}
	resp, err := s.callController(rpcRequest{Apply: data}, timeout)
	if err != nil {
		if errors.Is(err, cluster.ErrConflict) && resp.Index > 0 {
			_, _ = s.waitApplied(resp.Index, timeout)
		}
		return nil, err
	}
	return s.waitApplied(resp.Index, timeout)
}

// applyLocal commits recs as leader and returns the image after them and
// their raft index.
func (s *RaftStore) applyLocal(timeout time.Duration, recs ...cluster.Record) (*cluster.Image, uint64, error) {
	data, err := cluster.EncodeRecords(recs)
	if err != nil {
		return nil, 0, err
	}
	f := s.r.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, 0, fmt.Errorf("%w: %w", cluster.ErrNotController, err)
		}
		return nil, 0, fmt.Errorf("cluster: commit metadata: %w", err)
	}
	res, _ := f.Response().(applyResult)
	return res.img, f.Index(), res.err
}

// callController sends req to the controller — this node's own when it
// leads — retrying through elections until timeout. Only "not the
// controller" and an unreachable leader are retried: any answer the
// controller gave is final (a retried change that had committed would
// come back as a conflict, as a retried CreateTopics does in Kafka).
func (s *RaftStore) callController(req rpcRequest, timeout time.Duration) (rpcResponse, error) {
	deadline := time.Now().Add(timeout)
	var last error = cluster.ErrNotController
	for time.Now().Before(deadline) {
		id, addr, ok := s.Leader()
		if ok {
			var resp rpcResponse
			var err error
			if strconv.Itoa(int(id)) == s.node {
				resp = s.ctl.serve(nodetls.AnyNode, req) // this process: no peer to check
			} else {
				resp, err = call(s.peers, s.node, addr, req, min(time.Until(deadline), 10*time.Second), func() bool {
					now, _, ok := s.Leader()
					return ok && now != id
				})
			}
			switch {
			case err != nil:
				last = fmt.Errorf("cluster: controller %d at %s: %w", id, addr, err)
			case resp.Code == "":
				return resp, nil
			case resp.Code != "not_controller":
				return resp, cluster.RPCError(resp.Code, resp.Err)
			}
		}
		if since := s.leaderless.Load(); since != 0 && time.Since(time.Unix(0, since)) > s.leaderlessLimit {
			return rpcResponse{}, fmt.Errorf("%w: %w for %v", cluster.ErrNotController, cluster.ErrNoLeader, time.Since(time.Unix(0, since)).Round(time.Millisecond))
		}
		select {
		case <-s.done:
			return rpcResponse{}, errors.New("cluster: closed")
		case <-time.After(50 * time.Millisecond):
		}
	}
	return rpcResponse{}, fmt.Errorf("%w: no controller answered within %v: %w", cluster.ErrNotController, timeout, last)
}

// waitApplied waits until this node has applied raft index index.
func (s *RaftStore) waitApplied(index uint64, timeout time.Duration) (*cluster.Image, error) {
	deadline := time.Now().Add(timeout)
	for s.AppliedIndex() < index {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster: the change committed at index %d but this node has applied only %d after %v", index, s.AppliedIndex(), timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.Image(), nil
}

// Register registers this process as broker r.ID and returns its broker
// epoch, once this node's image holds the registration.
func (s *RaftStore) Register(r cluster.Registration, timeout time.Duration) (int64, error) {
	if r.ID == s.self {
		// The first registration through this store is this process's
		// broker; any other incarnation of the id is not (a second
		// broker in one process, as tests build, must still be refused).
		s.incarnation.CompareAndSwap(nil, r.IncarnationID)
	}
	if s.isLocal(r) {
		r.IncarnationID, r.SuccessorOf = withTokenHash(r.IncarnationID, s.token), s.prevToken
	}
	if r.Features == nil { // what this build supports: it is the one registering
		r.Features = cluster.SupportedFeatures()
	}
	resp, err := s.callController(rpcRequest{Register: &r}, timeout)
	if err != nil {
		return 0, err
	}
	if s.isLocal(r) {
		s.startWatch(r.IncarnationID)
	}
	_, err = s.waitApplied(resp.Index, timeout)
	return resp.Epoch, err
}

// SendHeartbeat sends one heartbeat to the controller.
func (s *RaftStore) SendHeartbeat(hb cluster.Heartbeat, timeout time.Duration) (cluster.HeartbeatReply, error) {
	resp, err := s.callController(rpcRequest{Heartbeat: &hb}, timeout)
	if err != nil || resp.Heartbeat == nil {
		return cluster.HeartbeatReply{}, err
	}
	return *resp.Heartbeat, nil
}

// AlterPartition asks the controller to change a partition's ISR (this
// node leading it) and returns the partition's registration after the
// change.
func (s *RaftStore) AlterPartition(r cluster.AlterPartition, timeout time.Duration) (cluster.PartitionReg, error) {
	resp, err := s.callController(rpcRequest{AlterPartition: &r}, timeout)
	if err != nil || resp.Partition == nil {
		if err == nil {
			err = errors.New("cluster: the controller's AlterPartition answer has no partition")
		}
		return cluster.PartitionReg{}, err
	}
	return *resp.Partition, nil
}

// Barrier waits until this node, as leader, has applied every entry
// committed before it: a new controller calls it before deciding anything
// from its image.
func (s *RaftStore) Barrier(timeout time.Duration) error { return s.r.Barrier(timeout).Error() }

// CatchUp waits until this node has applied everything committed: as
// leader, through a Barrier; as a follower, until its applied index
// reaches the commit index it knows. ctx bounds the wait (a node without
// a quorum cannot catch up).
func (s *RaftStore) CatchUp(ctx context.Context) error {
	for {
		if _, _, ok := s.Leader(); ok {
			if s.r.State() == raft.Leader {
				if err := s.r.Barrier(DefaultApplyTimeout).Error(); err == nil {
					return nil
				}
			} else if commit := s.r.CommitIndex(); commit > 0 && s.r.AppliedIndex() >= commit {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			// A quorum out of reach whose nodes name another cluster is
			// not this node's: its data directory belongs elsewhere, and
			// waiting for a controller would wait for ever (Kafka's broker
			// stops on INCONSISTENT_CLUSTER_ID too).
			if err := s.ident.foreignRefusal(); err != nil {
				return fmt.Errorf("cluster: catching up with the metadata quorum: %w", err)
			}
			return fmt.Errorf("cluster: catching up with the metadata quorum: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops raft and releases its stores.
func (s *RaftStore) Close() error {
	close(s.done)
	// A leader that simply stops leaves its last commits unapplied on the
	// followers until they elect another (a second or more): they learn a
	// commit index only from a leader. Handing leadership over first lets
	// the successor commit at once — so a controlled shutdown's last
	// changes (this node's leaderships moved) reach every node now.
	if s.r.State() == raft.Leader && len(s.r.GetConfiguration().Configuration().Servers) > 1 {
		if err := s.r.LeadershipTransfer().Error(); err != nil {
			s.ctl.logger.Info("cluster: could not hand the quorum's leadership over before stopping", "err", err)
		}
	}
	err := s.r.Shutdown().Error()
	return errors.Join(err, s.closeStores())
}

func (s *RaftStore) closeStores() error {
	err := s.trans.Close()
	s.conns.closeAll()
	return errors.Join(err, s.logs.Close())
}

// QuorumStatus returns the quorum as this node, leading it, sees it; ok
// is false on a node that is not the controller.
func (s *RaftStore) QuorumStatus() (QuorumStatus, bool) { return s.ctl.quorumStatus() }

// RaftState is this node's part in the quorum, for health and metrics.
type RaftState struct {
	State       string // Leader, Follower, Candidate, Shutdown
	Term        uint64
	CommitIndex uint64
	Applied     uint64
	LastContact time.Time // with the leader (zero on the leader)
}

// State returns this node's raft state.
func (s *RaftStore) State() RaftState {
	return RaftState{State: s.r.State().String(), Term: s.term(), CommitIndex: s.r.CommitIndex(),
		Applied: s.AppliedIndex(), LastContact: s.r.LastContact()}
}

func (s *RaftStore) term() uint64 {
	t, _ := strconv.ParseUint(s.r.Stats()["term"], 10, 64)
	return t
}

// ChangeVoter adds or removes a voter through the controller.
func (s *RaftStore) ChangeVoter(v VoterChange, timeout time.Duration) error {
	_, err := s.callController(rpcRequest{Voter: &v}, timeout)
	return err
}

// SyncWithController returns once this node's image holds everything the
// controller had applied when asked (a read barrier): a node answering
// for a change another node made reads it back.
func (s *RaftStore) SyncWithController(timeout time.Duration) error {
	resp, err := s.callController(rpcRequest{ReadIndex: true}, timeout)
	if err != nil {
		return err
	}
	_, err = s.waitApplied(resp.Index, timeout)
	return err
}
