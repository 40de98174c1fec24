package console

import (
	"maps"
	"slices"
	"time"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/share"
)

// Share groups (KIP-932) on the group page: members with their
// partitions, and per share-partition the in-flight window, acquired
// records, delivery counts and the oldest lock's age. No Kafka API
// carries the latter; `strand group describe` reads them here.

// SharePartitionRow is one share-partition of a share group on this node.
type SharePartitionRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Start is the share-partition start offset (everything below is
	// acknowledged or archived), End one past the last offset acquired.
	Start     int64 `json:"start_offset"`
	End       int64 `json:"end_offset"`
	InFlight  int   `json:"in_flight"`
	Available int   `json:"available"`
	Acquired  int   `json:"acquired"`
	// Deliveries counts the window's offsets by delivery count
	// ("1": 40 means forty offsets delivered once so far).
	Deliveries map[int16]int `json:"delivery_counts"`
	// OldestLockSeconds is how long the longest-held acquisition has been
	// held (0 when nothing is acquired).
	OldestLockSeconds float64 `json:"oldest_lock_seconds"`
	// ByMember is the acquired records per member.
	ByMember map[string]int `json:"acquired_by_member"`
}

// shareDetail describes share group id, if this node hosts share groups
// and knows it.
func shareDetail(b *broker.Broker, id string) (GroupDetail, bool) {
	n := b.Share()
	if n == nil || !n.Coordinator.Has(id) {
		return GroupDetail{}, false
	}
	desc := n.Coordinator.Describe([]string{id})[0]
	d := GroupDetail{ID: id, State: desc.State, ProtocolType: "share", Type: "share", Epoch: desc.Epoch, Assignor: "simple",
		Members: []MemberRow{}, Lag: []LagRow{}, SharePartitions: sharePartitions(n.Manager.Stats(id), time.Now())}
	if d.State == "Dead" { // known by its configs only: no member since the node started
		d.State = "Empty"
	}
	for _, m := range desc.Members {
		row := MemberRow{ID: m.ID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.Epoch}
		for _, t := range slices.Sorted(maps.Keys(m.Assigned)) {
			row.Assignment = append(row.Assignment, TopicPartitions{Topic: t, Partitions: slices.Sorted(slices.Values(m.Assigned[t]))})
		}
		d.Members = append(d.Members, row)
	}
	return d, true
}

func sharePartitions(stats []share.PartitionStats, now time.Time) []SharePartitionRow {
	out := []SharePartitionRow{}
	for _, st := range stats {
		row := SharePartitionRow{Topic: st.TP.Topic, Partition: st.TP.Partition, Start: int64(st.Start), End: int64(st.End),
			InFlight: st.InFlight, Available: st.Available, Acquired: st.Acquired, Deliveries: st.Deliveries, ByMember: st.ByMember}
		if !st.LockedSince.IsZero() {
			row.OldestLockSeconds = max(0, now.Sub(st.LockedSince).Seconds())
		}
		out = append(out, row)
	}
	return out
}
