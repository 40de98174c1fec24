package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/nodetls"
)

// The controller is the quorum leader's decision loop (REPLICATION.md
// §1.5, §3). It runs only while this node leads raft, and its first act
// is a Barrier, so it never decides from an image older than the log.
// Soft state — when each broker was last heard from — is not in the log:
// a new controller gives every broker one session of grace.

// ControllerConfig tunes the controller; zero values are Kafka's.
type ControllerConfig struct {
	// SessionTimeout fences a broker not heard from for this long
	// (broker.session.timeout.ms); default 9 s.
	SessionTimeout time.Duration
	// ClusterID names a new cluster; default a random id.
	ClusterID string
	// LeaderImbalanceCheckInterval is how often leadership moves back to
	// preferred replicas (leader.imbalance.check.interval.seconds with
	// auto.leader.rebalance.enable); 0: never.
	LeaderImbalanceCheckInterval time.Duration
	// PartitionBalancerInterval is how often the partition balancer
	// (balancer.go) looks for uneven replica and leader counts; 0: off.
	PartitionBalancerInterval time.Duration
	// DisableELR turns KIP-966's eligible leader replicas off (Kafka's
	// eligible.leader.replicas.version=0): the last ISR member then stays
	// in the ISR, leaderless, and ELR fields are cleared as partitions
	// change.
	DisableELR bool
	// DefaultMinISR is min.insync.replicas for topics that do not set it:
	// the brokers' default, which ELR must agree with; 0: Kafka's 1.
	DefaultMinISR int
}

// rules are the partition-change rules cfg sets.
func (cfg ControllerConfig) rules() cluster.Rules {
	return cluster.Rules{ELR: !cfg.DisableELR, DefaultMinISR: max(1, cfg.DefaultMinISR)}
}

type controller struct {
	s      *RaftStore
	cfg    ControllerConfig
	rules  cluster.Rules
	logger *slog.Logger

	// decide serialises decisions: each reads the image and commits its
	// records before the next reads it.
	decide sync.Mutex

	mu          sync.Mutex
	active      bool          // this node leads raft
	ready       bool          // ... and its image has caught up (Barrier)
	term        chan struct{} // closed when this leadership ends
	lastContact map[cluster.NodeID]time.Time
	applied     map[cluster.NodeID]uint64 // each broker's applied index, from its heartbeats
	watches     sessionWatches            // brokers' open session watches (session.go)
}

func newController(s *RaftStore, cfg ControllerConfig, logger *slog.Logger) *controller {
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	return &controller{s: s, cfg: cfg, rules: cfg.rules(), logger: logger, lastContact: map[cluster.NodeID]time.Time{}, applied: map[cluster.NodeID]uint64{}}
}

// watch follows raft's leadership notifications (NotifyCh, not LeaderCh:
// the latter coalesces transitions).
func (c *controller) watch(notify <-chan bool, done <-chan struct{}) {
	for {
		select {
		case <-done:
			c.deactivate()
			return
		case leader := <-notify:
			if leader {
				c.activate()
			} else {
				c.deactivate()
			}
		}
	}
}

func (c *controller) activate() {
	c.mu.Lock()
	if c.active {
		c.mu.Unlock()
		return
	}
	c.active, c.term = true, make(chan struct{})
	term := c.term
	c.mu.Unlock()
	go c.run(term)
}

func (c *controller) deactivate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active {
		c.active, c.ready = false, false
		close(c.term)
	}
}

// run is one leadership: catch up, name the cluster if it has no name,
// then fence stale brokers, elect leaders for leaderless partitions whose
// topic allows unclean election, and balance leadership to preferred
// replicas every LeaderImbalanceCheckInterval.
func (c *controller) run(term chan struct{}) {
	for c.s.Barrier(5*time.Second) != nil {
		select {
		case <-term:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	if c.s.Image().ClusterID() == "" {
		id := c.cfg.ClusterID
		if id == "" {
			id = cluster.NewClusterID()
		}
		// A new cluster starts at the newest level this build writes, as
		// Kafka's storage format does: nothing older can be in it yet.
		init := []cluster.Record{cluster.ClusterInit{ClusterID: id}, cluster.FinalizeFeature{Name: cluster.MetadataVersion, Level: cluster.MetadataVersionLatest}}
		if _, _, err := c.s.applyLocal(5*time.Second, init...); err != nil {
			c.logger.Warn("cluster: naming the cluster", "err", err)
		}
	}
	now := time.Now()
	c.mu.Lock()
	for _, b := range c.s.Image().Brokers() {
		c.lastContact[b.ID] = now // one session of grace
	}
	// Except for the node that led the quorum before: raft last heard it
	// then, and a node whose controller died with it — killed, or cut off
	// — is the common case. Its broker, if alive, has a session from that
	// moment to reach this controller (two election timeouts at most have
	// passed); dead, its partitions get leaders a raft election sooner.
	if id, heard, ok := c.s.previousLeader(); ok && heard.Before(now) {
		if _, known := c.lastContact[id]; known {
			c.lastContact[id] = heard
		}
	}
	select {
	case <-term:
	default:
		c.ready = true
	}
	c.mu.Unlock()
	c.probeAll(term)
	c.logger.Info("cluster: this node is the controller", "cluster", c.s.Image().ClusterID(), "applied_index", c.s.AppliedIndex())
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var balance <-chan time.Time
	if c.cfg.LeaderImbalanceCheckInterval > 0 {
		bt := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer bt.Stop()
		balance = bt.C
	}
	rebalance, stopBalancer := balancerTicker(c.cfg.PartitionBalancerInterval)
	defer stopBalancer()
	for {
		select {
		case <-term:
			return
		case <-rebalance:
			c.balance()
		case <-tick.C:
			c.fenceOneStale(time.Now())
			c.electUnclean()
			c.completeReassignments()
		case <-balance:
			c.balanceLeaders()
		}
	}
}

// fenceOneStale fences at most one broker whose session expired (one at a
// time, as Kafka, so each effect is visible before the next) and takes
// leadership from its partitions.
func (c *controller) fenceOneStale(now time.Time) {
	c.decide.Lock()
	defer c.decide.Unlock()
	img := c.s.Image()
	for _, b := range img.Brokers() {
		if b.Fenced {
			continue
		}
		c.mu.Lock()
		last, ok := c.lastContact[b.ID]
		if !ok {
			last, c.lastContact[b.ID] = now, now
		}
		c.mu.Unlock()
		if now.Sub(last) <= c.cfg.SessionTimeout {
			continue
		}
		recs := append([]cluster.Record{cluster.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, Fenced: 1}}, cluster.LeaveISRs(img, c.rules, b.ID)...)
		if _, _, err := c.s.applyLocal(5*time.Second, recs...); err != nil {
			c.logger.Warn("cluster: fencing a broker", "broker", b.ID, "err", err)
			return
		}
		c.logger.Warn("cluster: fenced a broker whose session expired", "broker", b.ID, "last_heard", now.Sub(last).Round(time.Millisecond))
		c.warnUnclean(recs)
		return
	}
}

// electUnclean gives a leader to every leaderless partition whose topic
// has had unclean.leader.election.enable turned on since it lost its ISR.
func (c *controller) electUnclean() {
	c.decide.Lock()
	defer c.decide.Unlock()
	recs := cluster.UncleanElections(c.s.Image(), c.rules)
	if len(recs) == 0 {
		return
	}
	if _, _, err := c.s.applyLocal(5*time.Second, recs...); err != nil {
		c.logger.Warn("cluster: unclean leader election", "err", err)
		return
	}
	c.warnUnclean(recs)
}

// warnUnclean logs, loudly, every election from outside the ISR and ELR
// in recs: records only the old ISR had may be gone.
func (c *controller) warnUnclean(recs []cluster.Record) {
	for _, r := range recs {
		if ch, ok := r.(cluster.PartitionChange); ok && ch.Unclean {
			c.logger.Error("cluster: UNCLEAN leader election: a replica outside the ISR and ELR now leads (unclean.leader.election.enable=true, or the last known leader after every in-sync and eligible replica was lost); records acknowledged by the old ISR may be lost",
				"topic", ch.TopicID, "partition", ch.PartitionID, "leader", ch.Leader)
		}
	}
}

// register admits a broker process. A different incarnation of a live
// broker is refused — two processes with one node id — unless the old
// one shut down in a controlled way (it said it was going), or the new
// one holds the node's data directory, so the one before it is gone: it
// is this very process (a restarted node that wins the raft election
// would otherwise wait a session for its own dead registration), or it
// shows the secret the old one left in the directory (successor.go).
func (c *controller) register(r cluster.Registration) (int64, uint64, error) {
	img := c.s.Image()
	if err := c.checkRoles(img, r); err != nil {
		return 0, 0, err
	}
	if old, ok := img.Broker(r.ID); ok && old.IncarnationID != r.IncarnationID && !old.Fenced && !old.InControlledShutdown && !c.s.isLocal(r) && !succeeds(r, old) {
		c.mu.Lock()
		last := c.lastContact[r.ID]
		c.mu.Unlock()
		if time.Since(last) <= c.cfg.SessionTimeout {
			return 0, 0, fmt.Errorf("%w: node %d (incarnation %s) was heard from %v ago", cluster.ErrDuplicateBroker, r.ID, old.IncarnationID, time.Since(last).Round(time.Millisecond))
		}
	}
	if err := cluster.CheckRegistration(img, r); err != nil {
		return 0, 0, err
	}
	if len(r.Roles) > 0 {
		if err := cluster.NeedsLevel(img, cluster.MetadataVersionRoles, fmt.Sprintf("node %d registering with --roles %s", r.ID, cluster.RolesString(r.Roles))); err != nil {
			return 0, 0, err
		}
	}
	recs := []cluster.Record{cluster.RegisterBroker{ID: r.ID, IncarnationID: r.IncarnationID, Endpoints: r.Endpoints, Rack: r.Rack, Features: r.Features, Roles: r.Roles}}
	old, known := img.Broker(r.ID)
	if known && old.IncarnationID != r.IncarnationID && !old.Fenced {
		recs = append(cluster.LeaveISRs(img, c.rules, r.ID), recs...) // the old process is gone
	}
	crashed := (!known || old.IncarnationID != r.IncarnationID) && r.PreviousBrokerEpoch != 0 && (!known || r.PreviousBrokerEpoch != old.Epoch)
	if crashed {
		// Decided on the image after the records above, so both apply.
		after, err := img.With(recs...)
		if err != nil {
			return 0, 0, err
		}
		recs = append(recs, cluster.UncleanShutdownChanges(after, c.rules, r.ID)...)
	}
	next, index, err := c.s.applyLocal(5*time.Second, recs...)
	if err != nil {
		return 0, 0, err
	}
	// A node the image never registered has no replica in any ISR or ELR
	// to leave: its missing marker is a first start, not a crash, and a
	// warning there would greet every new cluster with a false alarm.
	if crashed && known {
		c.logger.Warn("cluster: a broker restarted after an unclean shutdown; it leaves every ISR and ELR until it catches up",
			"broker", r.ID, "previous_epoch", r.PreviousBrokerEpoch, "registered_epoch", old.Epoch)
	}
	c.mu.Lock()
	c.lastContact[r.ID] = time.Now()
	c.mu.Unlock()
	b, _ := next.Broker(r.ID)
	return b.Epoch, index, nil
}

// heartbeat records a broker's contact and moves its state: unfenced once
// its image holds its registration; in controlled shutdown, without
// leadership, then told to stop.
func (c *controller) heartbeat(hb cluster.Heartbeat) (cluster.HeartbeatReply, error) {
	img := c.s.Image()
	b, ok := img.Broker(hb.ID)
	if !ok || b.Epoch != hb.Epoch {
		return cluster.HeartbeatReply{}, fmt.Errorf("%w: node %d at epoch %d", cluster.ErrStaleBrokerEpoch, hb.ID, hb.Epoch)
	}
	c.mu.Lock()
	c.lastContact[hb.ID] = time.Now()
	c.applied[hb.ID] = hb.AppliedIndex
	c.mu.Unlock()
	caughtUp := hb.AppliedIndex >= uint64(b.Epoch)
	var recs []cluster.Record
	switch {
	case hb.WantShutdown:
		if !b.InControlledShutdown {
			recs = append(recs, cluster.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, InControlledShutdown: 1})
		}
		recs = append(recs, cluster.LeaveISRs(img, c.rules, b.ID)...)
	case b.Fenced && caughtUp && !b.InControlledShutdown:
		recs = append([]cluster.Record{cluster.BrokerRegistrationChange{ID: b.ID, Epoch: b.Epoch, Fenced: -1}}, cluster.ElectFor(img, c.rules, b.ID)...)
	}
	if len(recs) > 0 {
		next, _, err := c.s.applyLocal(5*time.Second, recs...)
		if err != nil {
			return cluster.HeartbeatReply{}, err
		}
		img = next
		b, _ = img.Broker(hb.ID)
		c.warnUnclean(recs)
	}
	reply := cluster.HeartbeatReply{Fenced: b.Fenced, CaughtUp: caughtUp}
	if hb.WantShutdown {
		reply.ShouldShutdown = !img.LeadsAny(hb.ID)
	}
	return reply, nil
}

// alterPartition commits a leader's ISR change, if Kafka's checks pass,
// and returns the partition as it is then.
func (c *controller) alterPartition(r cluster.AlterPartition) (cluster.PartitionReg, error) {
	ch, err := cluster.CheckAlterPartition(c.s.Image(), c.rules, r)
	if err != nil {
		return cluster.PartitionReg{}, err
	}
	next, _, err := c.s.applyLocal(5*time.Second, ch)
	if err != nil {
		return cluster.PartitionReg{}, err
	}
	reg, _ := next.Partition(r.TopicID, r.PartitionID)
	c.logger.Info("cluster: ISR changed", "topic", r.TopicID, "partition", r.PartitionID, "isr", reg.ISR, "elr", reg.ELR, "partition_epoch", reg.PartitionEpoch)
	return reg, nil
}

// serve answers one controller RPC.
func (c *controller) serve(peer cluster.NodeID, req rpcRequest) rpcResponse {
	if err := checkSender(peer, req); err != nil {
		c.logger.Warn("cluster: refused a controller RPC from a node speaking for another", "err", err)
		return rpcFailure(err)
	}
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	if !ready {
		return rpcFailure(cluster.ErrNotController) // the caller retries
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	switch {
	case req.Apply != nil:
		recs, err := cluster.DecodeRecords(req.Apply)
		if err != nil {
			return rpcFailure(err)
		}
		recs = append(recs, cluster.ClearELROnMinISRChange(c.s.Image(), recs)...)
		_, index, err := c.s.applyLocal(DefaultApplyTimeout, recs...)
		if err != nil {
			// The image the conflict was found in: the caller waits for it
			// too, so it sees what its change ran into.
			resp := rpcFailure(err)
			resp.Index = c.s.AppliedIndex()
			return resp
		}
		return rpcResponse{Index: index}
	case req.Register != nil:
		epoch, index, err := c.register(*req.Register)
		if err != nil {
			return rpcFailure(err)
		}
		return rpcResponse{Epoch: epoch, Index: index}
	case req.ReadIndex:
		return rpcResponse{Index: c.s.AppliedIndex()}
	case req.Voter != nil:
		if err := c.changeVoter(*req.Voter); err != nil {
			return rpcFailure(err)
		}
		return rpcResponse{Index: c.s.r.LastIndex()}
	case req.Observer != nil:
		if err := cluster.NeedsLevel(c.s.Image(), cluster.MetadataVersionRoles, fmt.Sprintf("node %d joining as a broker-only node (--roles broker)", req.Observer.ID)); err != nil {
			return rpcFailure(err)
		}
		v := *req.Observer
		v.Nonvoter = true
		if err := c.changeVoter(v); err != nil {
			return rpcFailure(err)
		}
		return rpcResponse{Index: c.s.r.LastIndex()}
	case req.AlterPartition != nil:
		reg, err := c.alterPartition(*req.AlterPartition)
		if err != nil {
			return rpcFailure(err)
		}
		return rpcResponse{Partition: &reg, Index: c.s.AppliedIndex()}
	case req.ElectLeaders != nil:
		return rpcResponse{Results: c.electLeaders(*req.ElectLeaders), Index: c.s.AppliedIndex()}
	case req.Reassign != nil:
		return rpcResponse{Results: c.alterReassignments(*req.Reassign), Index: c.s.AppliedIndex()}
	case req.Heartbeat != nil:
		reply, err := c.heartbeat(*req.Heartbeat)
		if err != nil {
			return rpcFailure(err)
		}
		return rpcResponse{Heartbeat: &reply, Index: c.s.AppliedIndex()}
	}
	return rpcFailure(errors.New("empty controller request"))
}

// checkSender refuses a request that registers, heartbeats or changes an
// ISR on behalf of a node other than peer, the node the connection's
// certificate names (nodetls.AnyNode without inter-node TLS: trusted).
// Forwarded metadata changes, elections and reassignments are any node's
// to forward: their authority is the client's, checked where it arrived.
func checkSender(peer cluster.NodeID, req rpcRequest) error {
	if peer == nodetls.AnyNode {
		return nil
	}
	var claims cluster.NodeID = peer
	switch {
	case req.Register != nil:
		claims = req.Register.ID
	case req.Heartbeat != nil:
		claims = req.Heartbeat.ID
	case req.Observer != nil:
		claims = req.Observer.ID // a broker adds itself; voters are the operator's
	case req.AlterPartition != nil:
		claims = req.AlterPartition.Broker
	}
	if claims != peer {
		return fmt.Errorf("%w: node %d's connection spoke for node %d", cluster.ErrNotTheSender, peer, claims)
	}
	return nil
}

// VoterStatus is one voter as the controller sees it.
type VoterStatus struct {
	ID   cluster.NodeID
	Addr string
	// AppliedIndex is how far the node's metadata image has come (its last
	// heartbeat's; the controller's own for itself), LastContact when the
	// controller last heard from it (zero: not since it took over).
	AppliedIndex uint64
	LastContact  time.Time
	// Observer: a non-voter (a broker-only node) that follows the log.
	Observer bool `json:",omitempty"`
}

// QuorumStatus is the metadata quorum as its leader sees it.
type QuorumStatus struct {
	Leader      cluster.NodeID
	Term        uint64
	CommitIndex uint64
	Voters      []VoterStatus // and non-voters, marked Observer
}

// quorumStatus answers for the controller only (ok false elsewhere).
func (c *controller) quorumStatus() (QuorumStatus, bool) {
	c.mu.Lock()
	ready := c.ready
	applied, contact := maps.Clone(c.applied), maps.Clone(c.lastContact)
	c.mu.Unlock()
	if !ready {
		return QuorumStatus{}, false
	}
	id, _, _ := c.s.Leader()
	st := QuorumStatus{Leader: id, Term: c.s.term(), CommitIndex: c.s.r.CommitIndex()}
	cfg := c.s.r.GetConfiguration()
	if cfg.Error() != nil {
		return QuorumStatus{}, false
	}
	for _, srv := range cfg.Configuration().Servers {
		n, _ := strconv.Atoi(string(srv.ID))
		v := VoterStatus{ID: cluster.NodeID(n), Addr: string(srv.Address), AppliedIndex: applied[cluster.NodeID(n)], LastContact: contact[cluster.NodeID(n)],
			Observer: srv.Suffrage != raft.Voter}
		if cluster.NodeID(n) == id {
			v.AppliedIndex, v.LastContact = c.s.AppliedIndex(), time.Now()
		}
		st.Voters = append(st.Voters, v)
	}
	slices.SortFunc(st.Voters, func(a, b VoterStatus) int { return int(a.ID - b.ID) })
	return st, true
}

// VoterChange adds a voter to the metadata quorum or removes one.
type VoterChange struct {
	ID     cluster.NodeID
	Addr   string // its raft address (to add)
	Remove bool
	// Nonvoter adds the node as a raft non-voter instead: a broker-only
	// node asks for it at every start, so that it receives the metadata
	// log (Kafka's observers). It never gets a vote. It travels as its
	// own request (rpcRequest.Observer), never inside Voter: a controller
	// older than roles would read a voter change without the flag.
	Nonvoter bool `json:"-"`
}

// changeVoter changes the quorum's membership through raft (a
// configuration entry, committed by the old majority and the new).
func (c *controller) changeVoter(v VoterChange) error {
	id := raft.ServerID(strconv.Itoa(int(v.ID)))
	var f raft.IndexFuture
	if err := c.checkVoterChange(v); err != nil {
		return err
	}
	switch {
	case v.Remove:
		f = c.s.r.RemoveServer(id, 0, 10*time.Second)
	case v.Nonvoter:
		if _, _, err := net.SplitHostPort(v.Addr); err != nil {
			return fmt.Errorf("%w: node %d's raft address %q: %v", cluster.ErrConflict, v.ID, v.Addr, err)
		}
		f = c.s.r.AddNonvoter(id, raft.ServerAddress(v.Addr), 0, 10*time.Second)
	default:
		if _, _, err := net.SplitHostPort(v.Addr); err != nil {
			return fmt.Errorf("%w: voter %d's raft address %q: %v", cluster.ErrConflict, v.ID, v.Addr, err)
		}
		f = c.s.r.AddVoter(id, raft.ServerAddress(v.Addr), 0, 10*time.Second)
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("cluster: changing the quorum's voters: %w", err)
	}
	c.logger.Info("cluster: quorum membership changed", "voter", v.ID, "addr", v.Addr, "removed", v.Remove, "nonvoter", v.Nonvoter)
	return nil
}
