package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/cluster/quorum"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vnet"
)

// vnetCluster is three brokers in this process whose raft and controller
// traffic crosses a vnet fault layer.
type vnetCluster struct {
	nw      *vnet.Network
	brokers map[NodeID]*Broker
	stores  map[NodeID]*quorum.RaftStore
}

func startVnetCluster(t *testing.T) *vnetCluster {
	t.Helper()
	c := &vnetCluster{nw: vnet.New(), brokers: map[NodeID]*Broker{}, stores: map[NodeID]*quorum.RaftStore{}}
	var voters []quorum.Voter
	for id := int32(1); id <= 3; id++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		voters = append(voters, quorum.Voter{ID: id, Addr: ln.Addr().String()})
		ln.Close()
	}
	for _, v := range voters {
		rs, err := quorum.OpenRaftStore(quorum.RaftConfig{NodeID: v.ID, Dir: t.TempDir(), Bind: v.Addr, Voters: voters, Network: c.nw, Logger: quiet,
			Controller: quorum.ControllerConfig{SessionTimeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		c.stores[NodeID(v.ID)] = rs
	}
	type result struct {
		id  NodeID
		b   *Broker
		err error
	}
	opened := make(chan result, 3)
	for id, rs := range c.stores {
		dir := t.TempDir()
		go func() { // together: each waits for the others' quorum
			b, err := Open(Config{Dir: dir, NodeID: id, Metadata: rs, Logger: quiet, HeartbeatInterval: 100 * time.Millisecond,
				SessionTimeout: time.Second, GroupInitialRebalanceDelay: -1,
				Endpoints: []cluster.Endpoint{{Name: "CLIENT", Host: "127.0.0.1", Port: 9000 + int32(id)}}})
			opened <- result{id, b, err}
		}()
	}
	for range 3 {
		r := <-opened
		if r.err != nil {
			t.Fatal(r.err)
		}
		c.brokers[r.id] = r.b
	}
	t.Cleanup(func() {
		c.nw.Heal()
		for id, b := range c.brokers {
			b.Close()
			c.stores[id].Close()
		}
	})
	for id, b := range c.brokers {
		waitFor(t, fmt.Sprint("node ", id, " to be unfenced"), 15*time.Second, func() bool { return !b.Fenced() })
		waitFor(t, fmt.Sprint("node ", id, "'s image to show three live brokers"), 15*time.Second, func() bool {
			return len(liveBrokers(c.stores[id].Image())) == 3
		})
	}
	return c
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// TestNetworkSplitFencesTheCutOffNode: a node cut off from the other two
// (both ways, in the vnet fault layer) fences itself within about a
// session and refuses produces; the majority's controller fences it and
// its partition has no leader, while the other partitions keep taking
// records. When the links heal, the node is unfenced, leads its partition
// again at a higher leader epoch, and its records are all there.
func TestNetworkSplitFencesTheCutOffNode(t *testing.T) {
	c := startVnetCluster(t)
	ctx := context.Background()
	tp, err := c.brokers[1].CreateTopic(TopicSpec{Name: "t", Partitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	img := c.stores[1].Image()
	ledBy := map[NodeID]PartitionID{}
	for i := range int32(3) {
		reg, _ := img.Partition(tp.ID, i)
		ledBy[NodeID(reg.Leader)] = PartitionID(i)
	}
	if len(ledBy) != 3 {
		t.Fatalf("3 partitions led by %v, want one per node", ledBy)
	}
	partitionOn := func(id NodeID) *Partition {
		t.Helper()
		var p *Partition
		waitFor(t, fmt.Sprint("node ", id, " to open its partition"), 5*time.Second, func() bool {
			p, err = c.brokers[id].Partition("t", ledBy[id])
			return err == nil
		})
		return p
	}
	for id := NodeID(1); id <= 3; id++ {
		if _, err := partitionOn(id).Append(ctx, encode(t, 5, record.DefaultBatchOptions()), AcksAll); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}

	const cut = NodeID(3)
	c.nw.Isolate(strconv.Itoa(int(cut)), "1", "2")
	split := time.Now()
	waitFor(t, "the cut-off node to fence itself", 10*time.Second, c.brokers[cut].Fenced)
	t.Logf("the cut-off node fenced itself %v after the split", time.Since(split).Round(time.Millisecond))
	if _, err := partitionOn(cut).Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce on the cut-off node: %v, want ErrNotLeader", err)
	}
	waitFor(t, "the majority to take the cut-off node's leadership", 15*time.Second, func() bool {
		reg, _ := c.stores[1].Image().Partition(tp.ID, int32(ledBy[cut]))
		b, _ := c.stores[1].Image().Broker(cluster.NodeID(cut))
		return reg.Leader == cluster.NoLeader && b.Fenced
	})
	for _, id := range []NodeID{1, 2} {
		// On a loaded machine a majority node may miss a heartbeat and be
		// fenced for a moment too; it must take records again within the
		// wait, and its error meanwhile is a retriable one.
		var err error
		waitFor(t, fmt.Sprint("node ", id, " to take records during the split"), 10*time.Second, func() bool {
			_, err = partitionOn(id).Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll)
			if err != nil && !errors.Is(err, ErrNotLeader) {
				t.Fatalf("node %d during the split: %v", id, err)
			}
			return err == nil
		})
	}

	c.nw.Heal()
	healed := time.Now()
	waitFor(t, "the healed node to be unfenced and lead again", 15*time.Second, func() bool {
		reg, _ := c.stores[cut].Image().Partition(tp.ID, int32(ledBy[cut]))
		return !c.brokers[cut].Fenced() && reg.Leader == cluster.NodeID(cut) && reg.LeaderEpoch == 2
	})
	t.Logf("serving again %v after the links healed", time.Since(healed).Round(time.Millisecond))
	p := partitionOn(cut)
	waitFor(t, "the partition to take the new epoch", 5*time.Second, func() bool { return p.LeaderEpoch() == 2 })
	res, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll)
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 5 {
		t.Fatalf("the first append after healing is at offset %d, want 5 (the 5 before the split kept, the refused one not written)", res.BaseOffset)
	}
}
