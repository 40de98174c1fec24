package share

import (
	"context"
	"errors"
	"fmt"
)

// DeleteGroup deletes an empty share group (Kafka's DeleteGroups for a
// share group): its share-partitions' state (Kafka's DeleteShareGroupState,
// tombstones in __share_group_state), then its group configs (on a single
// node; a cluster keeps them, see dropConfigs) and its membership record. A group with members is ErrNotEmpty; one this node
// does not know is ErrGroupNotFound.
//
// The state goes first: a failure part way leaves the group listed (its
// configs remain), so the delete can be retried, rather than an unlisted
// group with state left behind.
func (c *Coordinator) DeleteGroup(ctx context.Context, group string) error {
	if !c.Has(group) && (c.mgr == nil || len(c.mgr.Partitions(group)) == 0) {
		return fmt.Errorf("%w: %s", ErrGroupNotFound, group)
	}
	if err := c.CheckEmpty(group); err != nil {
		return err
	}
	if c.mgr != nil {
		for _, k := range c.mgr.Partitions(group) {
			tp := TopicPartition{TopicID: k.TopicID, Partition: k.Partition}
			for name, ti := range c.host.Topics() {
				if ti.ID == k.TopicID {
					tp.Topic = name
				}
			}
			if err := c.mgr.Delete(ctx, group, tp); err != nil {
				return fmt.Errorf("share: delete group %s: %w", group, err)
			}
		}
	}
	if err := c.dropConfigs(ctx, group); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.mu.groups[group]; g != nil {
		if c.expireLockedNoRelease(g); len(g.members) > 0 {
			return fmt.Errorf("%w: %s gained a member while it was deleted", ErrNotEmpty, group)
		}
		delete(c.mu.groups, group)
	}
	return nil
}

// dropConfigs deletes every group config set on group, unless a
// ConfigStore keeps them: a cluster's metadata keeps a deleted group's
// configs, as Kafka's does, until an admin removes them.
func (c *Coordinator) dropConfigs(ctx context.Context, group string) error {
	if c.store != nil {
		return nil
	}
	set := map[string]*string{}
	for k := range c.Configs(group) {
		set[k] = nil
	}
	if len(set) == 0 {
		return nil
	}
	if err := c.AlterConfigs(ctx, group, set, false); err != nil && !errors.Is(err, ErrInvalidConfig) {
		return fmt.Errorf("share: delete the configs of %s: %w", group, err)
	}
	return nil
}
