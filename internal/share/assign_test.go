package share

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func TestAssign(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		subs   map[string][]string
		topics map[string]int32
		want   map[string]map[string][]int32
	}{
		{"one member takes all", map[string][]string{"a": {"t"}}, map[string]int32{"t": 3},
			map[string]map[string][]int32{"a": {"t": {0, 1, 2}}}},
		{"round robin", map[string][]string{"b": {"t"}, "a": {"t"}}, map[string]int32{"t": 3},
			map[string]map[string][]int32{"a": {"t": {0, 2}}, "b": {"t": {1}}}},
		{"more members than partitions share one", map[string][]string{"a": {"t"}, "b": {"t"}, "c": {"t"}}, map[string]int32{"t": 1},
			map[string]map[string][]int32{"a": {"t": {0}}, "b": {"t": {0}}, "c": {"t": {0}}}},
		{"per topic, unknown topics skipped", map[string][]string{"a": {"t", "u", "gone"}, "b": {"u"}}, map[string]int32{"t": 2, "u": 1},
			map[string]map[string][]int32{"a": {"t": {0, 1}, "u": {0}}, "b": {"u": {0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Assign(tt.subs, tt.topics); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Assign: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestAssignProperties: every partition of a subscribed topic has a member,
// members only get topics they subscribe to, and loads differ by at most
// one partition per topic.
func TestAssignProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		topics := map[string]int32{}
		for i := range rapid.IntRange(1, 3).Draw(t, "topics") {
			topics[fmt.Sprint("t", i)] = int32(rapid.IntRange(1, 8).Draw(t, "partitions"))
		}
		subs := map[string][]string{}
		for i := range rapid.IntRange(1, 6).Draw(t, "members") {
			subs[fmt.Sprint("m", i)] = rapid.SliceOfDistinct(rapid.SampledFrom([]string{"t0", "t1", "t2"}), func(s string) string { return s }).Draw(t, "subs")
		}
		got := Assign(subs, topics)
		for topic, n := range topics {
			covered := map[int32]bool{}
			lo, hi := 1<<30, -1
			subscribed := 0
			for m, ts := range subs {
				has := false
				for _, x := range ts {
					has = has || x == topic
				}
				if !has {
					if len(got[m][topic]) > 0 {
						t.Fatalf("%s got %s without subscribing", m, topic)
					}
					continue
				}
				subscribed++
				for _, p := range got[m][topic] {
					covered[p] = true
				}
				lo, hi = min(lo, len(got[m][topic])), max(hi, len(got[m][topic]))
			}
			if subscribed > 0 && len(covered) != int(n) {
				t.Fatalf("%s: %d of %d partitions have a member", topic, len(covered), n)
			}
			if subscribed > 0 && hi-lo > 1 {
				t.Fatalf("%s: loads from %d to %d", topic, lo, hi)
			}
		}
	})
}
