package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strandmq/strand/internal/cluster"
)

// Roles in the quorum (cluster/roles.go has the roles themselves): who
// votes, the observers (broker-only nodes) that follow the log as raft
// non-voters, and the controller's checks of registrations and voter
// changes against a node's roles.

// suffrages maps the quorum's members to whether each votes, from this
// node's latest raft configuration.
func (s *RaftStore) suffrages() (map[cluster.NodeID]bool, error) {
	f := s.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("cluster: raft configuration: %w", err)
	}
	out := map[cluster.NodeID]bool{}
	for _, srv := range f.Configuration().Servers {
		var id cluster.NodeID
		if _, err := fmt.Sscan(string(srv.ID), &id); err == nil {
			out[id] = srv.Suffrage == raft.Voter
		}
	}
	return out, nil
}

// QuorumMembers is the quorum's configuration as this node holds it (any
// member: it need not lead).
func (s *RaftStore) QuorumMembers() ([]cluster.QuorumMember, error) {
	f := s.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("cluster: raft configuration: %w", err)
	}
	var out []cluster.QuorumMember
	for _, srv := range f.Configuration().Servers {
		var id cluster.NodeID
		if _, err := fmt.Sscan(string(srv.ID), &id); err == nil {
			out = append(out, cluster.QuorumMember{ID: id, Addr: string(srv.Address), Voter: srv.Suffrage == raft.Voter})
		}
	}
	slices.SortFunc(out, func(a, b cluster.QuorumMember) int { return int(a.ID - b.ID) })
	return out, nil
}

// checkRoles refuses a registration whose roles differ from those its
// node id registered with, and a broker-only registration from a voter:
// either would leave a node doing what its operator did not ask (a voter
// that believes it is broker-only still votes; a controller-only node
// that was a broker still holds replicas).
func (c *controller) checkRoles(img *cluster.Image, r cluster.Registration) error {
	if old, ok := img.Broker(r.ID); ok && !slices.Equal(old.Roles, r.Roles) {
		return fmt.Errorf("%w: node %d registered with --roles %s and this process has --roles %s; a node id keeps its roles "+
			"(give the node a new id: drain and remove the old one)", cluster.ErrRoles, r.ID, cluster.RolesString(old.Roles), cluster.RolesString(r.Roles))
	}
	if cluster.HasRole(r.Roles, cluster.RoleController) {
		return nil
	}
	voters, err := c.s.suffrages()
	if err != nil {
		return err
	}
	if voters[r.ID] {
		return fmt.Errorf("%w: node %d is a voter of the metadata quorum but registers with --roles broker; "+
			"remove it from the quorum first (strand cluster remove-voter)", cluster.ErrRoles, r.ID)
	}
	return nil
}

// checkVoterChange refuses to make a broker-only node a voter — one that
// registered so, or that is in the quorum as a non-voter (only
// broker-only nodes are) — and to turn a voter into a non-voter.
func (c *controller) checkVoterChange(v VoterChange) error {
	if v.Remove {
		return nil
	}
	members, err := c.s.suffrages()
	if err != nil {
		return err
	}
	voter, member := members[v.ID]
	switch {
	case v.Nonvoter && voter:
		return fmt.Errorf("%w: node %d is a voter of the metadata quorum; a broker-only node with its id cannot join "+
			"(remove the voter first, or give the broker another id)", cluster.ErrRoles, v.ID)
	case v.Nonvoter:
		return nil
	case member && !voter:
		return fmt.Errorf("%w: node %d follows the quorum as a non-voter: it runs with --roles broker and never votes", cluster.ErrRoles, v.ID)
	}
	if br, ok := c.s.Image().Broker(v.ID); ok && !br.IsController() {
		return fmt.Errorf("%w: node %d registered with --roles broker and never votes; a voter is a node started with --roles controller or controller,broker", cluster.ErrRoles, v.ID)
	}
	return nil
}

// checkObserver refuses to start a broker-only node on a raft log whose
// quorum has this node as a voter: the directory was a controller's.
func (s *RaftStore) checkObserver(self cluster.NodeID, _ string) error {
	members, err := s.suffrages()
	if err != nil {
		return err
	}
	if members[self] {
		return fmt.Errorf("cluster: this node's raft log has node %d as a voter of the metadata quorum, and it now starts with --roles broker: "+
			"a node keeps its roles (remove the voter and start the broker with a new id and an empty directory)", self)
	}
	return nil
}

// joinAsObserver asks the quorum, until one of its voters (the leader)
// accepts or this store closes, to add this node as a non-voter at addr.
// The voters are asked in turn: a joining node knows no leader yet (only
// a leader's appends tell it), and every voter but the leader answers
// "not the controller" at once.
func (s *RaftStore) joinAsObserver(voters []Voter, addr string, logger *slog.Logger) {
	req := rpcRequest{Observer: &VoterChange{ID: s.self, Addr: addr}}
	var warned time.Time
	for {
		var last error
		for _, v := range voters {
			if _, leader, ok := s.Leader(); ok {
				v.Addr = leader // known now: ask it first
			}
			resp, err := call(s.peers, s.node, v.Addr, req, 10*time.Second, func() bool { return false })
			switch {
			case err == nil && resp.Code == "":
				logger.Info("cluster: following the metadata quorum as a non-voter (--roles broker)", "node", s.self, "raft_addr", addr)
				return
			case err == nil && resp.Code != "not_controller":
				last = cluster.RPCError(resp.Code, resp.Err)
			case err != nil:
				last = err
			}
		}
		if last != nil && time.Since(warned) > 10*time.Second {
			warned = time.Now()
			if errors.Is(last, cluster.ErrInconsistentClusterID) {
				logger.Error("cluster: the metadata quorum this node was pointed at is another cluster's; not joining it", "node", s.self, "err", last)
			} else {
				logger.Warn("cluster: cannot join the metadata quorum as a non-voter yet; retrying", "node", s.self, "err", last)
			}
		}
		select {
		case <-s.done:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
