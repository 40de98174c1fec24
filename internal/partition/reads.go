package partition

import "fmt"

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
