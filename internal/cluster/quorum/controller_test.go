package quorum

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// quorum starts three voters on loopback with a short broker session and
// returns them by node id, and the leader's id.
func quorum(t *testing.T, session time.Duration) (map[int32]*RaftStore, int32) {
	t.Helper()
	return quorumOn(t, nil, session)
}

// quorumOn is quorum over nw (nil: plain TCP).
func quorumOn(t *testing.T, nw Network, session time.Duration) (map[int32]*RaftStore, int32) {
	t.Helper()
	voters := []Voter{{1, freeAddr(t)}, {2, freeAddr(t)}, {3, freeAddr(t)}}
	nodes := map[int32]*RaftStore{}
	for _, v := range voters {
		s, err := OpenRaftStore(RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: voters, Network: nw,
			Controller: ControllerConfig{ClusterID: "c1", SessionTimeout: session}})
		if err != nil {
			t.Fatal(err)
		}
		nodes[v.ID] = s
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Close()
		}
	})
	var leader int32
	eventually(t, "a leader", 15*time.Second, func() bool {
		for id, s := range nodes {
			if lid, _, ok := s.Leader(); ok && lid == id {
				leader = id
				return true
			}
		}
		return false
	})
	return nodes, leader
}

// TestApplyFromFollower: a change made on a node that does not lead the
// quorum is forwarded to the controller, and returns once that node's own
// image holds it (read your writes); a conflict found by the controller
// comes back as ErrConflict.
func TestApplyFromFollower(t *testing.T) {
	nodes, leader := quorum(t, 0)
	follower := nodes[leader%3+1]
	id := cluster.NewTopicID()
	img, err := follower.ApplyWithin(10*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: id, Partitions: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := img.Topic("a"); !ok || got.ID != id {
		t.Fatalf("the follower's image after its change: %+v %v", got, ok)
	}
	if got, ok := follower.Image().Topic("a"); !ok || got.ID != id {
		t.Fatal("the follower's store does not hold its own change")
	}
	_, err = follower.ApplyWithin(10*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: cluster.NewTopicID(), Partitions: 1}})
	if !errors.Is(err, cluster.ErrConflict) {
		t.Fatalf("a conflicting change from a follower: %v, want ErrConflict", err)
	}
	if got := follower.Image().ClusterID(); got != "c1" {
		t.Fatalf("cluster id %q, want the controller's c1", got)
	}
}

// TestBrokerLiveness: brokers register (fenced) and are unfenced by their
// first heartbeat once caught up; a second process with a live node id is
// refused; a broker that stops heartbeating is fenced after its session
// and its partition loses its leader; a new incarnation of it is
// unfenced and leads the partition again, at a higher leader epoch.
func TestBrokerLiveness(t *testing.T) {
	nodes, _ := quorum(t, 2*time.Second) // the test's own heartbeats must beat it under load
	epochs := map[int32]int64{}
	for id, s := range nodes {
		epoch, err := s.Register(cluster.Registration{ID: id, IncarnationID: fmt.Sprint("inc-", id), Endpoints: []cluster.Endpoint{{Name: "CLIENT", Host: "127.0.0.1", Port: 9000 + id}}}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = epoch
		if b, _ := s.Image().Broker(id); !b.Fenced {
			t.Fatalf("broker %d is unfenced before its first heartbeat", id)
		}
	}
	beat := func(id int32) cluster.HeartbeatReply {
		t.Helper()
		s := nodes[id]
		// A loaded machine can leave the quorum leaderless for a moment;
		// a broker's heartbeat loop tries again, and so does this one.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			r, err := s.SendHeartbeat(cluster.Heartbeat{ID: id, Epoch: epochs[id], AppliedIndex: s.AppliedIndex()}, 5*time.Second)
			if err == nil {
				return r
			}
			if !errors.Is(err, cluster.ErrNotController) || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	for id := range nodes {
		if r := beat(id); r.Fenced || !r.CaughtUp {
			t.Fatalf("broker %d after a caught-up heartbeat: %+v", id, r)
		}
	}
	if _, err := nodes[1].Register(cluster.Registration{ID: 2, IncarnationID: "impostor"}, 5*time.Second); !errors.Is(err, cluster.ErrDuplicateBroker) {
		t.Fatalf("a second process as live broker 2: %v, want ErrDuplicateBroker", err)
	}

	tid := cluster.NewTopicID()
	if _, err := nodes[1].ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "t", ID: tid, Partitions: 1}},
		cluster.Partition{TopicID: tid, PartitionID: 0, Replicas: []cluster.NodeID{2}, ISR: []cluster.NodeID{2}, Leader: 2}); err != nil {
		t.Fatal(err)
	}
	// Brokers 1 and 3 keep beating; broker 2 goes silent.
	stop := time.Now().Add(20 * time.Second)
	fenced := false
	for !fenced && time.Now().Before(stop) {
		beat(1)
		beat(3)
		b, _ := nodes[1].Image().Broker(2)
		fenced = b.Fenced
		time.Sleep(200 * time.Millisecond)
	}
	if !fenced {
		t.Fatal("a silent broker was not fenced")
	}
	eventually(t, "the partition to lose its leader", 5*time.Second, func() bool {
		reg, _ := nodes[1].Image().Partition(tid, 0)
		return reg.Leader == cluster.NoLeader
	})
	for _, id := range []int32{1, 3} {
		if b, _ := nodes[1].Image().Broker(id); b.Fenced {
			t.Fatalf("live broker %d was fenced", id)
		}
	}
	epoch, err := nodes[2].Register(cluster.Registration{ID: 2, IncarnationID: "inc-2b"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if epoch <= epochs[2] {
		t.Fatalf("new incarnation's epoch %d is not above the old %d", epoch, epochs[2])
	}
	epochs[2] = epoch
	if r := beat(2); r.Fenced {
		t.Fatalf("the new incarnation stayed fenced: %+v", r)
	}
	eventually(t, "broker 2 to lead again", 5*time.Second, func() bool {
		reg, _ := nodes[2].Image().Partition(tid, 0)
		return reg.Leader == 2 && reg.LeaderEpoch == 2
	})
	// A heartbeat from the replaced incarnation is refused.
	if _, err := nodes[2].SendHeartbeat(cluster.Heartbeat{ID: 2, Epoch: epoch - 1}, 5*time.Second); !errors.Is(err, cluster.ErrStaleBrokerEpoch) {
		t.Fatalf("a stale incarnation's heartbeat: %v", err)
	}
}

// TestControlledShutdown: a broker that asks to shut down loses the
// leadership of its partitions and is then told it may stop.
func TestControlledShutdown(t *testing.T) {
	nodes, _ := quorum(t, 0)
	s := nodes[3]
	epoch, err := s.Register(cluster.Registration{ID: 3, IncarnationID: "x"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SendHeartbeat(cluster.Heartbeat{ID: 3, Epoch: epoch, AppliedIndex: s.AppliedIndex()}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	tid := cluster.NewTopicID()
	if _, err := s.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "t", ID: tid, Partitions: 1}},
		cluster.Partition{TopicID: tid, PartitionID: 0, Replicas: []cluster.NodeID{3}, ISR: []cluster.NodeID{3}, Leader: 3}); err != nil {
		t.Fatal(err)
	}
	r, err := s.SendHeartbeat(cluster.Heartbeat{ID: 3, Epoch: epoch, AppliedIndex: s.AppliedIndex(), WantShutdown: true}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.ShouldShutdown {
		t.Fatalf("after giving up leadership: %+v", r)
	}
	eventually(t, "the partition to lose its leader", 5*time.Second, func() bool {
		reg, _ := s.Image().Partition(tid, 0)
		return reg.Leader == cluster.NoLeader
	})
}

// TestUncleanShutdownRegistration: replicas that leave an ISR below
// min.insync.replicas join the ELR; a new process that restarted cleanly
// (its PreviousBrokerEpoch is the registered epoch) stays in it, one that
// found no clean-shutdown marker is taken out (handleBrokerUncleanShutdown).
func TestUncleanShutdownRegistration(t *testing.T) {
	nodes, _ := quorum(t, 0)
	s := nodes[1]
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epoch, err := s.Register(cluster.Registration{ID: id, IncarnationID: fmt.Sprint("a", id)}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = epoch
		if _, err := s.SendHeartbeat(cluster.Heartbeat{ID: id, Epoch: epoch, AppliedIndex: s.AppliedIndex()}, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	tid := cluster.NewTopicID()
	if _, err := s.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "t", ID: tid, Partitions: 1, Configs: map[string]string{cluster.MinInsyncReplicas: "3"}}},
		cluster.Partition{TopicID: tid, PartitionID: 0, Replicas: []cluster.NodeID{1, 2, 3}, ISR: []cluster.NodeID{1, 2, 3}, Leader: 1}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{3, 2} { // controlled shutdowns: out of the ISR, into the ELR
		if _, err := s.SendHeartbeat(cluster.Heartbeat{ID: id, Epoch: epochs[id], AppliedIndex: s.AppliedIndex(), WantShutdown: true}, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	reg := func() cluster.PartitionReg {
		t.Helper()
		if err := s.SyncWithController(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		r, _ := s.Image().Partition(tid, 0)
		return r
	}
	if r := reg(); !slices.Equal(r.ISR, []cluster.NodeID{1}) || !slices.Equal(r.ELR, []cluster.NodeID{2, 3}) {
		t.Fatalf("after two controlled shutdowns: ISR %v ELR %v, want [1] [2 3]", r.ISR, r.ELR)
	}
	if _, err := s.Register(cluster.Registration{ID: 3, IncarnationID: "b3", PreviousBrokerEpoch: epochs[3]}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := reg(); !slices.Equal(r.ELR, []cluster.NodeID{2, 3}) {
		t.Fatalf("a clean restart left the ELR: %v", r.ELR)
	}
	if _, err := s.Register(cluster.Registration{ID: 2, IncarnationID: "b2", PreviousBrokerEpoch: cluster.UncleanShutdown}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := reg(); !slices.Equal(r.ISR, []cluster.NodeID{1}) || !slices.Equal(r.ELR, []cluster.NodeID{3}) || r.Leader != 1 {
		t.Fatalf("after an unclean restart of 2: leader %d ISR %v ELR %v, want 1 [1] [3]", r.Leader, r.ISR, r.ELR)
	}
}
