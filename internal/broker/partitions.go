package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/dlq"
	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/producer"
)

func (b *Broker) openPartition(topic string, tid TopicID, id PartitionID, tc TopicConfig) (*Partition, error) {
	return b.openPartitionTaken(topic, tid, id, tc, nil)
}

// claimAndTakeMarker is the first step of opening a partition at start-up
// (openTopics): its directory claimed and its log's clean-shutdown marker
// taken, for openPartitionTaken.
func (b *Broker) claimAndTakeMarker(topic string, tid TopicID, id PartitionID) (*partlog.CleanMarker, error) {
	name := partitionDirName(topic, id)
	if err := b.claimPartitionDir(name, tid); err != nil {
		return nil, fmt.Errorf("broker: open partition %s: %w", name, err)
	}
	m, err := partlog.TakeCleanMarker(b.logFS, filepath.Join(b.cfg.Dir, name))
	if err != nil {
		return nil, fmt.Errorf("broker: open partition %s: %w", name, err)
	}
	return &m, nil
}

// openPartitionTaken opens a partition whose directory claimAndTakeMarker
// claimed and whose marker it took (m); with m nil it does both itself.
func (b *Broker) openPartitionTaken(topic string, tid TopicID, id PartitionID, tc TopicConfig, m *partlog.CleanMarker) (*Partition, error) {
	name := partitionDirName(topic, id)
	if m == nil {
		if err := b.claimPartitionDir(name, tid); err != nil {
			return nil, fmt.Errorf("broker: open partition %s: %w", name, err)
		}
	}
	l, err := partlog.OpenTaken(b.logFS, filepath.Join(b.cfg.Dir, name), b.logConfig(tc, name), m)
	if err != nil {
		return nil, fmt.Errorf("broker: open partition %s: %w", name, err)
	}
	p, err := partition.New(b.node, topic, tid, id, l, b.partitionConfig(tc, topic, name), b.stats.counters(topic))
	if err != nil {
		return nil, fmt.Errorf("broker: open partition %s: %w", name, err)
	}
	return p, nil
}

// logConfig is a partition's log config: the topic's, with the high
// watermark replication's on a cluster member.
func (b *Broker) logConfig(tc TopicConfig, name string) partlog.Config {
	c := tc.LogConfig(b.cfg.Now, b.logger.With("partition", name))
	c.ReplicatedHighWatermark = b.clustered()
	c.WriteGate = b.node.WriteGate
	return c
}

// runISRChecks shrinks the ISR of the partitions this node leads every
// half replica.lag.time.max.ms, and checkpoints their high watermarks.
func (b *Broker) runISRChecks() {
	tick := time.NewTicker(b.cfg.ReplicaLagTime / 2)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-tick.C:
		}
		for _, t := range b.Topics() {
			for _, p := range t.local() {
				p.ShrinkISR()
				if err := p.Log().CheckpointHighWatermark(); err != nil && !errors.Is(err, partlog.ErrClosed) {
					b.logger.Warn("broker: checkpointing a high watermark", "topic", p.Topic(), "partition", p.ID(), "err", err)
				}
			}
		}
	}
}

// ReplicationStats is what this node's leaders know of replication: the
// first things to watch on a cluster.
type ReplicationStats struct {
	// UnderReplicated counts led partitions with fewer in-sync replicas
	// than replicas; UnderMinISR those below min.insync.replicas, where
	// acks=all produces fail.
	UnderReplicated, UnderMinISR int
	// ISRShrinks and ISRExpands count the ISR changes this node's leaders
	// committed since it started.
	ISRShrinks, ISRExpands int64
	// Parked counts acks=all produces waiting for the high watermark.
	Parked int64
	// Followers is each follower of each led partition.
	Followers []FollowerLag
}

// ReplicationStats reports replication as this node's leaders see it.
func (b *Broker) ReplicationStats() ReplicationStats {
	st := ReplicationStats{ISRShrinks: b.node.ISRShrinks.Load(), ISRExpands: b.node.ISRExpands.Load(), Parked: b.node.Parked.Load()}
	now := b.cfg.Now()
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			r, ok := p.Replication(now)
			if !ok {
				continue
			}
			if r.UnderReplicated {
				st.UnderReplicated++
			}
			if r.UnderMinISR {
				st.UnderMinISR++
			}
			st.Followers = append(st.Followers, r.Followers...)
		}
	}
	return st
}

// nodeHost is the node as its partitions see it (partition.Host).
type nodeHost struct{ b *Broker }

func (h nodeHost) Image() *cluster.Image { return h.b.meta.Image() }

func (h nodeHost) Fenced() error {
	if !h.b.fenced() {
		return nil
	}
	return h.b.errFenced()
}

func (h nodeHost) AlterPartition(req cluster.AlterPartition) (cluster.PartitionReg, error) {
	return h.b.member.m.AlterPartition(req, 5*time.Second)
}

func (h nodeHost) BrokerEpoch() int64 { return h.b.member.epoch.Load() }

func (h nodeHost) Unfollow(p *Partition) { h.b.fetchers.Unfollow(p) }

func (h nodeHost) Go(fn func()) {
	h.b.wg.Add(1)
	go func() {
		defer h.b.wg.Done()
		fn()
	}()
}

// MarkerWritten completes, in the group coordinator that owns the
// partition, the offsets a transaction committed to __consumer_offsets.
func (h nodeHost) MarkerWritten(ctx context.Context, p *Partition, pid producer.ID, commit bool) error {
	if p.Topic() != ConsumerOffsetsTopic {
		return nil
	}
	if g, _ := h.b.coords.Get(int32(p.ID())); g != nil {
		return g.CompleteTxn(ctx, int64(pid), commit)
	}
	return nil
}

// partitionConfig is what a partition of topic enforces of its config tc.
func (b *Broker) partitionConfig(tc TopicConfig, topic, dir string) partition.Config {
	internal := IsInternalTopic(topic)
	c := partition.Config{
		Log:               b.logConfig(tc, dir),
		MaxMessageBytes:   tc.MaxMessageBytes(),
		MinInsyncReplicas: tc.MinInsyncReplicas(),
		LogAppendTime:     tc.TimestampType() == LogAppendTime,
		RequireKeys:       tc.Compacted() && !internal,
		Trusted:           internal,
		RemoteStorage:     tc.RemoteStorage(),
		TotalRetention:    tc.TotalRetention(),
		RemoteCopyDisable: tc.RemoteCopyDisabled(),
	}
	if !internal { // the coordinators' records are not the user's to judge
		c.Screen = dlq.NewScreener(dlqNode{b}, &b.ingest, tc.Validator(), tc.DLQTopic(topic))
	}
	return c
}

// internalAddr is node id's internal listener, from the metadata.
func (b *Broker) internalAddr(id NodeID) (string, error) {
	br, ok := b.meta.Image().Broker(cluster.NodeID(id))
	if ok {
		for _, ep := range br.Endpoints {
			if ep.Name == "INTERNAL" {
				return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
			}
		}
	}
	return "", fmt.Errorf("broker: node %d has no internal listener registered", id)
}
