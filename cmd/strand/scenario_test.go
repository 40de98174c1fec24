package main

import (
	"context"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// scenario runs one of REPLICATION.md §6.3's fault scenarios against three
// `strand serve` processes: an idempotent acks=all load and a consumer on
// an RF 3, min ISR 2 topic while fault runs rounds times (each followed by
// a wait for full ISRs), then the S1 checker: no acknowledged record lost,
// duplicated or moved, nothing read that the final log lacks, replicas
// identical below the high watermark.
func scenario(t *testing.T, rounds int, fault func(ctx context.Context, c *procCluster, i int)) {
	scenarioOn(t, newSecureProcClusterN(t, 3, "--replica-lag-time-max", "3s"), rounds, fault)
}

// scenarioOn is scenario on a cluster already started.
func scenarioOn(t *testing.T, c *procCluster, rounds int, fault func(ctx context.Context, c *procCluster, i int)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*time.Minute+2*time.Minute)
	defer cancel()
	const topic, partitions = "sc", int32(3)
	ch, prod, stopLoad := c.startLoad(ctx, t, topic, 300)
	c.load = ch
	for i := range rounds {
		at := time.Now()
		fault(ctx, c, i)
		c.waitInSync(ctx, t, topic, 60*time.Second)
		t.Logf("round %d: in sync again after %v", i, time.Since(at).Round(time.Millisecond))
	}
	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()
	c.waitInSync(ctx, t, topic, time.Minute)
	t.Log(ch.verify(t, finalLog(ctx, t, c.brokers(0), topic)))
	for n := 1; n <= 3; n++ {
		c.procs[n].stop(t)
	}
	checkReplicasConverged(t, c.dirs[1:], topic, partitions)
}

func rounds(t *testing.T, env string, ci int) int {
	if s := os.Getenv(env); s != "" {
		n, _ := strconv.Atoi(s)
		return n
	}
	if testing.Short() {
		return 1
	}
	return ci
}

// TestS6RollingRestart is scenario S6: SIGTERM each node in turn under
// load and start it again. Controlled shutdown moves its leaderships
// before it exits: once it has, no partition is led by it.
// STRAND_S6_ROUNDS sets the restarts (CI: 3).
func TestS6RollingRestart(t *testing.T) {
	scenario(t, rounds(t, "STRAND_S6_ROUNDS", 3), func(ctx context.Context, c *procCluster, i int) {
		n := i%3 + 1
		c.procs[n].stop(t)
		live := slices.DeleteFunc([]int{1, 2, 3}, func(x int) bool { return x == n })
		for p := range int32(3) { // the node asked may be a metadata heartbeat behind
			for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
				l := c.leaderOf(ctx, t, live, "sc", p)
				if l != int32(n) && l >= 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: partition %d led by %d a second after node %d's controlled shutdown:\n%s", i, p, l, n, c.procs[n].logs.String())
				}
			}
		}
		c.procs[n] = c.launch(t, n)
		c.procs[n].awaitServing(t)
	})
}

// TestS4PausedLeader is scenario S4's shape with SIGSTOP: the leader of a
// partition freezes past its session (cut off from controller, followers
// and clients alike), another replica takes over, and the old one wakes
// up believing it leads. It must acknowledge nothing its successor does
// not have: the checker finds no acknowledged record lost.
// STRAND_S4_ROUNDS sets the pauses (CI: 2).
func TestS4PausedLeader(t *testing.T) {
	scenario(t, rounds(t, "STRAND_S4_ROUNDS", 2), func(ctx context.Context, c *procCluster, i int) {
		p := int32(i) % 3
		leader := int(c.leaderOf(ctx, t, []int{1, 2, 3}, "sc", p))
		if leader < 1 {
			t.Fatalf("round %d: partition %d has no leader", i, p)
		}
		proc := c.procs[leader].cmd.Process
		if err := proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		live := slices.DeleteFunc([]int{1, 2, 3}, func(x int) bool { return x == leader })
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if l := c.leaderOf(ctx, t, live, "sc", p); l > 0 && l != int32(leader) {
				break
			}
			if time.Now().After(deadline) {
				_ = proc.Signal(syscall.SIGCONT)
				t.Fatalf("round %d: partition %d got no new leader within 20 s of node %d's pause", i, p, leader)
			}
		}
		time.Sleep(time.Second) // the load goes on through the new leader
		if err := proc.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	})
}
