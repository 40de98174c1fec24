package cluster

import (
	"errors"
	"maps"
	"testing"
)

// TestBrokerConfigNeedsLevel3: a dynamic broker config is refused while
// the cluster runs metadata.version 2 (a node of the older build would
// not know the record), and kept — per node and as the default, the
// node's own value first — once 3 is finalized, snapshot included.
func TestBrokerConfigNeedsLevel3(t *testing.T) {
	im := balanceImage(t, []string{"", "", ""}, [][]NodeID{{1, 2}})
	set := BrokerConfig{Node: 2, Set: map[string]string{FollowerThrottledRate: "1000"}}
	if _, err := im.With(set); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("at metadata.version 2: %v, want ErrUnsupportedFeature", err)
	}
	im.features = map[string]int16{MetadataVersion: MetadataVersionThrottles}
	im, err := im.With(set, BrokerConfig{Node: DefaultBrokerConfigNode, Set: map[string]string{FollowerThrottledRate: "50", LeaderThrottledRate: "70"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		node NodeID
		name string
		want int64
	}{{2, FollowerThrottledRate, 1000}, {1, FollowerThrottledRate, 50}, {2, LeaderThrottledRate, 70}} {
		if got, ok := im.ThrottleRate(c.node, c.name); !ok || got != c.want {
			t.Errorf("node %d %s = %d, %t; want %d", c.node, c.name, got, ok, c.want)
		}
	}
	for _, bad := range []BrokerConfig{
		{Node: 2, Set: map[string]string{FollowerThrottledRate: "-1"}},
		{Node: 2, Set: map[string]string{"num.io.threads": "8"}},
		{Node: 9, Set: map[string]string{FollowerThrottledRate: "1"}},
	} {
		if _, err := im.With(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	b, err := EncodeImage(im)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeImage(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := back.ThrottleRate(2, FollowerThrottledRate); got != 1000 {
		t.Fatalf("after a snapshot: node 2's follower rate %d, want 1000", got)
	}
	im, err = im.With(BrokerConfig{Node: 2, Remove: []string{FollowerThrottledRate}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := im.ThrottleRate(2, FollowerThrottledRate); got != 50 {
		t.Fatalf("node 2's own rate removed: %d, want the default 50", got)
	}
}

// TestThrottledReplicas: Kafka's list semantics — only the replicas
// listed are throttled, at the rate of the broker they are on; "*" lists
// all; a reassignment's adding replica is throttled at the node's
// reassignment rate, the lower of the two when both apply.
func TestThrottledReplicas(t *testing.T) {
	im := balanceImage(t, []string{"", "", ""}, [][]NodeID{{1, 2}, {2, 3}})
	im.features = map[string]int16{MetadataVersion: MetadataVersionThrottles}
	tp, _ := im.Topic("t")
	tp2 := tp
	tp2.Configs = map[string]string{FollowerThrottledReplicas: "0:2,1:3", LeaderThrottledReplicas: "0:1"}
	im, err := im.With(PutTopic{Topic: tp2}, BrokerConfig{Node: DefaultBrokerConfigNode, Set: map[string]string{FollowerThrottledRate: "100", LeaderThrottledRate: "200"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := im.FollowerThrottle("t", 0, 2, 0); got != 0 {
		t.Errorf("t-0 on 2, listed but in the ISR: throttle %d, want 0", got)
	}
	// Only the leaders in sync from here: the followers are catching up.
	parts := maps.Clone(im.partitions[tp.ID])
	for p, reg := range parts {
		reg.ISR = reg.Replicas[:1]
		parts[p] = reg
	}
	im.partitions = maps.Clone(im.partitions)
	im.partitions[tp.ID] = parts
	cases := []struct {
		p      int32
		node   NodeID
		follow int64
		lead   int64
	}{{0, 2, 100, 0}, {0, 1, 0, 200}, {1, 3, 100, 0}, {1, 2, 0, 0}}
	for _, c := range cases {
		if got := im.FollowerThrottle("t", c.p, c.node, 0); got != c.follow {
			t.Errorf("follower throttle of t-%d on %d = %d, want %d", c.p, c.node, got, c.follow)
		}
		if got := im.LeaderThrottle("t", c.p, c.node); got != c.lead {
			t.Errorf("leader throttle of t-%d on %d = %d, want %d", c.p, c.node, got, c.lead)
		}
	}
	// t-1 moves from {2,3} to {2,1}: node 1 is adding it.
	recs, _ := Reassignments(im, AlterReassignments{Parts: []Reassignment{{TopicPartition: TopicPartition{Topic: tp.ID, Partition: 1}, Replicas: []NodeID{2, 1}}}})
	if im, err = im.With(recs...); err != nil {
		t.Fatal(err)
	}
	if got := im.FollowerThrottle("t", 1, 1, 40); got != 40 {
		t.Errorf("adding replica t-1 on 1: throttle %d, want the reassignment rate 40", got)
	}
	if got := im.FollowerThrottle("t", 1, 1, 0); got != 0 {
		t.Errorf("adding replica t-1 on 1, no reassignment rate, not listed: throttle %d, want 0", got)
	}
	if got := im.FollowerThrottle("t", 1, 3, 40); got != 100 {
		t.Errorf("t-1 on 3, listed (100) and removed rather than added: throttle %d, want 100", got)
	}
}

// TestCompletedReassignmentDropsItsThrottle: when a reassignment
// completes, its partition's pairs leave both lists (an emptied list is
// removed, "*" stays), other partitions' pairs stay.
func TestCompletedReassignmentDropsItsThrottle(t *testing.T) {
	im := balanceImage(t, []string{"", "", ""}, [][]NodeID{{1, 2}, {2, 3}})
	tp, _ := im.Topic("t")
	next := tp
	next.Configs = map[string]string{LeaderThrottledReplicas: "0:1,0:2", FollowerThrottledReplicas: "0:3,1:1"}
	im, err := im.With(PutTopic{Topic: next})
	if err != nil {
		t.Fatal(err)
	}
	recs := UnthrottleCompleted(im, []TopicPartition{{Topic: tp.ID, Partition: 0}})
	if im, err = im.With(recs...); err != nil {
		t.Fatal(err)
	}
	got, _ := im.Topic("t")
	if _, ok := got.Configs[LeaderThrottledReplicas]; ok || got.Configs[FollowerThrottledReplicas] != "1:1" {
		t.Fatalf("configs after t-0 completed: %v; want no leader list and follower list 1:1", got.Configs)
	}
	if recs := UnthrottleCompleted(im, []TopicPartition{{Topic: tp.ID, Partition: 0}}); len(recs) != 0 {
		t.Fatalf("nothing left to drop, yet %v", recs)
	}
}
