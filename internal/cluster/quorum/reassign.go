package quorum

import (
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// Partition reassignments as the controller runs them: cluster.Reassignments
// starts them, cluster.CompleteReassignment finishes each once its adding
// replicas are in sync, and the controller commits both.

// alterReassignments runs an operator's request (under decide); a failure
// to commit fails every partition that was to change.
func (c *controller) alterReassignments(req cluster.AlterReassignments) []cluster.PartitionResult {
	recs, results := cluster.Reassignments(c.s.Image(), req)
	if !c.commitRequest(recs, results) {
		return results
	}
	for _, r := range recs {
		ch := r.(cluster.PartitionChange)
		c.logger.Info("cluster: partition reassignment", "topic", ch.TopicID, "partition", ch.PartitionID, "replicas", ch.Replicas,
			"adding", ch.Reassignment.Adding, "removing", ch.Reassignment.Removing)
	}
	return results
}

// completeReassignments finishes every reassignment whose adding replicas
// have all joined the ISR (run on the controller's tick).
func (c *controller) completeReassignments() {
	c.decide.Lock()
	defer c.decide.Unlock()
	img := c.s.Image()
	var recs []cluster.Record
	var done []cluster.TopicPartition
	img.EachPartition(func(t cluster.TopicID, p int32, reg cluster.PartitionReg) {
		if ch, ok := cluster.CompleteReassignment(img, reg); ok {
			ch.TopicID, ch.PartitionID = t, p
			recs = append(recs, ch)
			done = append(done, cluster.TopicPartition{Topic: t, Partition: p})
		}
	})
	if len(recs) == 0 {
		return
	}
	// The throttle an operator set for these moves (strand topic reassign
	// --throttle, kafka-reassign-partitions --throttle) ends with them.
	unthrottle := cluster.UnthrottleCompleted(img, done)
	if _, _, err := c.s.applyLocal(DefaultApplyTimeout, append(recs, unthrottle...)...); err != nil {
		c.logger.Warn("cluster: completing partition reassignments", "err", err)
		return
	}
	for _, r := range recs {
		ch := r.(cluster.PartitionChange)
		c.logger.Info("cluster: partition reassignment complete", "topic", ch.TopicID, "partition", ch.PartitionID, "replicas", ch.Replicas, "isr", ch.ISR)
	}
}

// AlterReassignments asks the controller to start or cancel partition
// reassignments; it returns once this node's image holds them.
func (s *RaftStore) AlterReassignments(req cluster.AlterReassignments, timeout time.Duration) ([]cluster.PartitionResult, error) {
	resp, err := s.callController(rpcRequest{Reassign: &req}, timeout)
	if err != nil {
		return nil, err
	}
	if _, err := s.waitApplied(resp.Index, timeout); err != nil {
		return nil, err
	}
	return resp.Results, nil
}
