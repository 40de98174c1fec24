package broker

import (
	"slices"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/record"
)

// The reconciler makes this node's partitions what the metadata image says
// (REPLICATION.md §1.7): each registered partition leads or follows at the
// registered leader epoch, with its replicas and ISR. Images arrive on the
// store's applying goroutine; the newest waiting one replaces any older,
// and one goroutine applies them, so the store never waits on a partition.

// startReconciler subscribes to the metadata and applies the current
// image; Close stops it.
func (b *Broker) startReconciler() {
	b.images = make(chan *cluster.Image, 1)
	b.unsubscribe = b.meta.Subscribe(func(img *cluster.Image) {
		for {
			select {
			case b.images <- img:
				return
			default:
			}
			select { // replace the older image still waiting
			case <-b.images:
			default:
			}
		}
	})
	b.reconcile(b.meta.Image())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case img := <-b.images:
				b.reconcile(img)
			}
		}
	}()
}

// reconcile applies img's partition registrations that are newer (by
// leader epoch, then partition epoch) than what each partition has.
func (b *Broker) reconcile(img *cluster.Image) {
	self := b.cfg.NodeID
	for _, t := range b.Topics() {
		for _, p := range t.partitions {
			reg, ok := img.Partition(t.ID, int32(p.id))
			if !ok {
				continue
			}
			cur, epoch := p.state(), record.Epoch(reg.LeaderEpoch)
			if epoch < cur.epoch || (epoch == cur.epoch && reg.PartitionEpoch <= cur.partitionEpoch) {
				continue
			}
			replicas, isr := nodeIDs(reg.Replicas), nodeIDs(reg.ISR)
			var err error
			if NodeID(reg.Leader) == self {
				err = p.BecomeLeader(epoch, replicas, isr)
			} else {
				err = p.BecomeFollower(epoch, NodeID(reg.Leader), replicas, isr)
			}
			if err != nil {
				b.logger.Warn("broker: applying a partition's registration", "topic", t.Name, "partition", p.id, "err", err)
				continue
			}
			p.setPartitionEpoch(reg.PartitionEpoch)
		}
	}
}

func nodeIDs(ids []cluster.NodeID) []NodeID {
	out := make([]NodeID, len(ids))
	for i, id := range ids {
		out[i] = NodeID(id)
	}
	return out
}

// setPartitionEpoch records the registration a role change came from.
func (p *Partition) setPartitionEpoch(e int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := *p.state()
	s.replicas, s.isr = slices.Clone(s.replicas), slices.Clone(s.isr)
	s.partitionEpoch = e
	p.replica.Store(&s)
}
