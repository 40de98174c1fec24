package cluster

import (
	"errors"
	"slices"
	"testing"
)

// isrImage is three registered brokers (epochs 10, 20, 30; fenced and
// shutting-down ones as given) and topic "t" with one partition per reg.
func isrImage(t *testing.T, fenced, shutting []NodeID, unclean bool, regs ...PartitionReg) (*Image, TopicID) {
	t.Helper()
	im := NewImage("c")
	id := NewTopicID()
	top := Topic{Name: "t", ID: id, Partitions: int32(len(regs))}
	if unclean {
		top.Configs = map[string]string{UncleanLeaderElection: "true"}
	}
	recs := []Record{PutTopic{Topic: top}}
	for n := NodeID(1); n <= 3; n++ {
		recs = append(recs, RegisterBroker{ID: n, IncarnationID: string(rune('a' + n))})
	}
	im, err := im.WithAt(10, recs...)
	if err != nil {
		t.Fatal(err)
	}
	for n := NodeID(1); n <= 3; n++ {
		b := im.brokers[n]
		b.Epoch, b.Fenced, b.InControlledShutdown = int64(10*n), slices.Contains(fenced, n), slices.Contains(shutting, n)
		im.brokers[n] = b
	}
	im.partitions[id] = map[int32]PartitionReg{}
	for i, r := range regs {
		im.partitions[id][int32(i)] = r
	}
	return im, id
}

func change(t *testing.T, recs []Record) (PartitionChange, bool) {
	t.Helper()
	if len(recs) > 1 {
		t.Fatalf("want at most one change, got %+v", recs)
	}
	if len(recs) == 0 {
		return PartitionChange{}, false
	}
	return recs[0].(PartitionChange), true
}

// TestLeaveISRs pins what the controller does when a broker leaves
// (fenced, shutting down, a new process), ELR off: Kafka's election from
// the ISR in replica order, an ISR that never empties, unclean election
// only when the topic allows it. (change_test.go has the ELR cases.)
func TestLeaveISRs(t *testing.T) {
	reg := func(leader NodeID, replicas, isr []NodeID) PartitionReg {
		return PartitionReg{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 4, PartitionEpoch: 7}
	}
	cases := []struct {
		name      string
		reg       PartitionReg
		leaving   NodeID
		fenced    []NodeID
		unclean   bool
		rules     Rules // the zero value: ELR off
		want      bool
		isr       []NodeID // nil: unchanged
		leader    NodeID
		isUnclean bool
	}{
		{name: "leader leaves: next in replica order, not ISR order", reg: reg(1, []NodeID{1, 3, 2}, []NodeID{1, 2, 3}), leaving: 1,
			want: true, isr: []NodeID{2, 3}, leader: 3},
		{name: "follower leaves: ISR shrinks, leader stays", reg: reg(1, []NodeID{1, 2, 3}, []NodeID{1, 2, 3}), leaving: 2,
			want: true, isr: []NodeID{1, 3}, leader: LeaderUnchanged},
		{name: "out-of-sync replica leaves: nothing", reg: reg(1, []NodeID{1, 2, 3}, []NodeID{1, 3}), leaving: 2},
		{name: "last ISR member stays in it, leaderless", reg: reg(1, []NodeID{1, 2, 3}, []NodeID{1}), leaving: 1,
			want: true, leader: NoLeader},
		{name: "ISR member fenced already is skipped", reg: reg(1, []NodeID{1, 2, 3}, []NodeID{1, 2, 3}), leaving: 1, fenced: []NodeID{2},
			want: true, isr: []NodeID{2, 3}, leader: 3},
		{name: "unclean allowed: an out-of-sync replica leads alone", reg: reg(1, []NodeID{1, 2, 3}, []NodeID{1}), leaving: 1, unclean: true,
			want: true, isr: []NodeID{2}, leader: 2, isUnclean: true},
		{name: "leaderless already and last member: nothing", reg: PartitionReg{Replicas: []NodeID{1, 2}, ISR: []NodeID{1}, Leader: NoLeader}, leaving: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			im, _ := isrImage(t, tc.fenced, nil, tc.unclean, tc.reg)
			ch, ok := change(t, LeaveISRs(im, tc.rules, tc.leaving))
			if ok != tc.want {
				t.Fatalf("change %v, want %v: %+v", ok, tc.want, ch)
			}
			if !ok {
				return
			}
			if !slices.Equal(ch.ISR, tc.isr) || ch.Leader != tc.leader || ch.Unclean != tc.isUnclean || ch.ExpectedPartitionEpoch != 7 {
				t.Fatalf("got ISR %v leader %d unclean %v expected epoch %d; want ISR %v leader %d unclean %v",
					ch.ISR, ch.Leader, ch.Unclean, ch.ExpectedPartitionEpoch, tc.isr, tc.leader, tc.isUnclean)
			}
		})
	}
}

// TestElectForReturningBroker: a broker back from fencing leads the
// leaderless partitions whose ISR holds it, and no others (partition 1's
// only ISR member is still fenced).
func TestElectForReturningBroker(t *testing.T) {
	im, id := isrImage(t, []NodeID{1, 2}, nil, false,
		PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1}, Leader: NoLeader},
		PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{2}, Leader: NoLeader},
		PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1, 2}, Leader: 2})
	recs := ElectFor(im, DefaultRules, 1)
	if len(recs) != 1 {
		t.Fatalf("want one election, got %+v", recs)
	}
	ch := recs[0].(PartitionChange)
	if ch.TopicID != id || ch.PartitionID != 0 || ch.Leader != 1 || ch.ISR != nil {
		t.Fatalf("got %+v", ch)
	}
}

// TestElectUnclean: once a topic allows unclean election, a leaderless
// partition gets a live replica outside its ISR as leader, alone in the
// ISR; a topic that does not allow it stays leaderless.
func TestElectUnclean(t *testing.T) {
	leaderless := PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1}, Leader: NoLeader}
	im, _ := isrImage(t, []NodeID{1}, nil, false, leaderless)
	if recs := UncleanElections(im, DefaultRules); len(recs) != 0 {
		t.Fatalf("unclean election on a topic that does not allow it: %+v", recs)
	}
	im, id := isrImage(t, []NodeID{1}, nil, true, leaderless)
	ch, ok := change(t, UncleanElections(im, DefaultRules))
	if !ok || ch.TopicID != id || ch.Leader != 2 || !slices.Equal(ch.ISR, []NodeID{2}) || !ch.Unclean {
		t.Fatalf("got %+v (ok %v), want leader 2 alone in the ISR, unclean", ch, ok)
	}
}

// TestAlterPartitionValidationOrder pins Kafka's order of checks
// (validateAlterPartitionData): the first failing one names the error.
func TestAlterPartitionValidationOrder(t *testing.T) {
	base := PartitionReg{Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 7}
	im, id := isrImage(t, []NodeID{3}, nil, false, base)
	ok := AlterPartition{Broker: 1, BrokerEpoch: 10, TopicID: id, PartitionID: 0, LeaderEpoch: 4, PartitionEpoch: 7, ISR: []NodeID{1}}
	cases := []struct {
		name string
		edit func(r *AlterPartition)
		want error
	}{
		{"valid shrink", func(r *AlterPartition) {}, nil},
		{"stale broker epoch first", func(r *AlterPartition) { r.BrokerEpoch, r.PartitionID = 9, 5 }, ErrStaleBrokerEpoch},
		{"unknown partition", func(r *AlterPartition) { r.PartitionID = 5 }, ErrUnknownPartition},
		{"epochs ahead of the controller", func(r *AlterPartition) { r.PartitionEpoch = 8 }, ErrNotController},
		{"old leader epoch", func(r *AlterPartition) { r.LeaderEpoch, r.Broker, r.BrokerEpoch = 3, 2, 20 }, ErrFencedLeaderEpoch},
		{"not the leader", func(r *AlterPartition) { r.Broker, r.BrokerEpoch, r.PartitionEpoch = 2, 20, 6 }, ErrInvalidRequest},
		{"old partition epoch", func(r *AlterPartition) { r.PartitionEpoch = 6 }, ErrInvalidUpdateVersion},
		{"leader left out", func(r *AlterPartition) { r.ISR = []NodeID{2} }, ErrInvalidRequest},
		{"not a replica", func(r *AlterPartition) { r.ISR = []NodeID{1, 4} }, ErrInvalidRequest},
		{"fenced newcomer", func(r *AlterPartition) { r.ISR = []NodeID{1, 2, 3} }, ErrIneligibleReplica},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			r.ISR = slices.Clone(ok.ISR)
			tc.edit(&r)
			ch, err := CheckAlterPartition(im, DefaultRules, r)
			if tc.want == nil {
				if err != nil || !slices.Equal(ch.ISR, r.ISR) || ch.Leader != LeaderUnchanged || ch.ExpectedPartitionEpoch != 7 {
					t.Fatalf("got %+v, %v", ch, err)
				}
				next, err := im.With(ch)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := next.Partition(id, 0); !slices.Equal(got.ISR, []NodeID{1}) || got.LeaderEpoch != 4 || got.PartitionEpoch != 8 {
					t.Fatalf("after the change: %+v (an ISR change bumps the partition epoch only)", got)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}
