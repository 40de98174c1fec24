package assign

import (
	"fmt"
	"testing"
)

// benchGroup is 100 members subscribed to 10 topics of 100 partitions.
func benchGroup() ([]Member, map[string]int32) {
	parts := map[string]int32{}
	var topics []string
	for i := range 10 {
		name := fmt.Sprintf("topic-%02d", i)
		parts[name] = 100
		topics = append(topics, name)
	}
	members := make([]Member, 100)
	for i := range members {
		members[i] = Member{ID: fmt.Sprintf("member-%03d", i), Topics: topics, Generation: 1}
	}
	return members, parts
}

// BenchmarkAssign measures each assignor on 100 members × 1,000 partitions:
// from scratch, and for a rebalance where one member has just joined a group
// of 99 that reports its previous assignment.
func BenchmarkAssign(b *testing.B) {
	members, parts := benchGroup()
	prev := Sticky{}.Assign(members[1:], parts)
	joined := make([]Member, len(members))
	for i, m := range members {
		m.Owned = prev[m.ID]
		joined[i] = m
	}
	for _, a := range allAssignors {
		b.Run(a.Name()+"/fresh", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.Assign(members, parts)
			}
		})
		b.Run(a.Name()+"/one-joins", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.Assign(joined, parts)
			}
		})
	}
}
