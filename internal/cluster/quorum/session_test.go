package quorum

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
)

// registerAll registers every node's own broker through its own store and
// heartbeats until each is unfenced; it returns their epochs.
func registerAll(t *testing.T, nodes map[int32]*RaftStore) map[int32]int64 {
	t.Helper()
	epochs := map[int32]int64{}
	for id, s := range nodes {
		epoch, err := s.Register(cluster.Registration{ID: id, IncarnationID: fmt.Sprint("inc-", id)}, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		epochs[id] = epoch
	}
	for id, s := range nodes {
		eventually(t, fmt.Sprint("broker ", id, " unfenced"), 15*time.Second, func() bool {
			r, err := s.SendHeartbeat(cluster.Heartbeat{ID: id, Epoch: epochs[id], AppliedIndex: s.AppliedIndex()}, 2*time.Second)
			return err == nil && !r.Fenced
		})
	}
	return epochs
}

// TestDeadProcessFencedAtOnce: with a session of a minute, a node whose
// process goes away — its session watch closes and its raft port then
// refuses connections — is fenced by the controller long before the
// session could lapse, and its partition gets a new leader in the same
// commit; the live brokers stay unfenced.
func TestDeadProcessFencedAtOnce(t *testing.T) {
	nodes, leader := quorum(t, time.Minute)
	registerAll(t, nodes)
	var victim int32
	for id := range nodes {
		if id != leader {
			victim = id
		}
	}
	var other int32
	for id := range nodes {
		if id != leader && id != victim {
			other = id
		}
	}
	tid := cluster.NewTopicID()
	if _, err := nodes[leader].ApplyWithin(5*time.Second, cluster.PutTopic{Topic: cluster.Topic{Name: "t", ID: tid, Partitions: 1}},
		cluster.Partition{TopicID: tid, PartitionID: 0, Replicas: []cluster.NodeID{victim, other}, ISR: []cluster.NodeID{victim, other}, Leader: victim}); err != nil {
		t.Fatal(err)
	}
	// The victim's watch must be open on the controller before it dies.
	eventually(t, "the victim's session watch", 10*time.Second, func() bool {
		c := nodes[leader].ctl
		c.watches.mu.Lock()
		defer c.watches.mu.Unlock()
		return c.watches.by[victim] != nil
	})
	if err := nodes[victim].Close(); err != nil {
		t.Fatal(err)
	}
	delete(nodes, victim)
	eventually(t, "the dead broker fenced (well within its one-minute session)", 20*time.Second, func() bool {
		b, _ := nodes[leader].Image().Broker(victim)
		return b.Fenced
	})
	reg, _ := nodes[leader].Image().Partition(tid, 0)
	if reg.Leader != other || reg.LeaderEpoch != 1 {
		t.Fatalf("after the fence the partition is %+v, want led by %d at epoch 1", reg, other)
	}
	for id := range nodes {
		if b, _ := nodes[leader].Image().Broker(id); b.Fenced {
			t.Fatalf("live broker %d was fenced", id)
		}
	}
}

// TestLiveNodeNotFenced: a session watch that ends while its node still
// listens (the broker moved to another controller, or the network reset
// the connection) fences nobody.
func TestLiveNodeNotFenced(t *testing.T) {
	nodes, leader := quorum(t, time.Minute)
	registerAll(t, nodes)
	c := nodes[leader].ctl
	var ended []cluster.NodeID
	c.watches.mu.Lock()
	for id, w := range c.watches.by {
		w.conn.Close() // as a reset would
		ended = append(ended, id)
	}
	c.watches.mu.Unlock()
	if len(ended) != len(nodes)-1 {
		t.Fatalf("the controller held watches of %v; want every other node's", ended)
	}
	eventually(t, "the watches open again", 10*time.Second, func() bool {
		c.watches.mu.Lock()
		defer c.watches.mu.Unlock()
		return len(c.watches.by) == len(nodes)-1
	})
	for id := range nodes {
		if b, _ := nodes[leader].Image().Broker(id); b.Fenced {
			t.Fatalf("broker %d, alive and listening, was fenced when its watch ended", id)
		}
	}
}

// TestSuccessorRegistration: while a broker lives, another process
// registering its node id is refused — without a token, or with a wrong
// one — but a registration showing the secret the broker left in its data
// directory (what its restarted process reads there) replaces it at once,
// with a new epoch, and the old incarnation's heartbeats are stale.
func TestSuccessorRegistration(t *testing.T) {
	nodes, leader := quorum(t, time.Minute)
	epochs := registerAll(t, nodes)
	var id int32
	for n := range nodes {
		if n != leader {
			id = n
		}
	}
	via := nodes[leader]
	for _, r := range []cluster.Registration{
		{ID: id, IncarnationID: "impostor"},
		{ID: id, IncarnationID: "impostor", SuccessorOf: "not-the-secret"},
		{ID: id, IncarnationID: "impostor", SuccessorOf: tokenHash(nodes[id].token)}, // the public hash is no proof
	} {
		if _, err := via.Register(r, 5*time.Second); !errors.Is(err, cluster.ErrDuplicateBroker) {
			t.Fatalf("a second process as live broker %d showing %q: %v, want ErrDuplicateBroker", id, r.SuccessorOf, err)
		}
	}
	secret, err := os.ReadFile(filepath.Join(nodes[id].dir, successorFile))
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := via.Register(cluster.Registration{ID: id, IncarnationID: withTokenHash("successor", "next"), SuccessorOf: strings.TrimSpace(string(secret))}, 5*time.Second)
	if err != nil {
		t.Fatalf("the successor of live broker %d: %v", id, err)
	}
	if epoch <= epochs[id] {
		t.Fatalf("the successor's epoch %d, want above the old %d", epoch, epochs[id])
	}
	if _, err := nodes[id].SendHeartbeat(cluster.Heartbeat{ID: id, Epoch: epochs[id], AppliedIndex: nodes[id].AppliedIndex()}, 5*time.Second); !errors.Is(err, cluster.ErrStaleBrokerEpoch) {
		t.Fatalf("the replaced incarnation's heartbeat: %v, want ErrStaleBrokerEpoch", err)
	}
}

// TestSuccessorTokenRotates: each start reads the token the last one
// wrote and writes a new one; a fresh directory has none.
func TestSuccessorTokenRotates(t *testing.T) {
	dir := t.TempDir()
	prev, first, err := rotateSuccessorToken(dir)
	if err != nil || prev != "" || first == "" {
		t.Fatalf("first start: prev %q, next %q, %v", prev, first, err)
	}
	prev, second, err := rotateSuccessorToken(dir)
	if err != nil || prev != first || second == first {
		t.Fatalf("second start: prev %q (want %q), next %q, %v", prev, first, second, err)
	}
	if prev, _, _ := rotateSuccessorToken(t.TempDir()); prev != "" {
		t.Fatalf("another directory showed %q", prev)
	}
	reg := cluster.BrokerReg{IncarnationID: withTokenHash("inc", second)}
	if !succeeds(cluster.Registration{SuccessorOf: second}, reg) ||
		succeeds(cluster.Registration{SuccessorOf: first}, reg) ||
		succeeds(cluster.Registration{}, reg) ||
		succeeds(cluster.Registration{SuccessorOf: second}, cluster.BrokerReg{IncarnationID: "inc"}) {
		t.Fatal("succeeds does not match a token to its hash alone")
	}
}
