package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestS7Reassignment is scenario S7 on four `strand serve` processes under
// acks=all load: one partition of the load's topic moves from three nodes
// to another three ({a,b,c} → {b,c,d}: the new node copies it while it is
// written, the old one drops its copy), and a topic of replication factor
// 1 grows to 3. ListPartitionReassignments shows each move while it runs
// and nothing once it is done; the checker then finds no acknowledged
// record lost, duplicated or moved, and every replica identical below the
// high watermark.
func TestS7Reassignment(t *testing.T) {
	c := newSecureProcClusterN(t, 4, "--replica-lag-time-max", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	ch, prod, stopLoad := c.startLoad(ctx, t, "sc", 300)
	ok(t, c.addrs[1], "", "topic", "create", "grow", "--partitions", "1", "--replication-factor", "1")
	grow := newChecker()
	growLoad, stopGrow := context.WithCancel(ctx)
	growProd := grow.produce(growLoad, t, c.brokers(0), "grow", 1, 200)
	grow.consume(growLoad, t, c.brokers(0), "grow")
	time.Sleep(3 * time.Second) // data to copy

	from := c.replicasOf(ctx, t, "sc", 0)
	spare := 10 - int(from[0]+from[1]+from[2]) // the node without a replica of sc-0
	to := []int32{from[1], from[2], int32(spare)}
	c.reassign(ctx, t, "sc", 0, to)
	gone := filepath.Join(c.dirs[from[0]], "sc-0")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(gone); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d, no longer a replica of sc-0, still has %s 20 s after the move", from[0], gone)
		}
	}
	t.Logf("sc-0 moved from %v to %v; node %d deleted its copy", from, to, from[0])

	one := c.replicasOf(ctx, t, "grow", 0)
	three := append(slices.Clone(one), otherNodes(one, 3)...)
	c.reassign(ctx, t, "grow", 0, three)
	t.Logf("grow-0 went from replicas %v to %v", one, three)

	stopLoad()
	stopGrow()
	for _, cl := range []*kgo.Client{prod, growProd} {
		flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
		_ = cl.Flush(flush)
		cancelFlush()
		cl.Close()
	}
	c.waitInSync(ctx, t, "sc", time.Minute)
	c.waitInSync(ctx, t, "grow", time.Minute)
	t.Log("sc: ", ch.verify(t, finalLog(ctx, t, c.brokers(0), "sc")))
	t.Log("grow: ", grow.verify(t, finalLog(ctx, t, c.brokers(0), "grow")))
	replicas := map[string][]int32{}
	for p := range int32(3) {
		replicas[fmt.Sprint("sc-", p)] = c.replicasOf(ctx, t, "sc", p)
	}
	replicas["grow-0"] = three
	for n := 1; n <= c.size; n++ {
		c.procs[n].stop(t)
	}
	for part, rs := range replicas {
		topic, p, _ := strings.Cut(part, "-")
		var dirs []string
		for _, r := range rs {
			dirs = append(dirs, c.dirs[r])
		}
		checkPartitionConverged(t, dirs, topic, p)
	}
}

// reassign moves partition p of topic to replicas with `strand topic
// reassign` (the other partitions keep theirs), checks that
// ListPartitionReassignments shows it until the controller completes it,
// and waits until the metadata shows the new replicas all in sync.
func (c *procCluster) reassign(ctx context.Context, t *testing.T, topic string, p int32, replicas []int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	meta, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var assignment []string
	for _, pd := range meta.Topics[topic].Partitions.Sorted() {
		rs := pd.Replicas
		if pd.Partition == p {
			rs = replicas
		}
		assignment = append(assignment, strings.Trim(strings.ReplaceAll(fmt.Sprint(rs), " ", ":"), "[]"))
	}
	started := time.Now()
	ok(t, c.addrs[1], "", "topic", "reassign", topic, "--replica-assignment", strings.Join(assignment, ","))
	listed := false
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {p: {}}})
		if err != nil {
			t.Fatalf("ListPartitionReassignments: %v", err)
		}
		r, moving := l[topic][p]
		if moving {
			listed = true
			if !slices.Equal(r.Replicas, union(replicas, r.RemovingReplicas)) && !slices.Equal(sorted(r.Replicas), sorted(union(replicas, r.RemovingReplicas))) {
				t.Errorf("%s-%d in progress: replicas %v adding %v removing %v, want the target %v and what leaves", topic, p, r.Replicas, r.AddingReplicas, r.RemovingReplicas, replicas)
			}
		}
		if v, err := c.view(ctx, t, 1, topic, p); !moving && err == nil && slices.Equal(v.replicas, replicas) && len(v.isr) == len(replicas) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-%d did not reach replicas %v in sync within a minute", topic, p, replicas)
		}
	}
	t.Logf("%s-%d → %v done in %v; listed in progress: %v", topic, p, replicas, time.Since(started).Round(time.Millisecond), listed)
	if !listed {
		t.Errorf("ListPartitionReassignments never showed %s-%d while it moved", topic, p)
	}
}

func (c *procCluster) replicasOf(ctx context.Context, t *testing.T, topic string, p int32) []int32 {
	t.Helper()
	v, err := c.view(ctx, t, 1, topic, p)
	if err != nil || len(v.replicas) == 0 {
		t.Fatalf("replicas of %s-%d: %v", topic, p, err)
	}
	return v.replicas
}

// otherNodes returns up to want−len(have) nodes of 1…4 not in have.
func otherNodes(have []int32, want int) []int32 {
	var out []int32
	for n := int32(1); n <= 4 && len(have)+len(out) < want; n++ {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

func union(a, b []int32) []int32 {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sorted(a []int32) []int32 { s := slices.Clone(a); slices.Sort(s); return s }

// checkPartitionConverged is checkReplicasConverged for one partition,
// given the directories of exactly its replicas.
func checkPartitionConverged(t *testing.T, dirs []string, topic, p string) {
	t.Helper()
	var ref [][2]int64
	minHW := int64(-1)
	all := map[string][][2]int64{}
	for _, d := range dirs {
		dir := filepath.Join(d, topic+"-"+p)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("replica %s: %v", dir, err)
		}
		hw, bs := replicaBatches(t, dir)
		all[dir] = bs
		if minHW < 0 || int64(hw) < minHW {
			minHW = int64(hw)
		}
	}
	for d, bs := range all {
		bs = slices.DeleteFunc(slices.Clone(bs), func(b [2]int64) bool { return b[0] >= minHW })
		if ref == nil {
			ref = bs
			continue
		}
		if !slices.Equal(ref, bs) {
			t.Errorf("%s-%s: replica %s differs below the high watermark %d (%d batches vs %d)", topic, p, d, minHW, len(bs), len(ref))
		}
	}
	t.Logf("%s-%s: %d replicas identical below the high watermark %d", topic, p, len(dirs), minHW)
}
