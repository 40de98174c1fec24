package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestBalancerFillsAJoiningBroker: a broker-only node added to a loaded
// three-node cluster gets its share of replicas and preferred leaders from
// the partition balancer (on by default) within a few of its periods,
// with nothing acknowledged lost; a drained node then gets nothing back.
func TestBalancerFillsAJoiningBroker(t *testing.T) {
	c := newCluster(4, []string{"--partition-balancer-interval", "1s", "--leader-imbalance-check-interval", "0"})
	c.balance = true
	root := t.TempDir()
	var voters []string
	for n := 1; n <= 4; n++ {
		c.dirs[n], c.addrs[n] = filepath.Join(root, fmt.Sprint("n", n)), freeAddr(t)
		if n <= 3 {
			voters = append(voters, fmt.Sprintf("%d@%s", n, freeAddr(t)))
		} else {
			c.own[n] = []string{"--roles", "broker", "--raft-addr", freeAddr(t)}
		}
	}
	c.quorum = strings.Join(voters, ",")
	c.size = 3 // start the three; node 4 joins under load
	c.start(t)
	c.size = 4
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "balanced"
	ch, prod, stopLoad := c.startLoad(ctx, t, topic, 200)
	ok(t, c.addrs[1], "", "topic", "create", "wide", "--partitions", "12", "--replication-factor", "2")
	time.Sleep(time.Second)

	joined := time.Now()
	c.procs[4] = c.launch(t, 4)
	c.procs[4].awaitServing(t)
	adm := kadm.NewClient(c.nodeClient(t, 1))
	defer adm.Close()
	var replicas, leaders map[int32]int
	for {
		replicas, leaders = map[int32]int{}, map[int32]int{}
		md, err := adm.Metadata(ctx, topic, "wide")
		if err == nil {
			for _, td := range md.Topics {
				for _, p := range td.Partitions {
					for _, r := range p.Replicas {
						replicas[r]++
					}
					leaders[p.Replicas[0]]++
				}
			}
		}
		if spreadOf(replicas) <= 1 && spreadOf(leaders) <= 1 && len(replicas) == 4 {
			break
		}
		if time.Since(joined) > time.Minute {
			t.Fatalf("a minute after node 4 joined: replicas %v, preferred leaders %v; want each broker within one of the others", replicas, leaders)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("node 4 has its share %v after joining: replicas %v, preferred leaders %v", time.Since(joined).Round(100*time.Millisecond), replicas, leaders)

	// Drained, it stays empty: the balancer does not undo the drain.
	r := ok(t, c.brokers(0), "", "cluster", "drain", "--node-id", "4", "--timeout", "2m")
	t.Logf("drain: %s", r.stdout)
	time.Sleep(3 * time.Second) // three balancer periods
	md, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			for _, id := range p.Replicas {
				if id == 4 {
					t.Fatalf("%s-%d is back on drained node 4: %v", td.Topic, p.Partition, p.Replicas)
				}
			}
		}
	}
	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()
	t.Log(ch.verify(t, finalLog(ctx, t, c.brokers(4), topic)))
}

func spreadOf(m map[int32]int) int {
	lo, hi, first := 0, 0, true
	for _, n := range m {
		if first {
			lo, hi, first = n, n, false
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi - lo
}
