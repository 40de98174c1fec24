package kafka

import (
	"slices"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
)

// The node's leader-side replication quota (Kafka's
// leader.replication.throttled.rate, fetcher.Quota): one for every
// throttled replica its internal listener serves. Kafka's ReplicaManager.shouldLeaderThrottle
// is the rule: a follower's fetch of partition p goes without records
// while the quota is exceeded, if the topic's
// leader.replication.throttled.replicas names p on this node and the
// follower is not in p's ISR — an in-sync follower is never held back,
// or the throttle would push it out of the ISR.

// leaderThrottle returns the rate p's fetch by follower is throttled at
// (0: not throttled) and whether it must go without records now.
func (s *Server) leaderThrottle(p *broker.Partition, follower broker.NodeID) (int64, bool) {
	if !s.b.Clustered() {
		return 0, false
	}
	rate := s.b.MetadataImage().LeaderThrottle(p.Topic(), int32(p.ID()), cluster.NodeID(s.b.NodeID()))
	if rate <= 0 || slices.Contains(p.ISR(), follower) {
		return 0, false
	}
	over, _ := s.b.LeaderQuota().Exceeded(rate)
	return rate, over
}
