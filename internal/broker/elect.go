package broker

import (
	"fmt"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// Election is one partition's ElectLeaders outcome: Err nil when its
// leader changed.
type Election struct {
	Topic     string
	Partition int32
	Err       error
}

// ElectLeaders asks the controller to elect leaders: preferred ones (each
// partition's first replica, where it is an in-sync live replica) or, with
// unclean, any live replica of a leaderless partition. parts names the
// partitions by topic; nil means every partition, and then partitions that
// need no election are left out. A single node leads everything already
// (cluster.ErrElectionNotNeeded).
func (b *Broker) ElectLeaders(unclean bool, parts map[string][]int32) ([]Election, error) {
	typ := cluster.ElectPreferred
	if unclean {
		typ = cluster.ElectUnclean
	}
	var out []Election
	req := cluster.ElectLeaders{Type: typ}
	names := map[cluster.TopicID]string{}
	for _, name := range sortedKeys(parts) {
		t, err := b.Topic(name)
		for _, p := range parts[name] {
			switch {
			case err != nil:
				out = append(out, Election{name, p, err})
			case p < 0 || p >= t.Partitions():
				out = append(out, Election{name, p, fmt.Errorf("%w: %s-%d", ErrUnknownTopicOrPartition, name, p)})
			case !b.clustered():
				out = append(out, Election{name, p, fmt.Errorf("%w: node %d leads %s-%d, its only replica", cluster.ErrElectionNotNeeded, b.cfg.NodeID, name, p)})
			default:
				names[t.ID] = name
				req.Partitions = append(req.Partitions, cluster.TopicPartition{Topic: t.ID, Partition: p})
			}
		}
	}
	if !b.clustered() || (parts != nil && len(req.Partitions) == 0) {
		return out, nil
	}
	results, err := b.member.m.ElectLeaders(req, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("broker: elect leaders: %w", err)
	}
	img := b.meta.Image()
	for _, r := range results {
		name, ok := names[r.Topic]
		if !ok {
			top, found := img.TopicByID(r.Topic)
			if !found {
				continue // deleted meanwhile
			}
			name = top.Name
		}
		out = append(out, Election{name, r.Partition, r.Error()})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
