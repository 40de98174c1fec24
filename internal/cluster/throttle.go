package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Replication throttles, as Kafka has them (KIP-73, ReplicationQuotaManager):
//
//   - leader.replication.throttled.rate and follower.replication.throttled.rate
//     are dynamic broker configs in bytes per second, set per broker or as
//     the cluster default (kafka-configs --entity-type brokers
//     [--entity-name N | --entity-default]); a broker's own value wins.
//   - leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas are topic configs listing
//     "partition:broker" pairs, or "*" for every replica of the topic. A
//     rate applies only to the replicas listed: a broker throttles what it
//     serves for partition p when "p:<itself>" is in the leader list, and
//     what it fetches for p when "p:<itself>" is in the follower list.
//   - An in-sync replica is never throttled (the leader checks its ISR,
//     the follower whether it had caught up): throttling one could push it
//     out of the ISR.
//
// Strand adds one thing: the replicas a reassignment is adding are
// throttled on their follower side at the node's --reassignment-throttle
// (Redpanda's raft_learner_recovery_rate), listed or not, so the
// balancer's and a drain's moves are paced without an operator's configs;
// and when a reassignment completes, the controller removes its
// partition's entries from the throttled-replicas lists, which Kafka
// leaves to kafka-reassign-partitions --verify.

// Replication throttle config names.
const (
	LeaderThrottledRate       = "leader.replication.throttled.rate"
	FollowerThrottledRate     = "follower.replication.throttled.rate"
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
)

// DefaultBrokerConfigNode is the node id under which the cluster-wide
// default of a dynamic broker config is kept (Kafka's <default> entity).
const DefaultBrokerConfigNode NodeID = -1

// dynamicBrokerConfigs are the broker configs a BrokerConfig record may
// set.
var dynamicBrokerConfigs = []string{LeaderThrottledRate, FollowerThrottledRate}

// IsDynamicBrokerConfig reports whether name is a broker config Strand
// changes at run time through BrokerConfig.
func IsDynamicBrokerConfig(name string) bool { return slices.Contains(dynamicBrokerConfigs, name) }

// BrokerConfig sets and removes dynamic configs of one broker, or the
// cluster default (Node DefaultBrokerConfigNode). metadata.version 3.
type BrokerConfig struct {
	Node   NodeID
	Set    map[string]string `json:",omitempty"`
	Remove []string          `json:",omitempty"`
}

func (r BrokerConfig) apply(im *Image, _ int64) error {
	if err := NeedsLevel(im, MetadataVersionThrottles, "a dynamic broker config"); err != nil {
		return err
	}
	if _, ok := im.brokers[r.Node]; !ok && r.Node != DefaultBrokerConfigNode {
		return fmt.Errorf("%w: broker %d is not registered", ErrInvalidRequest, r.Node)
	}
	for name, v := range r.Set {
		if err := CheckBrokerConfig(name, v); err != nil {
			return err
		}
	}
	for _, name := range r.Remove {
		if !IsDynamicBrokerConfig(name) {
			return fmt.Errorf("%w: %s is not a dynamic broker config", ErrInvalidRequest, name)
		}
	}
	all := maps.Clone(im.brokerConfigs)
	if all == nil {
		all = map[NodeID]map[string]string{}
	}
	vals := maps.Clone(all[r.Node])
	if vals == nil {
		vals = map[string]string{}
	}
	for _, name := range r.Remove {
		delete(vals, name)
	}
	maps.Copy(vals, r.Set)
	if len(vals) == 0 {
		delete(all, r.Node)
	} else {
		all[r.Node] = vals
	}
	im.brokerConfigs = all
	return nil
}

// CheckBrokerConfig says why value is not a valid value of the dynamic
// broker config name, or nil.
func CheckBrokerConfig(name, value string) error {
	if !IsDynamicBrokerConfig(name) {
		return fmt.Errorf("%w: %s is not a dynamic broker config (Strand changes %s at run time)", ErrInvalidRequest, name, strings.Join(dynamicBrokerConfigs, " and "))
	}
	if n, err := strconv.ParseInt(value, 10, 64); err != nil || n < 0 {
		return fmt.Errorf("%w: %s=%q: a rate in bytes per second, 0 or more", ErrInvalidRequest, name, value)
	}
	return nil
}

// BrokerConfigs returns the dynamic configs set for node (or, for
// DefaultBrokerConfigNode, the cluster defaults); nil: none.
func (im *Image) BrokerConfigs(node NodeID) map[string]string {
	return maps.Clone(im.brokerConfigs[node])
}

// ThrottleRate returns the replication throttle rate name (Leader- or
// FollowerThrottledRate) in force on node, in bytes per second, and
// whether one is set: the node's own value, else the cluster default.
func (im *Image) ThrottleRate(node NodeID, name string) (int64, bool) {
	v, ok := im.brokerConfigs[node][name]
	if !ok {
		v, ok = im.brokerConfigs[DefaultBrokerConfigNode][name]
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// CheckThrottledReplicas says why v is not a throttled-replicas list
// ("*", or "partition:broker" pairs separated by commas; empty: none),
// or nil.
func CheckThrottledReplicas(v string) error {
	if strings.TrimSpace(v) == "*" || strings.TrimSpace(v) == "" {
		return nil
	}
	for _, e := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok {
			return fmt.Errorf("%q is not partition:broker", e)
		}
		if _, err := strconv.ParseUint(p, 10, 31); err != nil {
			return fmt.Errorf("%q: partition %q is not a partition id", e, p)
		}
		if _, err := strconv.ParseUint(b, 10, 31); err != nil {
			return fmt.Errorf("%q: broker %q is not a broker id", e, b)
		}
	}
	return nil
}

// ThrottledReplicaListed reports whether the throttled-replicas list v
// names partition p's replica on node ("*" names every one).
func ThrottledReplicaListed(v string, p int32, node NodeID) bool {
	if v == "" {
		return false
	}
	if strings.TrimSpace(v) == "*" {
		return true
	}
	want := strconv.Itoa(int(p)) + ":" + strconv.Itoa(int(node))
	for e := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(e) == want {
			return true
		}
	}
	return false
}

// FollowerThrottle is the rate (bytes per second) at which node may fetch
// for its replica of topic-p while that replica is out of sync, 0 for
// none: the follower rate when the topic's follower list names it, and
// reassignRate (the node's --reassignment-throttle) when a reassignment
// is adding it; the lower when both apply.
//
// A replica in the partition's ISR is never throttled: the fetcher also
// exempts one that its last answer left at the leader's high watermark
// (Kafka's follower-side rule), and this covers the fetches before the
// first answer.
func (im *Image) FollowerThrottle(topic string, p int32, node NodeID, reassignRate int64) int64 {
	var rate int64
	t, ok := im.topics[topic]
	if !ok {
		return 0
	}
	if reg, ok := im.Partition(t.ID, p); ok && slices.Contains(reg.ISR, node) {
		return 0
	}
	if r, ok := im.ThrottleRate(node, FollowerThrottledRate); ok && ThrottledReplicaListed(t.Configs[FollowerThrottledReplicas], p, node) {
		rate = r
	}
	if reassignRate > 0 {
		if reg, ok := im.Partition(t.ID, p); ok && slices.Contains(reg.AddingReplicas, node) && (rate == 0 || reassignRate < rate) {
			rate = reassignRate
		}
	}
	return rate
}

// LeaderThrottle is the rate (bytes per second) at which node, leading
// topic-p, may serve fetches of followers that are not in its ISR; 0 for
// none (the topic's leader list does not name p:node, or no rate is set).
func (im *Image) LeaderThrottle(topic string, p int32, node NodeID) int64 {
	t, ok := im.topics[topic]
	if !ok || !ThrottledReplicaListed(t.Configs[LeaderThrottledReplicas], p, node) {
		return 0
	}
	r, _ := im.ThrottleRate(node, LeaderThrottledRate)
	return r
}

// dropThrottledEntries returns list without partition p's entries ("*"
// stays: it was not set for one reassignment), and whether it changed.
func dropThrottledEntries(list string, p int32) (string, bool) {
	if list == "" || strings.TrimSpace(list) == "*" {
		return list, false
	}
	prefix := strconv.Itoa(int(p)) + ":"
	var keep []string
	changed := false
	for e := range strings.SplitSeq(list, ",") {
		if strings.HasPrefix(strings.TrimSpace(e), prefix) {
			changed = true
			continue
		}
		keep = append(keep, strings.TrimSpace(e))
	}
	return strings.Join(keep, ","), changed
}

// UnthrottleCompleted returns the topic changes that remove the completed
// partitions' entries from their topics' throttled-replicas lists (an
// empty list is removed).
func UnthrottleCompleted(img *Image, done []TopicPartition) []Record {
	byTopic := map[TopicID][]int32{}
	for _, tp := range done {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	var recs []Record
	for _, id := range slices.SortedFunc(maps.Keys(byTopic), func(a, b TopicID) int { return strings.Compare(a.Hex(), b.Hex()) }) {
		t, ok := img.TopicByID(id)
		if !ok {
			continue
		}
		next := t
		next.Configs = maps.Clone(t.Configs)
		changed := false
		for _, name := range []string{LeaderThrottledReplicas, FollowerThrottledReplicas} {
			list, ok := next.Configs[name]
			if !ok {
				continue
			}
			for _, p := range byTopic[id] {
				var c bool
				if list, c = dropThrottledEntries(list, p); c {
					changed = true
				}
			}
			if list == "" {
				delete(next.Configs, name)
			} else {
				next.Configs[name] = list
			}
		}
		if changed {
			prev := t
			recs = append(recs, PutTopic{Topic: next, Prev: &prev})
		}
	}
	return recs
}

// AlterBrokerConfigs proposes rec through st (metadata.version 3); with
// validateOnly it only checks that rec applies.
func AlterBrokerConfigs(st Store, rec BrokerConfig, validateOnly bool) error {
	if validateOnly {
		_, err := st.Image().With(rec)
		return err
	}
	if _, err := st.Apply(rec); err != nil {
		return fmt.Errorf("cluster: set broker %d configs: %w", rec.Node, err)
	}
	return nil
}
