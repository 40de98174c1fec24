package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/cluster/quorum"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestBrokerOverRaftMetadata: the broker runs unchanged on metadata kept
// by a (single-voter) raft quorum instead of meta.json: topics created
// through it are committed records, and after a restart of both the
// broker finds its topic, with its id, and the record produced to it.
func TestBrokerOverRaftMetadata(t *testing.T) {
	root := t.TempDir()
	openBoth := singleVoterBroker(t, root)
	rs, b := openBoth()
	tp := mustCreate(t, b, TopicSpec{Name: "orders", Partitions: 2})
	if got, ok := rs.Image().Topic("orders"); !ok || got.ID != tp.ID || got.Partitions != 2 {
		t.Fatalf("the quorum's image has %+v, %v", got, ok)
	}
	p, _ := b.Partition("orders", 1)
	if _, err := p.Append(context.Background(), encode(t, 1, record.DefaultBatchOptions()), AcksAll); err != nil {
		t.Fatal(err)
	}
	clusterID := b.ClusterID()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}

	rs, b = openBoth()
	defer rs.Close()
	defer b.Close()
	again, err := b.Topic("orders")
	if err != nil || again.ID != tp.ID || b.ClusterID() != clusterID {
		t.Fatalf("after a restart: %v, id %s (was %s), cluster %s (was %s)", err, again.ID, tp.ID, b.ClusterID(), clusterID)
	}
	p, _ = again.Partition(1)
	if p.Log().LogEndOffset() != 1 {
		t.Fatalf("partition 1 ends at %d after the restart, want 1", p.Log().LogEndOffset())
	}
}

// singleVoterBroker returns a function that opens a single-voter raft
// quorum in root and a broker (node 0) on it, leading, registered and
// unfenced.
func singleVoterBroker(t *testing.T, root string, opts ...func(*Config)) func() (*quorum.RaftStore, *Broker) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := quorum.RaftConfig{NodeID: 0, Dir: filepath.Join(root, "quorum"), Bind: addr, Voters: []quorum.Voter{{ID: 0, Addr: addr}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond}
	return func() (*quorum.RaftStore, *Broker) {
		t.Helper()
		rs, err := quorum.OpenRaftStore(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if id, _, ok := rs.Leader(); ok && id == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the single voter never led")
			}
		}
		b := open(t, vfs.Default, filepath.Join(root, "data"), append([]func(*Config){func(c *Config) {
			c.Metadata, c.HeartbeatInterval = rs, 50*time.Millisecond
		}}, opts...)...)
		for deadline := time.Now().Add(10 * time.Second); b.Fenced(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the broker was never unfenced")
			}
		}
		return rs, b
	}
}

// TestReconcilerAppliesRegistrations: partition registrations committed to
// the quorum become the partition's role, leader, ISR and epoch: a change
// of leader to another node makes it a follower (produces refused), back to
// this node a leader stamping the new epoch, and an ISR-only change (a new
// partition epoch) updates the ISR without a new leader epoch.
func TestReconcilerAppliesRegistrations(t *testing.T) {
	rs, b := singleVoterBroker(t, t.TempDir())()
	defer rs.Close()
	defer b.Close()
	tp := mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
	p, _ := tp.Partition(0)
	waitState := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, p.State())
			}
		}
	}
	apply := func(recs ...cluster.Record) {
		t.Helper()
		if _, err := rs.Apply(recs...); err != nil {
			t.Fatal(err)
		}
	}
	if reg, ok := rs.Image().Partition(tp.ID, 0); !ok || reg.Leader != 0 || len(reg.Replicas) != 1 {
		t.Fatalf("the created partition's registration: %+v %v", reg, ok)
	}
	apply(cluster.PartitionChange{TopicID: tp.ID, PartitionID: 0, ExpectedPartitionEpoch: 0,
		Replicas: []cluster.NodeID{0, 1}, ISR: []cluster.NodeID{0, 1}, Leader: cluster.LeaderUnchanged})
	waitState("the replica set", func() bool { return len(p.ISR()) == 2 })
	apply(cluster.PartitionChange{TopicID: tp.ID, PartitionID: 0, ExpectedPartitionEpoch: 1, Leader: 1})
	waitState("follower of node 1", func() bool { return p.Role() == RoleFollower && p.Leader() == 1 && p.LeaderEpoch() == 1 })
	if _, err := p.Append(context.Background(), encode(t, 1, record.DefaultBatchOptions()), AcksLeader); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce while following: %v", err)
	}
	apply(cluster.PartitionChange{TopicID: tp.ID, PartitionID: 0, ExpectedPartitionEpoch: 2, Leader: 0})
	waitState("leader again", func() bool { return p.Role() == RoleLeader && p.LeaderEpoch() == 2 })
	res, err := p.Append(context.Background(), encode(t, 1, record.DefaultBatchOptions()), AcksLeader)
	if err != nil {
		t.Fatal(err)
	}
	// Node 1 is in the ISR and has not fetched the batch: it is not
	// committed, so no consumer sees it yet.
	if hw := p.HighWatermark(); hw > res.BaseOffset {
		t.Fatalf("high watermark %d passed a batch at %d that an ISR member lacks", hw, res.BaseOffset)
	}
	apply(cluster.PartitionChange{TopicID: tp.ID, PartitionID: 0, ExpectedPartitionEpoch: 3, ISR: []cluster.NodeID{0}, Leader: cluster.LeaderUnchanged})
	waitState("the ISR shrink", func() bool { return len(p.ISR()) == 1 && p.LeaderEpoch() == 2 })
	waitState("the batch committed once the leader is the ISR", func() bool { return p.HighWatermark() > res.BaseOffset })
	if rr, _ := p.Read(res.BaseOffset, 1<<20); len(rr.Batches) == 0 {
		t.Fatal("nothing read back")
	} else if h, _ := record.ParseHeader(rr.Batches); h.LeaderEpoch != 2 {
		t.Fatalf("batch stamped with epoch %d, want 2", h.LeaderEpoch)
	}
}

// TestMemberWithoutQuorumServesNothing: a member that loses its metadata
// quorum fences itself after a session: it cannot prove it still leads,
// so its partitions answer NOT_LEADER_OR_FOLLOWER instead of taking
// writes the cluster may have given to another node.
func TestMemberWithoutQuorumServesNothing(t *testing.T) {
	rs, b := singleVoterBroker(t, t.TempDir(), func(c *Config) { c.SessionTimeout = 500 * time.Millisecond })()
	defer b.Close()
	tp := mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1})
	p, _ := tp.Partition(0)
	if _, err := p.Append(context.Background(), encode(t, 1, record.DefaultBatchOptions()), AcksAll); err != nil {
		t.Fatal(err)
	}
	if err := rs.Close(); err != nil { // the quorum is gone
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !b.Fenced(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a member without its quorum never fenced itself")
		}
	}
	if _, err := p.Append(context.Background(), encode(t, 1, record.DefaultBatchOptions()), AcksAll); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce on a member without a quorum: %v, want ErrNotLeader", err)
	}
}

// TestSingleNodeJoinsACluster: a single node's data directory started as a
// cluster member brings its topics into the cluster's metadata — same ids,
// configs, partitions placed on it — and serves their records; meta.json
// is set aside, and a second start does not migrate again.
func TestSingleNodeJoinsACluster(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	single := open(t, vfs.Default, dir)
	tp := mustCreate(t, single, TopicSpec{Name: "old", Partitions: 2, Configs: map[string]string{"retention.ms": "3600000"}})
	used, _, err := single.AllocateProducerID()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tp.Partition(1)
	if _, err := p.Append(context.Background(), encode(t, 3, record.DefaultBatchOptions()), AcksAll); err != nil {
		t.Fatal(err)
	}
	if err := single.Close(); err != nil {
		t.Fatal(err)
	}

	openBoth := singleVoterBroker(t, root)
	for round := range 2 {
		rs, b := openBoth()
		got, ok := rs.Image().Topic("old")
		if !ok || got.ID != tp.ID || got.Partitions != 2 || got.Configs["retention.ms"] != "3600000" {
			t.Fatalf("round %d: the cluster's metadata has %+v %v", round, got, ok)
		}
		if reg, ok := rs.Image().Partition(tp.ID, 1); !ok || reg.Leader != 0 {
			t.Fatalf("round %d: partition 1 registered %+v %v", round, reg, ok)
		}
		var mp *Partition
		waitFor(t, "the migrated partition to open", 5*time.Second, func() bool {
			var err error
			mp, err = b.Partition("old", 1)
			return err == nil
		})
		if end := mp.LogEndOffset(); end != 3 {
			t.Fatalf("round %d: the migrated partition ends at %d, want 3", round, end)
		}
		if _, err := os.Stat(filepath.Join(dir, "meta.json.migrated")); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if id, _, err := b.AllocateProducerID(); err != nil || id <= used {
			t.Fatalf("round %d: the cluster gave producer id %d (%v); the single node had used %d", round, id, err, used)
		}
		b.Close()
		rs.Close()
	}
}

// TestSecondProcessWithTheNodeIDRefused: a second broker registering the
// node id of a live one is refused at start, once the live one has kept
// its registration for a whole session.
func TestSecondProcessWithTheNodeIDRefused(t *testing.T) {
	root := t.TempDir()
	// The controller's session for broker 0 is raft's default 9 s; the
	// second broker gives up after its own session (1 s) of refusals.
	rs, first := singleVoterBroker(t, root, func(c *Config) { c.SessionTimeout = time.Second })()
	defer rs.Close()
	defer first.Close()
	start := time.Now()
	_, err := Open(Config{Dir: filepath.Join(root, "second"), NodeID: 0, Metadata: rs, Logger: quiet,
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "node 0 is already running") {
		t.Fatalf("a second broker with node id 0: %v", err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("refused after %v, before the first broker's session could have lapsed", waited)
	}
	if first.Fenced() {
		t.Fatal("the live broker was fenced by its twin's attempt")
	}
}
