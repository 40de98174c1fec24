package broker

import (
	"context"
	"time"

	"github.com/strandmq/strand/internal/partition"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/topicconfig"
)

// Tiered storage (KIP-405, issue 36): the node's side of the tier — its
// object store, the upload loop over the partitions it leads, and the
// topic config checks that need to know whether it has a store. The
// configs are package topicconfig's, a partition's tier package
// partition's, the tier itself package tiered's.

// TieredConfig is the broker's object-storage tier.
type TieredConfig struct {
	// Tier is the object store and its uploader; nil: tiered storage is
	// off, and topics may not set remote.storage.enable.
	Tier *tiered.Tier
	// Interval is how often sealed segments are uploaded and remote
	// retention runs; default 10 s.
	Interval time.Duration
	// OrphanEvery is how many upload passes run between orphan cleanups;
	// default 30.
	OrphanEvery int
}

// startTiered starts the upload loop when the broker has a tier.
func (b *Broker) startTiered() {
	if b.cfg.Tiered.Tier == nil {
		return
	}
	if b.cfg.Tiered.Interval <= 0 {
		b.cfg.Tiered.Interval = 10 * time.Second
	}
	if b.cfg.Tiered.OrphanEvery <= 0 {
		b.cfg.Tiered.OrphanEvery = 30
	}
	b.wg.Add(1)
	passes := 0
	pass := func() {
		passes++
		b.TierPass(passes%b.cfg.Tiered.OrphanEvery == 0)
	}
	go func() {
		// At once: until a pass reads the manifests, offsets below the
		// local start are unavailable. every's Done is the Add above.
		pass()
		b.every(b.cfg.Tiered.Interval, pass)
	}()
}

// TierPass uploads every sealed segment not yet remote, applies total
// retention to the remote segments and, when orphans is set, deletes
// orphan objects, for every partition this node leads whose topic has
// remote.storage.enable. The broker runs it every TieredConfig.Interval.
func (b *Broker) TierPass(orphans bool) {
	if b.cfg.Tiered.Tier == nil {
		return
	}
	b.cfg.Tiered.Tier.Serialize(func() { b.tierPass(orphans) })
}

func (b *Broker) tierPass(orphans bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	partition.DeleteForgotten(ctx, b.node) // deleted topics' objects a deletion left
	for _, t := range b.Topics() {
		for _, p := range t.local() {
			if p.Failed() != nil || p.Closed() {
				continue
			}
			if err := p.TierStep(ctx, orphans); err != nil && ctx.Err() == nil {
				b.logger.Warn("broker: tiered storage", "topic", t.Name, "partition", p.ID(), "err", err)
			}
		}
	}
}

// Tier returns the broker's object-storage tier, nil when it has none.
func (b *Broker) Tier() *tiered.Tier { return b.cfg.Tiered.Tier }

// checkTieredConfig is topicconfig.CheckTiered for this node's store.
func (b *Broker) checkTieredConfig(prev *TopicConfig, next TopicConfig) error {
	return topicconfig.CheckTiered(prev, next, b.cfg.Tiered.Tier != nil)
}
