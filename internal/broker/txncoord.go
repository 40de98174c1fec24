package broker

// The node's side of the transaction coordinator (package txncoord runs
// it): which __transaction_state partitions it leads and so which
// coordinators it runs (loaded as leadership comes, stopped as it goes),
// the markers it writes for them here or through a partition's leader,
// and the routing of a transactional id to its coordinator's node.

import (
	"context"
	"errors"
	"fmt"

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/txn"
	"github.com/strandmq/strand/internal/txn/txncoord"
	"github.com/strandmq/strand/internal/wire"
)

// TransactionStateTopic is the transaction coordinator's log.
const TransactionStateTopic = txn.LogTopic

// TxnCoordinator is the transaction coordinator of one __transaction_state
// partition this node leads.
type TxnCoordinator = txncoord.Coordinator

// txnStateTopicSpec is __transaction_state with n partitions: compacted,
// never retained away, as Kafka's TransactionLogConfig.
func txnStateTopicSpec(n int32) TopicSpec {
	spec := offsetsTopicSpec(n)
	spec.Name = TransactionStateTopic
	return spec
}

// txnWriteHook, when set (tests), is called after each durable write of a
// transaction's end: its __transaction_state records and each marker.
var txnWriteHook func(what string)

// TxnStats counts what this node's transaction coordinators did since it
// started.
type TxnStats struct {
	// Ongoing is how many transactional ids have a transaction open now.
	Ongoing int
	// Committed and Aborted count completed transactions; TimedOut the
	// aborts the timeout sweep started.
	Committed, Aborted, TimedOut int64
}

// TxnStats returns the coordinators' counters and the ongoing count.
func (b *Broker) TxnStats() TxnStats {
	st := TxnStats{Committed: b.txnCount.Committed.Load(), Aborted: b.txnCount.Aborted.Load(), TimedOut: b.txnCount.TimedOut.Load()}
	for _, md := range b.Transactions() {
		if md.State == txn.Ongoing {
			st.Ongoing++
		}
	}
	return st
}

// openTxnState loads a single node's transaction coordinator if its
// __transaction_state exists. Like Kafka, the topic is created on the
// first request that needs it (ensureTxnState).
func (b *Broker) openTxnState() error {
	if _, err := b.Topic(TransactionStateTopic); err != nil {
		return nil
	}
	return b.loadLocalTxnState()
}

// ensureTxnState creates a single node's __transaction_state (one
// partition: nothing to spread) and loads its coordinator, once.
func (b *Broker) ensureTxnState() error {
	b.txnEnsure.Lock()
	defer b.txnEnsure.Unlock()
	if b.txns.Len() > 0 {
		return nil
	}
	if b.isClosed() {
		return ErrClosed
	}
	if _, err := b.Topic(TransactionStateTopic); err != nil {
		if _, err := b.CreateTopic(txnStateTopicSpec(1)); err != nil && !errors.Is(err, ErrTopicExists) {
			return fmt.Errorf("%w: create %s: %w", ErrCoordinatorNotAvailable, TransactionStateTopic, err)
		}
	}
	return b.loadLocalTxnState()
}

func (b *Broker) loadLocalTxnState() error {
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		return err
	}
	for _, p := range t.local() {
		c, err := b.loadTxnCoordinator(p)
		if err != nil {
			return err
		}
		b.txns.Set(int32(p.ID()), p, c)
	}
	return nil
}

// syncTxnCoordinators runs a coordinator for each __transaction_state
// partition this cluster member leads and stops the others, as
// syncCoordinators does for groups.
func (b *Broker) syncTxnCoordinators() {
	b.txns.Sync(b.ledPartitions(TransactionStateTopic), b.isClosed, b.stop, b.node.Host.Go)
}

// writeMarker writes one marker: to the partition here if this node leads
// it, else through its leader's internal listener (WriteTxnMarkers). A
// partition of a deleted topic needs none.
func (b *Broker) writeMarker(ctx context.Context, tp txn.Partition, m *txn.Markers) error {
	t, err := b.Topic(tp.Topic)
	if err != nil {
		if errors.Is(err, ErrUnknownTopicOrPartition) {
			return nil
		}
		return err
	}
	if tp.Partition < 0 || tp.Partition >= t.Partitions() {
		return nil
	}
	p, err := t.Partition(PartitionID(tp.Partition))
	if err == nil && p.CheckLeader() == nil {
		return p.WriteMarker(ctx, m.ProducerID, m.Epoch, m.Commit, m.CoordinatorEpoch)
	}
	if !b.clustered() {
		return err
	}
	leader := b.PartitionInfo(t, PartitionID(tp.Partition)).Leader
	if leader < 0 {
		return fmt.Errorf("%w: %s-%d has no leader", ErrNotLeader, tp.Topic, tp.Partition)
	}
	err = b.peers.WriteTxnMarker(ctx, int32(leader), tp.Topic, tp.Partition,
		wire.Marker{ProducerID: int64(m.ProducerID), ProducerEpoch: int16(m.Epoch), Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch})
	if err != nil {
		return fmt.Errorf("broker: marker for %s-%d on node %d: %w", tp.Topic, tp.Partition, leader, err)
	}
	return nil
}

// EnlistRemote asks the coordinator of transactionalID, which runs on
// another node, to add parts to the producer's transaction (TV2's implicit
// add on Produce v12 and TxnOffsetCommit v5) or, with verifyOnly, to check
// that they are in it: AddPartitionsToTxn v5, as Kafka's partition
// leaders send it. It returns each partition's Kafka error code; an error
// means the coordinator could not be asked (the caller answers with a
// retriable error).
func (b *Broker) EnlistRemote(ctx context.Context, transactionalID string, pid producer.ID, epoch producer.Epoch, parts []txn.Partition, verifyOnly bool) (map[txn.Partition]int16, error) {
	node, err := b.TxnCoordinatorNode(transactionalID)
	if err != nil {
		return nil, err
	}
	if node == b.cfg.NodeID {
		return nil, fmt.Errorf("%w: %s", ErrCoordinatorLoading, transactionalID)
	}
	wparts := make([]wire.TopicPartition, len(parts))
	for i, p := range parts {
		wparts[i] = wire.TopicPartition{Topic: p.Topic, Partition: p.Partition}
	}
	codes, err := b.peers.AddPartitionsToTxn(ctx, int32(node), transactionalID, int64(pid), int16(epoch), wparts, verifyOnly)
	if err != nil {
		return nil, fmt.Errorf("broker: transaction coordinator of %s on node %d: %w", transactionalID, node, err)
	}
	out := make(map[txn.Partition]int16, len(codes))
	for p, code := range codes {
		out[txn.Partition{Topic: p.Topic, Partition: p.Partition}] = code
	}
	return out, nil
}

// TxnCoordinatorFor returns the coordinator of transactionalID if this
// node runs it: ErrNotCoordinator if another node leads its partition,
// ErrCoordinatorLoading while this one replays it.
func (b *Broker) TxnCoordinatorFor(transactionalID string) (*TxnCoordinator, error) {
	if !b.clustered() {
		if err := b.ensureTxnState(); err != nil {
			return nil, err
		}
	}
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		return nil, fmt.Errorf("%w: %s does not exist yet", ErrNotCoordinator, TransactionStateTopic)
	}
	k := txn.PartitionFor(transactionalID, t.Partitions())
	c, ok := b.txns.Get(k)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: transactional id %q is coordinated by the leader of %s-%d, not node %d", ErrNotCoordinator, transactionalID, TransactionStateTopic, k, b.cfg.NodeID)
	case c == nil:
		return nil, fmt.Errorf("%w: %s-%d", ErrCoordinatorLoading, TransactionStateTopic, k)
	}
	return c, nil
}

// TxnCoordinatorNode returns the node that coordinates transactionalID: the
// leader of its __transaction_state partition, created on a cluster's first
// request as Kafka does.
func (b *Broker) TxnCoordinatorNode(transactionalID string) (NodeID, error) {
	if !b.clustered() {
		if err := b.ensureTxnState(); err != nil {
			return -1, err
		}
		return b.cfg.NodeID, nil
	}
	t, err := b.Topic(TransactionStateTopic)
	if err != nil {
		spec := txnStateTopicSpec(b.cfg.OffsetsTopicPartitions)
		spec.ReplicationFactor = int16(min(3, len(liveBrokers(b.meta.Image()))))
		if t, err = b.CreateTopic(spec); errors.Is(err, ErrTopicExists) {
			t, err = b.Topic(TransactionStateTopic)
		}
		if err != nil {
			return -1, fmt.Errorf("%w: creating %s: %w", ErrCoordinatorNotAvailable, TransactionStateTopic, err)
		}
	}
	info := b.PartitionInfo(t, PartitionID(txn.PartitionFor(transactionalID, t.Partitions())))
	if info.Leader < 0 {
		return -1, fmt.Errorf("%w: %s has no leader", ErrCoordinatorNotAvailable, TransactionStateTopic)
	}
	return info.Leader, nil
}

// Transactions lists every transactional id of every coordinator on this
// node.
func (b *Broker) Transactions() []txn.Metadata {
	var out []txn.Metadata
	for _, c := range b.txns.Loaded() {
		out = append(out, c.All()...)
	}
	return out
}

// ListTransactions is ListTransactions over every coordinator on this node.
func (b *Broker) ListTransactions(f txn.ListFilter) ([]txn.Metadata, []string) {
	var out []txn.Metadata
	var unknown []string
	for _, c := range b.txns.Loaded() {
		mds, u := c.List(f)
		out, unknown = append(out, mds...), u
	}
	return out, unknown
}

// loadTxnCoordinator replays p, a __transaction_state partition this
// node leads, into a new coordinator.
func (b *Broker) loadTxnCoordinator(p *Partition) (*TxnCoordinator, error) {
	offsetsPartitions := int32(1)
	if b.clustered() {
		offsetsPartitions = b.cfg.OffsetsTopicPartitions
		if t, err := b.Topic(ConsumerOffsetsTopic); err == nil {
			offsetsPartitions = t.Partitions()
		}
	}
	return txncoord.Load(txncoord.Config{
		Store:             b.coordStore(p),
		Partition:         int32(p.ID()),
		LeaderEpoch:       int32(p.LeaderEpoch()),
		OffsetsPartitions: offsetsPartitions,
		MaxTimeout:        b.cfg.TransactionMaxTimeout,
		SweepInterval:     b.cfg.TransactionSweepInterval,
		Now:               b.cfg.Now,
		Logger:            b.logger,
		Counters:          &b.txnCount,
		AllocateProducerID: func() (producer.ID, error) {
			id, _, err := b.AllocateProducerID()
			return id, err
		},
		WriteMarker: b.writeMarker,
		WriteHook: func(what string) {
			if txnWriteHook != nil {
				txnWriteHook(what)
			}
		},
	})
}
