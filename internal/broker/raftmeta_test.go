package broker

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestBrokerOverRaftMetadata: the broker runs unchanged on metadata kept
// by a (single-voter) raft quorum instead of meta.json: topics created
// through it are committed records, and after a restart of both the
// broker finds its topic, with its id, and the record produced to it.
func TestBrokerOverRaftMetadata(t *testing.T) {
	root := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := cluster.RaftConfig{NodeID: 0, Dir: filepath.Join(root, "quorum"), Bind: addr, Voters: []cluster.Voter{{ID: 0, Addr: addr}},
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, LeaderLease: 50 * time.Millisecond}
	openBoth := func() (*cluster.RaftStore, *Broker) {
		t.Helper()
		rs, err := cluster.OpenRaftStore(cfg)
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
		b := open(t, vfs.Default, filepath.Join(root, "data"), func(c *Config) { c.Metadata = rs })
		return rs, b
	}
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
	if p.log.LogEndOffset() != 1 {
		t.Fatalf("partition 1 ends at %d after the restart, want 1", p.log.LogEndOffset())
	}
}
