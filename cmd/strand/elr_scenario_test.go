package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// KIP-966 against real processes. Five nodes, so that the controller
// quorum outlives the partition's replicas; one partition, RF 3, min ISR
// 2, leader L and followers F1, F2. F2 stops, then F1 stops: the ISR is
// {L}, below min ISR, so F1 — which held every acknowledged record when it
// left — is an eligible leader replica. Then L dies by SIGKILL and stays
// dead.
//
// With F1 stopped cleanly, F1 and F2 come back (the quorum needs one of
// them) and F1 leads from the ELR: the partition is available with every
// acknowledged record although its last ISR member is gone. Without
// KIP-966 it would wait for L.
//
// With F1 killed instead, its restart is an unclean shutdown (its unsynced
// tail may be gone), so it leaves the ELR and may not lead: the partition
// stays leaderless until L, the last known leader, is back.

func TestELRCleanReplicaLeadsWhenTheISRIsGone(t *testing.T) {
	elrScenario(t, true)
}

func TestELRUncleanRestartMayNotLead(t *testing.T) {
	elrScenario(t, false)
}

func elrScenario(t *testing.T, f1Clean bool) {
	c := newProcClusterN(t, 5, "--replica-lag-time-max", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "elr"
	ok(t, c.addrs[1], "", "topic", "create", topic, "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	c.waitInSync(ctx, t, topic, 20*time.Second)
	all := []int{1, 2, 3, 4, 5}
	st := c.partitionState(ctx, t, all, topic)
	leader := int(st.Leader)
	var followers []int
	var dirs []string
	for _, r := range st.Replicas {
		dirs = append(dirs, c.dirs[r])
		if int(r) != leader {
			followers = append(followers, int(r))
		}
	}
	f1, f2 := followers[0], followers[1]
	t.Logf("leader %d, F1 %d, F2 %d", leader, f1, f2)

	acked := map[string]int64{}
	produceAcked(ctx, t, c.addrs[leader], topic, "a", 200, acked)

	c.procs[f2].stop(t)
	c.awaitISR(ctx, t, all, topic, []int32{int32(leader), int32(f1)})
	produceAcked(ctx, t, c.addrs[leader], topic, "b", 200, acked)

	if f1Clean {
		c.procs[f1].stop(t)
	} else {
		c.kill9(t, f1)
	}
	c.awaitISR(ctx, t, all, topic, []int32{int32(leader)})
	for try := 1; ; try++ { // a retriable error in between is fine; a success is not
		err := produceOne(ctx, c.addrs[leader], topic, "c")
		if errors.Is(err, kerr.NotEnoughReplicas) {
			break
		}
		if err == nil || try == 3 {
			t.Fatalf("acks=all with the ISR at {%d} below min ISR 2: %v, want NOT_ENOUGH_REPLICAS", leader, err)
		}
	}
	c.kill9(t, leader)

	restarted := time.Now()
	for _, n := range []int{f1, f2} {
		c.procs[n] = c.launch(t, n)
	}
	for _, n := range []int{f1, f2} {
		c.procs[n].awaitServing(t)
	}
	live := slices.DeleteFunc(slices.Clone(all), func(n int) bool { return n == leader })
	if f1Clean {
		st := c.awaitNewLeader(ctx, t, live, topic, leader, 30*time.Second)
		if st.Leader != int32(f1) {
			t.Fatalf("leader %d after the ISR emptied, want %d from the ELR", st.Leader, f1)
		}
		t.Logf("node %d leads from the ELR %v after its restart (node %d, the last ISR member, dead)",
			f1, time.Since(restarted).Round(time.Millisecond), leader)
		c.awaitISR(ctx, t, live, topic, sorted([]int32{int32(f1), int32(f2)}))
		produceAcked(ctx, t, c.brokers(leader), topic, "d", 100, acked)
		checkAcked(t, finalLog(ctx, t, c.brokers(leader), topic), acked)
	} else {
		// Two sessions and more with both restarted: an election would have come.
		time.Sleep(8 * time.Second)
		if st := c.partitionState(ctx, t, live, topic); st.Leader >= 0 {
			t.Fatalf("node %d led after an unclean restart: %+v", st.Leader, st)
		}
		t.Logf("leaderless for 8 s with nodes %d (unclean restart) and %d (not eligible) up", f1, f2)
	}

	c.procs[leader] = c.launch(t, leader)
	c.procs[leader].awaitServing(t)
	c.waitInSync(ctx, t, topic, 60*time.Second)
	if !f1Clean {
		t.Logf("node %d, the last known leader, leads again %v after its peers' restart",
			c.partitionState(ctx, t, all, topic).Leader, time.Since(restarted).Round(time.Millisecond))
	}
	produceAcked(ctx, t, c.brokers(0), topic, "e", 100, acked)
	checkAcked(t, finalLog(ctx, t, c.brokers(0), topic), acked)
	for _, n := range all {
		c.procs[n].stop(t)
	}
	checkPartitionConverged(t, dirs, topic, "0")
}

// partitionState is partition 0 of topic as the first live node that
// knows it describes it.
func (c *procCluster) partitionState(ctx context.Context, t *testing.T, live []int, topic string) kadm.PartitionDetail {
	t.Helper()
	return c.partitionDetail(ctx, t, live, topic, 0)
}

// awaitISR waits until partition 0's ISR is isr (sorted).
func (c *procCluster) awaitISR(ctx context.Context, t *testing.T, live []int, topic string, isr []int32) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := c.partitionState(ctx, t, live, topic)
		if slices.Equal(sorted(st.ISR), sorted(isr)) && st.Leader >= 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ISR %v (leader %d) after 30 s, want %v\n%s", st.ISR, st.Leader, isr, c.tailLogs(20))
		}
	}
}

// awaitNewLeader waits until partition 0 has a leader other than old.
func (c *procCluster) awaitNewLeader(ctx context.Context, t *testing.T, live []int, topic string, old int, within time.Duration) kadm.PartitionDetail {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		if st := c.partitionState(ctx, t, live, topic); st.Leader >= 0 && st.Leader != int32(old) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("no leader %v after the restart\n%s", within, c.tailLogs(30))
		}
	}
}

// produceAcked produces n acks=all records to partition 0, each value
// prefix-i, and records each one's offset in acked.
func produceAcked(ctx context.Context, t *testing.T, brokers, topic, prefix string, n int, acked map[string]int64) {
	t.Helper()
	cl := elrProducer(t, brokers, topic)
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte(prefix + strconv.Itoa(i))}
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, r := range cl.ProduceSync(pctx, recs...) {
		if r.Err != nil {
			t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
		}
		acked[string(r.Record.Value)] = r.Record.Offset
	}
}

// produceOne produces one acks=all record without retries and returns the
// broker's answer.
func produceOne(ctx context.Context, brokers, topic, value string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return cl.ProduceSync(pctx, &kgo.Record{Value: []byte(value)}).FirstErr()
}

func elrProducer(t *testing.T, brokers, topic string) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// checkAcked asserts every acknowledged record is in the final log at its
// offset, once.
func checkAcked(t *testing.T, final map[pos]string, acked map[string]int64) {
	t.Helper()
	count := map[string]int{}
	for _, v := range final {
		count[v]++
	}
	var bad []string
	for v, off := range acked {
		if got := final[pos{0, off}]; got != v || count[v] != 1 {
			bad = append(bad, fmt.Sprintf("%s@%d: found %q there, %d copies", v, off, got, count[v]))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("%d of %d acknowledged records not in the final log once at their offset: %v", len(bad), len(acked), bad[:min(len(bad), 10)])
	}
	t.Logf("%d acknowledged records, each once at its offset in a log of %d", len(acked), len(final))
}
