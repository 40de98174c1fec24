package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
)

// remoteProduceTimeout bounds a write to a partition led by another node.
const remoteProduceTimeout = 10 * time.Second

// produceRemote appends batch (a non-idempotent v2 batch) to partition p
// through its leader's internal listener with acks=all: the write that a
// quarantine makes to a DLQ partition led by another node. An error
// carries the leader's Kafka error, so the producer whose batch needed it
// gets a retriable answer it knows (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_
// REPLICAS, …) and tries again; it returns the batch's base offset; records the leader took before a lost
// answer come twice into the DLQ then, never zero times.
func (b *Broker) produceRemote(leader NodeID, p *Partition, batch []byte) (record.Offset, error) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9) // topics by name (v13 names them by id)
	req.Acks, req.TimeoutMillis = -1, int32(remoteProduceTimeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = p.Topic()
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = int32(p.ID()), batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.roundTrip(context.Background(), leader, req)
	if err != nil {
		return record.NoOffset, fmt.Errorf("%w: %s-%d: leader %d: %w", ErrNotLeader, p.Topic(), p.ID(), leader, err)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return record.NoOffset, fmt.Errorf("broker: %s-%d: leader %d answered a produce for %d topics", p.Topic(), p.ID(), leader, len(pr.Topics))
	}
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return record.NoOffset, fmt.Errorf("broker: %s-%d: leader %d: %w", p.Topic(), p.ID(), leader, kerr.ErrorForCode(code))
	}
	return record.Offset(pr.Topics[0].Partitions[0].BaseOffset), nil
}

// roundTrip sends req to node's internal listener on a connection of its
// own and returns the answer, within remoteProduceTimeout.
func (b *Broker) roundTrip(ctx context.Context, node NodeID, req kmsg.Request) (kmsg.Response, error) {
	addr, err := b.internalAddr(node)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, remoteProduceTimeout)
	defer cancel()
	c, err := b.cfg.Dialer.DialNode(ctx, int32(node), addr, "strand-"+strconv.Itoa(int(b.cfg.NodeID)))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.RoundTrip(req, time.Now().Add(remoteProduceTimeout+time.Second))
}
