package broker

import (
	"fmt"

	"github.com/strandmq/strand/internal/cluster"
)

// Features returns the feature levels this node supports, the cluster's
// finalized ones, and an epoch that grows when they may have changed (the
// metadata image's raft index; 1 on a single node or before any entry).
func (b *Broker) Features() (supported map[string]cluster.FeatureRange, finalized map[string]int16, epoch int64) {
	img := b.meta.Image()
	epoch = max(img.Index(), 1)
	return cluster.SupportedFeatures(), img.FinalizedFeatures(), epoch
}

// FinalizeFeature raises feature name's finalized level (UpdateFeatures):
// refused if this build, or any registered node's, does not support it, or
// if it would lower the level. validateOnly checks without writing.
func (b *Broker) FinalizeFeature(name string, level int16, validateOnly bool) error {
	if r, ok := cluster.SupportedFeatures()[name]; ok && !r.Contains(level) {
		return fmt.Errorf("%w: this node supports %s %d to %d, not %d", cluster.ErrInvalidFeature, name, r.Min, r.Max, level)
	}
	if err := cluster.CheckFinalize(b.meta.Image(), name, level); err != nil || validateOnly {
		return err
	}
	if _, err := b.meta.Apply(cluster.FinalizeFeature{Name: name, Level: level}); err != nil {
		return fmt.Errorf("broker: finalize %s %d: %w", name, level, err)
	}
	return nil
}
