package cluster

import (
	"fmt"
	"maps"
)

// AlterGroupConfig sets and removes configs of one group (Kafka's
// ConfigRecord for a GROUP resource): a cluster's share-group configs
// (share.record.lock.duration.ms, errors.deadletterqueue.topic.name, …).
// The values are checked by the node before it proposes the record (the
// metadata keeps what it is given, as Kafka's controller keeps what its
// policy let through). metadata.version 4 (MetadataVersionGroupConfigs):
// refused below it, so an older node never meets the record.
//
// A deleted group keeps its configs, as in Kafka: DeleteGroups removes
// the group's state, and its configs stay until an admin removes them.
type AlterGroupConfig struct {
	Group  string
	Set    map[string]string `json:",omitempty"`
	Remove []string          `json:",omitempty"`
}

func (r AlterGroupConfig) apply(im *Image, _ int64) error {
	if r.Group == "" {
		return fmt.Errorf("%w: a group config names a group", ErrConflict)
	}
	if err := NeedsLevel(im, MetadataVersionGroupConfigs, "a group config"); err != nil {
		return err
	}
	vals := maps.Clone(im.groupConfigs[r.Group])
	if vals == nil {
		vals = map[string]string{}
	}
	for _, name := range r.Remove {
		delete(vals, name)
	}
	maps.Copy(vals, r.Set)
	im.groupConfigs = maps.Clone(im.groupConfigs)
	if len(vals) == 0 {
		delete(im.groupConfigs, r.Group)
		return nil
	}
	if im.groupConfigs == nil {
		im.groupConfigs = map[string]map[string]string{}
	}
	im.groupConfigs[r.Group] = vals
	return nil
}

// GroupConfigs returns the configs set on group (nil: none); the caller
// must not change the map.
func (im *Image) GroupConfigs(group string) map[string]string { return im.groupConfigs[group] }

// GroupsWithConfigs returns how many groups have a config.
func (im *Image) GroupsWithConfigs() int { return len(im.groupConfigs) }
