package cluster

import (
	"slices"
	"testing"
)

// TestELRTransitions pins KIP-966's rules (PartitionChangeBuilder) as the
// controller applies them, RF 3 and min.insync.replicas 2: replicas that
// leave an ISR below min ISR join the ELR; an empty ISR elects from the
// ELR, cleanly; an ISR back at min ISR clears the ELR; a replica back
// from an unclean shutdown leaves both; the last known leader leads again
// (uncleanly) only when the ISR and ELR are both gone.
func TestELRTransitions(t *testing.T) {
	rules := Rules{ELR: true, DefaultMinISR: 2}
	reg := func(leader NodeID, isr, elr, lke []NodeID) PartitionReg {
		return PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: isr, ELR: elr, LastKnownELR: lke, Leader: leader, LeaderEpoch: 4, PartitionEpoch: 7}
	}
	type want struct {
		leader       NodeID
		isr, elr     []NodeID
		lastKnown    []NodeID
		unclean      bool
		leaderChange bool
	}
	for _, tc := range []struct {
		name   string
		reg    PartitionReg
		fenced []NodeID
		do     func(im *Image) []Record
		want   want
	}{
		{name: "at min ISR a leaving follower is not eligible", reg: reg(1, []NodeID{1, 2, 3}, nil, nil),
			do:   func(im *Image) []Record { return LeaveISRs(im, rules, 3) },
			want: want{leader: 1, isr: []NodeID{1, 2}}},
		{name: "below min ISR the leaving follower joins the ELR", reg: reg(1, []NodeID{1, 2}, nil, nil), fenced: []NodeID{3},
			do:   func(im *Image) []Record { return LeaveISRs(im, rules, 2) },
			want: want{leader: 1, isr: []NodeID{1}, elr: []NodeID{2}}},
		{name: "the last ISR member leaves: ISR empty, ELR holds it, last known leader kept", reg: reg(1, []NodeID{1}, []NodeID{2}, nil), fenced: []NodeID{2, 3},
			do:   func(im *Image) []Record { return LeaveISRs(im, rules, 1) },
			want: want{leader: NoLeader, isr: []NodeID{}, elr: []NodeID{1, 2}, lastKnown: []NodeID{1}, leaderChange: true}},
		{name: "the leader leaves with an ELR member live: a clean election from the ELR", reg: reg(1, []NodeID{1}, []NodeID{2}, nil), fenced: []NodeID{3},
			do:   func(im *Image) []Record { return LeaveISRs(im, rules, 1) },
			want: want{leader: 2, isr: []NodeID{2}, elr: []NodeID{1}, leaderChange: true}},
		{name: "an ELR member back elects itself cleanly", reg: reg(NoLeader, []NodeID{}, []NodeID{1, 2}, []NodeID{1}), fenced: []NodeID{1, 2, 3},
			do:   func(im *Image) []Record { return ElectFor(im, rules, 2) },
			want: want{leader: 2, isr: []NodeID{2}, elr: []NodeID{1}, leaderChange: true}},
		{name: "the ISR back at min ISR clears the ELR", reg: reg(1, []NodeID{1}, []NodeID{2, 3}, nil),
			do: func(im *Image) []Record {
				ch, err := CheckAlterPartition(im, rules, AlterPartition{Broker: 1, BrokerEpoch: 10, TopicID: im.Topics()[0].ID, LeaderEpoch: 4, PartitionEpoch: 7, ISR: []NodeID{1, 3}})
				if err != nil {
					t.Fatal(err)
				}
				return []Record{ch}
			},
			want: want{leader: 1, isr: []NodeID{1, 3}}},
		{name: "unclean shutdown: out of the ELR", reg: reg(NoLeader, []NodeID{}, []NodeID{1, 2}, []NodeID{1}), fenced: []NodeID{1, 2, 3},
			do:   func(im *Image) []Record { return UncleanShutdownChanges(im, rules, 2) },
			want: want{leader: NoLeader, isr: []NodeID{}, elr: []NodeID{1}, lastKnown: []NodeID{1}}},
		{name: "unclean shutdown: out of the ISR, the ELR member leads", reg: reg(1, []NodeID{1}, []NodeID{2}, nil), fenced: []NodeID{1},
			do:   func(im *Image) []Record { return UncleanShutdownChanges(im, rules, 1) },
			want: want{leader: 2, isr: []NodeID{2}, leaderChange: true}},
		{name: "unclean shutdown of the ELR's last member: the last known leader, back, leads uncleanly", reg: reg(NoLeader, []NodeID{}, []NodeID{1}, []NodeID{1}), fenced: []NodeID{2, 3},
			do:   func(im *Image) []Record { return UncleanShutdownChanges(im, rules, 1) },
			want: want{leader: NoLeader, isr: []NodeID{}, lastKnown: []NodeID{1}}},
		{name: "the last known leader leads when nothing else is eligible", reg: reg(NoLeader, []NodeID{}, nil, []NodeID{1}), fenced: []NodeID{1, 2, 3},
			do:   func(im *Image) []Record { return ElectFor(im, rules, 1) },
			want: want{leader: 1, isr: []NodeID{1}, unclean: true, leaderChange: true}},
		{name: "ELR off: the last member stays in the ISR, leaderless", reg: reg(1, []NodeID{1}, nil, nil), fenced: []NodeID{2, 3},
			do:   func(im *Image) []Record { return LeaveISRs(im, Rules{DefaultMinISR: 2}, 1) },
			want: want{leader: NoLeader, isr: []NodeID{1}, leaderChange: true}},
		{name: "ELR off clears what ELR on recorded", reg: reg(1, []NodeID{1, 2}, []NodeID{3}, nil),
			do:   func(im *Image) []Record { return LeaveISRs(im, Rules{DefaultMinISR: 2}, 2) },
			want: want{leader: 1, isr: []NodeID{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, id := isrImage(t, tc.fenced, nil, false, tc.reg)
			recs := tc.do(im)
			next, err := im.With(recs...)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := next.Partition(id, 0)
			ch, _ := change(t, recs)
			if got.Leader != tc.want.leader || !slices.Equal(got.ISR, tc.want.isr) || !slices.Equal(got.ELR, tc.want.elr) ||
				!slices.Equal(got.LastKnownELR, tc.want.lastKnown) || ch.Unclean != tc.want.unclean || (got.LeaderEpoch != 4) != tc.want.leaderChange {
				t.Fatalf("got leader %d (epoch %d) ISR %v ELR %v last known %v unclean %v; want %+v", got.Leader, got.LeaderEpoch, got.ISR, got.ELR, got.LastKnownELR, ch.Unclean, tc.want)
			}
			for _, e := range got.ELR {
				if slices.Contains(got.ISR, e) {
					t.Fatalf("ISR %v and ELR %v overlap", got.ISR, got.ELR)
				}
			}
		})
	}
}

// TestClearELROnMinISRChange: changing a topic's min.insync.replicas
// clears its partitions' ELR (their guarantee rested on the old value).
func TestClearELROnMinISRChange(t *testing.T) {
	im, id := isrImage(t, nil, nil, false, PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1}, ELR: []NodeID{2}, Leader: 1, PartitionEpoch: 3})
	top, _ := im.TopicByID(id)
	same := PutTopic{Topic: top}
	if recs := ClearELROnMinISRChange(im, []Record{same}); len(recs) != 0 {
		t.Fatalf("no min ISR change, yet %+v", recs)
	}
	changed := top
	changed.Configs = map[string]string{MinInsyncReplicas: "1"}
	recs := ClearELROnMinISRChange(im, []Record{PutTopic{Topic: changed}})
	next, err := im.With(append([]Record{PutTopic{Topic: changed}}, recs...)...)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := next.Partition(id, 0); len(got.ELR) != 0 || got.PartitionEpoch != 4 {
		t.Fatalf("after the change: %+v", got)
	}
}
