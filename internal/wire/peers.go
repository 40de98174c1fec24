package wire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CallTimeout bounds one call to another node (Peers).
const CallTimeout = 10 * time.Second

// ErrUnreachable wraps a Peers call's failure to reach its node, or to
// hear its answer: nothing the node said (which comes as a kerr error).
var ErrUnreachable = errors.New("wire: node unreachable")

// Peers makes the calls a node makes to another node's internal listener
// outside replication: a write to a partition it leads, a transaction
// marker, a transaction's partitions. Each call dials a connection of its
// own and closes it. Errors a peer answered with are kerr errors, so the
// caller can tell a retriable one.
type Peers struct {
	Dialer Dialer
	// Self is this node's id (the client id the peer logs).
	Self int32
	// Addr returns a node's internal listener address.
	Addr func(node int32) (string, error)
}

// RoundTrip sends req to node and returns the answer, within CallTimeout.
func (ps Peers) RoundTrip(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	addr, err := ps.Addr(node)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	c, err := ps.Dialer.DialNode(ctx, node, addr, "strand-"+strconv.Itoa(int(ps.Self)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	defer c.Close()
	resp, err := c.RoundTrip(req, time.Now().Add(CallTimeout+time.Second))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return resp, nil
}

// Produce appends batch (a non-idempotent v2 batch) to topic's partition
// on node, its leader, with acks=all, and returns the batch's base offset.
// An error the leader answered with is its kerr error; any other is a
// failure to reach it.
func (ps Peers) Produce(ctx context.Context, node int32, topic string, partition int32, batch []byte) (int64, error) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9) // topics by name (v13 names them by id)
	req.Acks, req.TimeoutMillis = -1, int32(CallTimeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return -1, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("wire: node %d answered a produce for %d topics", node, len(pr.Topics))
	}
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return -1, kerr.ErrorForCode(code)
	}
	return pr.Topics[0].Partitions[0].BaseOffset, nil
}

// Marker is a transaction marker to write (WriteTxnMarkers).
type Marker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// WriteTxnMarker writes m to topic's partition on node, its leader.
func (ps Peers) WriteTxnMarker(ctx context.Context, node int32, topic string, partition int32, m Marker) error {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	mk := kmsg.NewWriteTxnMarkersRequestMarker()
	mk.ProducerID, mk.ProducerEpoch, mk.Committed, mk.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	rt.Topic, rt.Partitions = topic, []int32{partition}
	mk.Topics = append(mk.Topics, rt)
	req.Markers = append(req.Markers, mk)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return err
	}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	return nil
}

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// AddPartitionsToTxn asks the transaction coordinator on node to add
// parts to the producer's transaction or, with verifyOnly, to check that
// they are in it (AddPartitionsToTxn v5, as Kafka's partition leaders
// send it). It returns each partition's Kafka error code.
func (ps Peers) AddPartitionsToTxn(ctx context.Context, node int32, transactionalID string, pid int64, epoch int16, parts []TopicPartition, verifyOnly bool) (map[TopicPartition]int16, error) {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = transactionalID, pid, epoch, verifyOnly
	byTopic := map[string]int{}
	for _, p := range parts {
		i, ok := byTopic[p.Topic]
		if !ok {
			i = len(rt.Topics)
			byTopic[p.Topic] = i
			t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			t.Topic = p.Topic
			rt.Topics = append(rt.Topics, t)
		}
		rt.Topics[i].Partitions = append(rt.Topics[i].Partitions, p.Partition)
	}
	req.Transactions = append(req.Transactions, rt)
	resp, err := ps.RoundTrip(ctx, node, req)
	if err != nil {
		return nil, err
	}
	ar := resp.(*kmsg.AddPartitionsToTxnResponse)
	if ar.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(ar.ErrorCode)
	}
	out := make(map[TopicPartition]int16, len(parts))
	for _, t := range ar.Transactions {
		for _, tt := range t.Topics {
			for _, p := range tt.Partitions {
				out[TopicPartition{Topic: tt.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("wire: node %d did not answer for %s-%d", node, p.Topic, p.Partition)
		}
	}
	return out, nil
}
