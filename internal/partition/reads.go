package partition

import (
	"fmt"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/record"
)

// Reads are a consumer's reads of a partition: from its leader only, or
// (KIP-392 follower fetching) from whichever replica of it this node
// holds. A follower serves records up to its own high watermark, which
// trails the leader's by at most one replica fetch, and its own last
// stable offset: everything it returns is committed, as on the leader.
type Reads struct {
	p          *Partition
	anyReplica bool
}

// ConsumerReads returns p's consumer reads; anyReplica lets a follower
// serve them (a Fetch v11+ from a consumer, which Kafka lets any replica
// answer).
func (p *Partition) ConsumerReads(anyReplica bool) Reads {
	return Reads{p: p, anyReplica: anyReplica}
}

// serving is the error of a consumer read this replica must not serve:
// none on the leader; on a follower, none when anyReplica is set and the
// partition has a leader it follows and the node is not fenced (a fenced
// node's copy may be far behind: its consumers go back to the leader).
func (p *Partition) serving(anyReplica bool) error {
	if !anyReplica {
		return p.notLeader()
	}
	if err := p.node.Host.Fenced(); err != nil {
		return err
	}
	if s := p.state(); s.role != RoleLeader && (s.leader < 0 || s.epoch < 0) {
		return fmt.Errorf("%w: %s-%d has no leader to follow", ErrNotLeader, p.topic, p.id)
	}
	return nil
}

// PreferredReadReplica is the replica this partition's leader sends a
// consumer in rack to (KIP-392, Kafka's RackAwareReplicaSelector): -1 to
// stay on the leader — when this node does not lead, rack is empty, the
// leader is in rack itself, or no in-sync replica there holds
// fetchOffset — else the in-sync follower in rack, unfenced, whose log
// reaches fetchOffset, the furthest along (the most recently caught up
// on a tie).
func (p *Partition) PreferredReadReplica(rack string, fetchOffset record.Offset) NodeID {
	ls, s := p.leading()
	img := p.node.Host.Image()
	if ls == nil || rack == "" || img == nil {
		return -1
	}
	if self, ok := img.Broker(cluster.NodeID(p.node.ID)); !ok || self.Rack == rack {
		return -1
	}
	best := NodeID(-1)
	var bestLEO record.Offset
	var bestCaughtUp time.Time
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for id, f := range ls.followers {
		if !slices.Contains(s.isr, id) || f.LEO < fetchOffset {
			continue
		}
		if b, ok := img.Broker(cluster.NodeID(id)); !ok || b.Fenced || b.Rack != rack {
			continue
		}
		if best < 0 || f.LEO > bestLEO || f.LEO == bestLEO && f.LastCaughtUp.After(bestCaughtUp) {
			best, bestLEO, bestCaughtUp = id, f.LEO, f.LastCaughtUp
		}
	}
	return best
}
