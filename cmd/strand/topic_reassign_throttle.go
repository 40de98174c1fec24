package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Replication throttle config names (cluster/throttle.go), as Kafka
// spells them.
const (
	leaderThrottledRate       = "leader.replication.throttled.rate"
	followerThrottledRate     = "follower.replication.throttled.rate"
	leaderThrottledReplicas   = "leader.replication.throttled.replicas"
	followerThrottledReplicas = "follower.replication.throttled.replicas"
	reassignmentThrottle      = "strand.reassignment.throttle"
)

// throttleMoves throttles the moves from the topic's current replicas
// to target as kafka-reassign-partitions --throttle does: both rates on
// every broker involved, the current replicas of each moving partition
// in the leader list (any of them may be serving) and the replicas it
// adds in the follower list — appended, so other throttles stay. It
// returns the brokers whose rates it set. The controller drops each
// partition's pairs when its move completes.
func throttleMoves(ctx context.Context, cl *kgo.Client, topic string, target [][]int32, rate int64) ([]int32, error) {
	adm := kadm.NewClient(cl)
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("throttle: %w", err)
	}
	td, ok := meta.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, errNoTopic(topic)
	}
	var leaders, followers []string
	var brokers []int32
	for _, pd := range td.Partitions.Sorted() {
		if int(pd.Partition) >= len(target) || slices.Equal(pd.Replicas, target[pd.Partition]) {
			continue
		}
		for _, b := range pd.Replicas {
			leaders = append(leaders, fmt.Sprintf("%d:%d", pd.Partition, b))
		}
		for _, b := range target[pd.Partition] {
			if !slices.Contains(pd.Replicas, b) {
				followers = append(followers, fmt.Sprintf("%d:%d", pd.Partition, b))
			}
		}
		for _, b := range append(slices.Clone(pd.Replicas), target[pd.Partition]...) {
			if !slices.Contains(brokers, b) {
				brokers = append(brokers, b)
			}
		}
	}
	if len(brokers) == 0 {
		return nil, nil // nothing moves: nothing to throttle
	}
	slices.Sort(brokers)
	r := strconv.FormatInt(rate, 10)
	rates := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: leaderThrottledRate, Value: &r}, {Op: kadm.SetConfig, Name: followerThrottledRate, Value: &r}}
	for _, b := range brokers {
		if err := alterConfigsOK(adm.AlterBrokerConfigs(ctx, rates, b)); err != nil {
			return nil, fmt.Errorf("throttle broker %d: %w", b, err)
		}
	}
	lv, fv := strings.Join(leaders, ","), strings.Join(followers, ",")
	lists := []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: leaderThrottledReplicas, Value: &lv}}
	if fv != "" {
		lists = append(lists, kadm.AlterConfig{Op: kadm.AppendConfig, Name: followerThrottledReplicas, Value: &fv})
	}
	if err := alterConfigsOK(adm.AlterTopicConfigs(ctx, lists, topic)); err != nil {
		return nil, fmt.Errorf("throttle the replicas of %s: %w", topic, err)
	}
	return brokers, nil
}

// clearThrottleRates removes the rates throttleMoves set (what --verify
// does in Kafka's tool once the moves are done).
func clearThrottleRates(ctx context.Context, cl *kgo.Client, brokers []int32) error {
	adm := kadm.NewClient(cl)
	del := []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: leaderThrottledRate}, {Op: kadm.DeleteConfig, Name: followerThrottledRate}}
	for _, b := range brokers {
		if err := alterConfigsOK(adm.AlterBrokerConfigs(ctx, del, b)); err != nil {
			return fmt.Errorf("remove broker %d's throttle: %w", b, err)
		}
	}
	return nil
}

func alterConfigsOK(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return kafkaError(r.Name, r.Err, &r.ErrMessage)
		}
	}
	return nil
}

// moveStatus is one adding replica of a partition in reassignment.
type moveStatus struct {
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	Leader     int32   `json:"leader"`
	Replicas   []int32 `json:"replicas"`
	Adding     int32   `json:"adding"`
	Removing   []int32 `json:"removing"`
	Bytes      int64   `json:"bytes"`        // on the adding replica's disk
	LeaderSize int64   `json:"leader_bytes"` // on the leader's
	// Throttle is the rate the adding replica fetches at most (bytes/s,
	// 0: none): the lower of its broker's follower rate when the topic
	// lists it and its --reassignment-throttle.
	Throttle int64 `json:"throttle"`
}

// reassignStatus reports every adding replica of the topic's moves: how
// much of the leader's log it has and the throttle it copies under.
func reassignStatus(ctx context.Context, cl *kgo.Client, topic string) ([]moveStatus, error) {
	moving, err := listReassignments(ctx, cl, topic)
	if err != nil || len(moving) == 0 {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	parts := map[int32]struct{}{}
	for _, m := range moving {
		parts[m.Partition] = struct{}{}
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: parts})
	if err != nil {
		return nil, fmt.Errorf("status: describe log dirs: %w", err)
	}
	size := map[[2]int32]int64{} // (broker, partition) → bytes
	for b, d := range dirs {
		for p := range parts {
			if lp, ok := d.LookupPartition(topic, p); ok {
				size[[2]int32{b, p}] = lp.Size
			}
		}
	}
	follow := ""
	if rc, err := adm.DescribeTopicConfigs(ctx, topic); err == nil && len(rc) == 1 {
		if c := configNamed(rc[0], followerThrottledReplicas); c != nil && c.Value != nil {
			follow = *c.Value
		}
	}
	var out []moveStatus
	for _, m := range moving {
		leader := meta.Topics[topic].Partitions[m.Partition].Leader
		for _, a := range m.Adding {
			out = append(out, moveStatus{Topic: topic, Partition: m.Partition, Leader: leader, Replicas: m.Replicas, Adding: a, Removing: m.Removing,
				Bytes: size[[2]int32{a, m.Partition}], LeaderSize: size[[2]int32{leader, m.Partition}],
				Throttle: followerThrottleOf(ctx, adm, a, m.Partition, follow)})
		}
	}
	return out, nil
}

// followerThrottleOf is the rate broker b fetches partition p at most
// while it copies it (0: none), from b's configs.
func followerThrottleOf(ctx context.Context, adm *kadm.Client, b, p int32, followList string) int64 {
	rc, err := adm.DescribeBrokerConfigs(ctx, b)
	if err != nil || len(rc) != 1 {
		return 0
	}
	long := func(name string, dynamicOnly bool) int64 {
		c := configNamed(rc[0], name)
		if c == nil || c.Value == nil || dynamicOnly && c.Source == 5 { // DEFAULT_CONFIG: no rate set
			return 0
		}
		n, _ := strconv.ParseInt(*c.Value, 10, 64)
		return n
	}
	rate := int64(0)
	if listed(followList, p, b) {
		rate = long(followerThrottledRate, true)
	}
	if r := long(reassignmentThrottle, false); r > 0 && (rate == 0 || r < rate) {
		rate = r
	}
	return rate
}

func configNamed(rc kadm.ResourceConfig, name string) *kadm.Config {
	for i := range rc.Configs {
		if rc.Configs[i].Key == name {
			return &rc.Configs[i]
		}
	}
	return nil
}

// listed reports whether a throttled-replicas list names p on b.
func listed(list string, p, b int32) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	return slices.Contains(strings.Split(strings.ReplaceAll(list, " ", ""), ","), fmt.Sprintf("%d:%d", p, b))
}

func printReassignStatus(cmd *cobra.Command, topic string, st []moveStatus) error {
	w := cmd.OutOrStdout()
	if len(st) == 0 {
		fmt.Fprintf(w, "no reassignment of %s in progress\n", topic)
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tADDING\tREMOVING\tCOPIED\tTHROTTLE")
	for _, s := range st {
		pct := 100.0
		if s.LeaderSize > 0 {
			pct = min(100, 100*float64(s.Bytes)/float64(s.LeaderSize))
		}
		throttle := "none"
		if s.Throttle > 0 {
			throttle = fmt.Sprintf("%s/s", mib(s.Throttle))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%s\t%s of %s (%.0f%%)\t%s\n", s.Partition, s.Leader, ints(s.Replicas), s.Adding, orDash(ints(s.Removing)),
			mib(s.Bytes), mib(s.LeaderSize), pct, throttle)
	}
	return tw.Flush()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
