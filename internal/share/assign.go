package share

import (
	"slices"
)

// Assign spreads each topic's partitions over the members subscribed to
// it (Kafka's SimpleAssignor idea, our own function): with at least as
// many partitions as members, round-robin, so each partition has exactly
// one member; with more members than partitions, member i gets partition
// i mod n, so every partition has a member and some have several — a
// share-partition may be read by many members at once. It is a pure
// function of its inputs; members and partitions come out sorted.
//
// subs maps member id → subscribed topic names; topics maps topic name →
// partition count (topics missing from it are not assigned).
func Assign(subs map[string][]string, topics map[string]int32) map[string]map[string][]int32 {
	out := make(map[string]map[string][]int32, len(subs))
	byTopic := map[string][]string{}
	for m, ts := range subs {
		out[m] = map[string][]int32{}
		for _, t := range ts {
			if _, ok := topics[t]; ok && !slices.Contains(byTopic[t], m) {
				byTopic[t] = append(byTopic[t], m)
			}
		}
	}
	for t, members := range byTopic {
		slices.Sort(members)
		n := int(topics[t])
		if n == 0 {
			continue
		}
		if len(members) <= n {
			for p := range n {
				m := members[p%len(members)]
				out[m][t] = append(out[m][t], int32(p))
			}
			continue
		}
		for i, m := range members {
			out[m][t] = append(out[m][t], int32(i%n))
		}
	}
	return out
}
