package kafka

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/replica"
)

// leaderQuota is the node's leader-side replication quota (Kafka's
// leader.replication.throttled.rate): one for every throttled replica its
// internal listener serves. Kafka's ReplicaManager.shouldLeaderThrottle
// is the rule: a follower's fetch of partition p goes without records
// while the quota is exceeded, if the topic's
// leader.replication.throttled.replicas names p on this node and the
// follower is not in p's ISR — an in-sync follower is never held back,
// or the throttle would push it out of the ISR.
type leaderQuota struct {
	mu    sync.Mutex
	t     replica.Throttle
	bytes atomic.Int64 // served to throttled replicas, ever
}

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
	s.leaderQuota.mu.Lock()
	defer s.leaderQuota.mu.Unlock()
	over, _ := s.leaderQuota.t.Exceeded(time.Now(), rate)
	return rate, over
}

// chargeLeaderThrottle records n bytes served to a throttled replica.
func (s *Server) chargeLeaderThrottle(rate int64, n int) {
	s.leaderQuota.mu.Lock()
	s.leaderQuota.t.Record(time.Now(), rate, n)
	s.leaderQuota.mu.Unlock()
	s.leaderQuota.bytes.Add(int64(n))
}

// LeaderThrottledBytes returns the bytes this listener has served to
// leader-throttled replicas.
func (s *Server) LeaderThrottledBytes() int64 { return s.leaderQuota.bytes.Load() }
