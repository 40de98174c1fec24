package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/wire"
)

// produceRemote appends batch (a non-idempotent v2 batch) to partition p
// through its leader's internal listener with acks=all: the write that a
// quarantine makes to a DLQ partition led by another node, and the
// registry's to _schemas. An error carries the leader's Kafka error, so
// the producer whose batch needed it gets a retriable answer it knows
// (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, …) and tries again; a
// leader that cannot be reached is NOT_LEADER_OR_FOLLOWER. It returns the
// batch's base offset; records the leader took before a lost answer come
// twice into the DLQ then, never zero times.
func (b *Broker) produceRemote(leader NodeID, p *Partition, batch []byte) (record.Offset, error) {
	at, err := b.peers.Produce(context.Background(), int32(leader), p.Topic(), int32(p.ID()), batch)
	switch {
	case errors.Is(err, wire.ErrUnreachable):
		return record.NoOffset, fmt.Errorf("%w: %s-%d: leader %d: %w", ErrNotLeader, p.Topic(), p.ID(), leader, err)
	case err != nil:
		return record.NoOffset, fmt.Errorf("broker: %s-%d: leader %d: %w", p.Topic(), p.ID(), leader, err)
	}
	return record.Offset(at), nil
}
