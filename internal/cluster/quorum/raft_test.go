package quorum

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/testnet"
	"github.com/strandmq/strand/internal/vnet"
)

// randomRecords is a seeded mix of valid and conflicting records.
func randomRecords(rng *rand.Rand, n int) [][]cluster.Record {
	ids := make([]cluster.TopicID, 6)
	for i := range ids {
		ids[i][0], ids[i][15] = byte(i+1), byte(rng.IntN(256))
	}
	var out [][]cluster.Record
	for range n {
		name := fmt.Sprint("t", rng.IntN(6))
		id := ids[rng.IntN(len(ids))]
		var r cluster.Record
		node := cluster.NodeID(rng.IntN(4))
		switch rng.IntN(10) {
		case 0, 1:
			r = cluster.PutTopic{Topic: cluster.Topic{Name: name, ID: id, Partitions: int32(1 + rng.IntN(4)), Configs: map[string]string{"k": fmt.Sprint(rng.IntN(3))}}}
		case 2:
			r = cluster.RemoveTopic{Name: name}
		case 3:
			r = cluster.ForgetDeleted{IDs: []cluster.TopicID{id}}
		case 4:
			r = cluster.RegisterBroker{ID: node, IncarnationID: fmt.Sprint("inc", rng.IntN(2))}
		case 5:
			r = cluster.BrokerRegistrationChange{ID: node, Epoch: int64(rng.IntN(50)), Fenced: int8(rng.IntN(3) - 1)}
		case 7:
			r = cluster.ProducerIDBlock{Broker: node, First: int64(rng.IntN(4000)), Count: 1000}
		case 6:
			r = cluster.Partition{TopicID: id, PartitionID: int32(rng.IntN(3)), Replicas: []cluster.NodeID{node, (node + 1) % 4}, ISR: []cluster.NodeID{node}, Leader: node}
		default:
			r = cluster.PartitionChange{TopicID: id, PartitionID: int32(rng.IntN(3)), ExpectedPartitionEpoch: int32(rng.IntN(3)), Leader: cluster.NodeID(rng.IntN(5) - 2)}
		}
		out = append(out, []cluster.Record{r})
	}
	return out
}

// TestFSMDeterminism: the same raft entries give byte-identical images on
// independent FSMs, conflicts included, and a snapshot restores the same
// image (REPLICATION.md §6.1).
func TestFSMDeterminism(t *testing.T) {
	for seed := range uint64(20) {
		entries := randomRecords(rand.New(rand.NewPCG(seed, 7)), 200)
		var images [][]byte
		for range 2 {
			f := newFSM()
			f.Apply(&raft.Log{Type: raft.LogCommand, Index: 1, Data: mustEncode(t, cluster.ClusterInit{ClusterID: "c"})})
			for i, recs := range entries {
				f.Apply(&raft.Log{Type: raft.LogCommand, Index: uint64(i + 2), Data: mustEncode(t, recs...)})
			}
			b, err := cluster.EncodeImage(f.img.Load())
			if err != nil {
				t.Fatal(err)
			}
			images = append(images, b)
			restored := newFSM()
			snap, _ := f.Snapshot()
			var buf bytes.Buffer
			if err := snap.Persist(&memSink{Buffer: &buf}); err != nil {
				t.Fatal(err)
			}
			if err := restored.Restore(nopCloser{&buf}); err != nil {
				t.Fatal(err)
			}
			if rb, _ := cluster.EncodeImage(restored.img.Load()); !bytes.Equal(rb, b) {
				t.Fatalf("seed %d: restored image differs", seed)
			}
		}
		if !bytes.Equal(images[0], images[1]) {
			t.Fatalf("seed %d: two FSMs diverged:\n%s\n%s", seed, images[0], images[1])
		}
	}
}

func mustEncode(t *testing.T, recs ...cluster.Record) []byte {
	t.Helper()
	b, err := cluster.EncodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type memSink struct{ *bytes.Buffer }

func (memSink) ID() string    { return "mem" }
func (memSink) Cancel() error { return nil }
func (memSink) Close() error  { return nil }

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func freeAddr(t *testing.T) string { return testnet.FreeAddr(t) }

func eventually(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// TestRaftQuorum: three nodes on loopback bootstrap one quorum; a change
// committed through the leader reaches every node; when the leader stops,
// another is elected and takes changes; the old leader, restarted on its
// data, catches up — every change applied once.
func TestRaftQuorum(t *testing.T) {
	voters := []Voter{{1, freeAddr(t)}, {2, freeAddr(t)}, {3, freeAddr(t)}}
	dirs := map[int32]string{}
	nodes := map[int32]*RaftStore{}
	start := func(v Voter) {
		t.Helper()
		s, err := OpenRaftStore(RaftConfig{NodeID: v.ID, Dir: dirs[v.ID], Bind: v.Addr, Voters: voters, Controller: ControllerConfig{ClusterID: "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		nodes[v.ID] = s
	}
	for _, v := range voters {
		dirs[v.ID] = t.TempDir()
		start(v)
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Close()
		}
	})
	leader := func(exclude int32) *RaftStore {
		var l *RaftStore
		eventually(t, "a leader", 15*time.Second, func() bool {
			for id, s := range nodes {
				if lid, _, ok := s.Leader(); ok && lid == id && id != exclude {
					l = s
					return true
				}
			}
			return false
		})
		return l
	}
	l := leader(0)
	if err := l.Barrier(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	a := cluster.NewTopicID()
	if _, err := l.ApplyWithin(5*time.Second, cluster.ClusterInit{ClusterID: "c1"}, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: a, Partitions: 2}}); err != nil {
		t.Fatal(err)
	}
	for id, s := range nodes {
		eventually(t, fmt.Sprint("node ", id, " to apply topic a"), 10*time.Second, func() bool {
			_, ok := s.Image().Topic("a")
			return ok
		})
	}
	if _, err := l.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: cluster.NewTopicID(), Partitions: 1}}); err == nil {
		t.Fatal("a conflicting topic was committed")
	}

	var old int32
	for id, s := range nodes {
		if s == l {
			old = id
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	delete(nodes, old)
	elected := time.Now()
	nl := leader(old)
	t.Logf("new leader elected in %v", time.Since(elected).Round(time.Millisecond))
	b := cluster.NewTopicID()
	if _, err := nl.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "b", ID: b, Partitions: 1}}); err != nil {
		t.Fatal(err)
	}

	for _, v := range voters {
		if v.ID == old {
			start(v)
		}
	}
	for id, s := range nodes {
		eventually(t, fmt.Sprint("node ", id, " to have a and b"), 15*time.Second, func() bool {
			return len(s.Image().Topics()) == 2 && s.Image().ClusterID() == "c1"
		})
		if ta, _ := s.Image().Topic("a"); ta.ID != a {
			t.Fatalf("node %d: topic a has id %s", id, ta.ID)
		}
	}
}

// TestRaftLeaderIsolated: the leader cut off from both followers (vnet,
// both ways) cannot commit; the other two elect a leader that can; when
// the links heal, the old leader follows and every node holds exactly the
// committed changes — the one tried on the isolated leader is nowhere.
func TestRaftLeaderIsolated(t *testing.T) {
	nw := vnet.New()
	voters := []Voter{{1, freeAddr(t)}, {2, freeAddr(t)}, {3, freeAddr(t)}}
	nodes := map[int32]*RaftStore{}
	for _, v := range voters {
		s, err := OpenRaftStore(RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: voters, Network: nw, Controller: ControllerConfig{ClusterID: "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		nodes[v.ID] = s
	}
	t.Cleanup(func() {
		nw.Heal()
		for _, s := range nodes {
			s.Close()
		}
	})
	leaderOf := func(among ...int32) (int32, *RaftStore) {
		var id int32
		eventually(t, fmt.Sprint("a leader among ", among), 20*time.Second, func() bool {
			for _, n := range among {
				if lid, _, ok := nodes[n].Leader(); ok && lid == n {
					id = n
					return true
				}
			}
			return false
		})
		return id, nodes[id]
	}
	old, l := leaderOf(1, 2, 3)
	if _, err := l.ApplyWithin(5*time.Second, cluster.ClusterInit{ClusterID: "c1"}, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	var rest []int32
	var restNames []string
	for id := range nodes {
		if id != old {
			rest = append(rest, id)
			restNames = append(restNames, fmt.Sprint(id))
		}
	}
	nw.Isolate(fmt.Sprint(old), restNames...)
	cut := time.Now()
	_, nl := leaderOf(rest...)
	t.Logf("a new leader %v after the cut", time.Since(cut).Round(time.Millisecond))
	if _, err := nl.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "b", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyWithin(2*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "c", ID: cluster.NewTopicID(), Partitions: 1}}); err == nil {
		t.Fatal("the isolated old leader committed a change")
	}
	nw.Heal()
	for id, s := range nodes {
		eventually(t, fmt.Sprint("node ", id, " to converge"), 20*time.Second, func() bool {
			_, a := s.Image().Topic("a")
			_, b := s.Image().Topic("b")
			return a && b
		})
		if _, c := s.Image().Topic("c"); c {
			t.Fatalf("node %d applied the uncommitted change", id)
		}
	}
}

// TestSingleVoterStartsFast: one voter with the single-node timings
// (100/100/50 ms) leads and commits within a second or two of starting —
// what `strand serve` with no flags needs (REPLICATION.md §1.1) — and
// again after a restart on its data.
func TestSingleVoterStartsFast(t *testing.T) {
	dir, addr := t.TempDir(), freeAddr(t)
	cfg := RaftConfig{NodeID: 1, Dir: dir, Bind: addr, Voters: []Voter{{1, addr}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond}
	for round := range 2 {
		start := time.Now()
		s, err := OpenRaftStore(cfg)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the single voter to lead", 10*time.Second, func() bool {
			id, _, ok := s.Leader()
			return ok && id == 1
		})
		if _, err := s.ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: fmt.Sprint("t", round), ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: leading and committed %v after start", round, time.Since(start).Round(time.Millisecond))
		if got := len(s.Image().Topics()); got != round+1 {
			t.Fatalf("round %d: %d topics, want %d (the log replays at restart)", round, got, round+1)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestApplyMovesOffCutOffLeader: a follower forwarding a change to a leader
// that was just cut off (its connection stays open, its bytes are dropped)
// sends it to the new leader once one is elected, instead of waiting out
// the whole call on the old one: the change commits within the apply's
// timeout, which the old leader alone would have used up.
func TestApplyMovesOffCutOffLeader(t *testing.T) {
	nw := vnet.New()
	nodes, old := quorumOn(t, nw, 0)
	t.Cleanup(nw.Heal) // before the nodes close
	if _, err := nodes[old].ApplyWithin(5*time.Second, cluster.ClusterInit{ClusterID: "c1"}, cluster.PutTopic{Topic: cluster.Topic{Name: "a", ID: cluster.NewTopicID(), Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	var follower int32
	var rest []string
	for id := range nodes {
		if id != old {
			follower = id
			rest = append(rest, fmt.Sprint(id))
		}
	}
	// Every node knows the leader; the follower's first attempt goes to it.
	eventually(t, "the follower to know the leader", 10*time.Second, func() bool {
		lid, _, ok := nodes[follower].Leader()
		return ok && lid == old
	})
	nw.Isolate(fmt.Sprint(old), rest...)
	start := time.Now()
	_, err := nodes[follower].ApplyWithin(8*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "b", ID: cluster.NewTopicID(), Partitions: 1}})
	t.Logf("forwarded change answered after %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("a change forwarded while the leader was cut off: %v", err)
	}
	if _, ok := nodes[follower].Image().Topic("b"); !ok {
		t.Fatal("the change committed but the follower's image lacks it")
	}
}
