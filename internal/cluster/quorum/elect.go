package quorum

import (
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// Leader elections as the controller runs them: cluster.Elections and
// cluster.Imbalanced decide, the controller commits (an operator's
// ElectLeaders, auto.leader.rebalance.enable's periodic check).

// electLeaders runs an operator's elections; a failure to commit them
// fails every partition that was to change.
func (c *controller) electLeaders(req cluster.ElectLeaders) []cluster.PartitionResult { // under decide
	recs, results := cluster.Elections(c.s.Image(), c.rules, req)
	if !c.commitRequest(recs, results) {
		return results
	}
	c.logger.Info("cluster: leaders elected on request", "type", req.Type, "partitions", len(recs))
	c.warnUnclean(recs)
	return results
}

// commitRequest commits an operator request's changes and reports
// whether they committed; if not, every partition that was to change is
// failed with the reason in results. false too when there is nothing to
// commit.
func (c *controller) commitRequest(recs []cluster.Record, results []cluster.PartitionResult) bool {
	if len(recs) == 0 {
		return false
	}
	_, _, err := c.s.applyLocal(DefaultApplyTimeout, recs...)
	if err == nil {
		return true
	}
	f := rpcFailure(err)
	for i := range results {
		if results[i].Code == "" {
			results[i].Code, results[i].Err = f.Code, f.Err
		}
	}
	return false
}

// balanceLeaders moves leadership back to preferred replicas
// (auto.leader.rebalance.enable), a bounded batch per check.
func (c *controller) balanceLeaders() {
	c.decide.Lock()
	defer c.decide.Unlock()
	recs := cluster.Imbalanced(c.s.Image(), c.rules, 1000)
	if len(recs) == 0 {
		return
	}
	if _, _, err := c.s.applyLocal(DefaultApplyTimeout, recs...); err != nil {
		c.logger.Warn("cluster: preferred-leader balancing", "err", err)
		return
	}
	c.logger.Info("cluster: moved leadership back to preferred replicas", "partitions", len(recs))
}

// ElectLeaders asks the controller for elections (ElectLeaders).
func (s *RaftStore) ElectLeaders(req cluster.ElectLeaders, timeout time.Duration) ([]cluster.PartitionResult, error) {
	resp, err := s.callController(rpcRequest{ElectLeaders: &req}, timeout)
	if err != nil {
		return nil, err
	}
	if _, err := s.waitApplied(resp.Index, timeout); err != nil { // read your writes
		return nil, err
	}
	return resp.Results, nil
}
