package quorum

import (
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// The partition balancer's rounds: cluster.PlanBalance decides from the
// image alone; the controller commits the plan on its balancer tick
// (ControllerConfig.PartitionBalancerInterval) and elects the preferred
// leaders a reorder leaves behind.

// balance runs one balancer round (on the controller's balancer tick).
func (c *controller) balance() {
	c.decide.Lock()
	defer c.decide.Unlock()
	img := c.s.Image()
	plan := cluster.PlanBalance(img, cluster.BalanceMovesPerRound)
	if len(plan) == 0 {
		return
	}
	recs, results := cluster.Reassignments(img, cluster.AlterReassignments{Parts: plan})
	if !c.commitRequest(recs, results) {
		c.logger.Warn("cluster: partition balancer", "results", results)
		return
	}
	// A reorder completed at once: elect its new preferred leader now
	// rather than at the next imbalance check.
	var reordered []cluster.TopicPartition
	for _, r := range plan {
		if reg, ok := c.s.Image().Partition(r.Topic, r.Partition); ok && !reg.Reassigning() && reg.Leader != reg.Replicas[0] {
			reordered = append(reordered, r.TopicPartition)
		}
	}
	if len(reordered) > 0 {
		if recs, _ := cluster.Elections(c.s.Image(), c.rules, cluster.ElectLeaders{Type: cluster.ElectPreferred, Partitions: reordered}); len(recs) > 0 {
			if _, _, err := c.s.applyLocal(DefaultApplyTimeout, recs...); err != nil {
				c.logger.Warn("cluster: partition balancer: electing preferred leaders", "err", err)
			}
		}
	}
	brokers := map[cluster.NodeID]int{}
	for _, r := range plan {
		for _, id := range r.Replicas {
			brokers[id]++
		}
	}
	c.logger.Info("cluster: partition balancer moved replicas toward even counts", "partitions", len(plan), "brokers", slices.Sorted(maps.Keys(brokers)))
}

// balancerTicker is the balancer's tick channel (nil: off).
func balancerTicker(every time.Duration) (<-chan time.Time, func()) {
	if every <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(every)
	return t.C, t.Stop
}
