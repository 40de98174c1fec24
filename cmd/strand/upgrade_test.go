package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/cluster"
)

// upgradeBase is the first commit with feature levels (metadata.version,
// cluster/features.go): the oldest build a rolling upgrade starts from.
const upgradeBase = "18635c493ff92efefaad8429311c1f18e6052408"

// buildAt builds cmd/strand as it was at commit rev, in a git worktree of
// this repository, and returns the binary (skipping the test where the
// history is not at hand, e.g. a source tarball).
func buildAt(t *testing.T, rev string) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("no git repository to build %s from: %v", rev, err)
	}
	repo := strings.TrimSpace(string(top))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", rev+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this clone's history", rev)
	}
	dir := filepath.Join(t.TempDir(), "base")
	if out, err := exec.Command("git", "-C", repo, "worktree", "add", "--detach", dir, rev).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s: %v\n%s", rev, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).Run() })
	bin := filepath.Join(t.TempDir(), "strand-"+rev[:8])
	build := exec.Command("go", "build", "-o", bin, "./cmd/strand")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building strand at %s: %v\n%s", rev, err, out)
	}
	return bin
}

// groupTally counts how often a consumer group delivered each record.
type groupTally struct {
	mu    sync.Mutex
	seen  map[string]int
	twice []string
}

// consumeGroup runs a classic-group consumer that commits what it
// processed before it lets a rebalance happen, as an application that
// must not process a record twice does, until ctx ends.
func (g *groupTally) consumeGroup(ctx context.Context, t *testing.T, brokers, topic, group string) (done chan struct{}) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
			g.mu.Lock()
			for _, r := range recs {
				v := string(r.Value)
				if g.seen[v]++; g.seen[v] == 2 {
					g.twice = append(g.twice, fmt.Sprintf("%s at %d@%d", v, r.Partition, r.Offset))
				}
			}
			g.mu.Unlock()
			if len(recs) > 0 {
				commit, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := cl.CommitRecords(commit, recs...); err != nil {
					t.Logf("group commit: %v", err)
				}
				cancel()
			}
			cl.AllowRebalance()
		}
	}()
	return done
}

// TestRollingUpgrade is the upgrade an operator runs: a three-node
// cluster of the oldest build with feature levels, under an idempotent
// acks=all producer and a consumer group, has each node stopped and
// started again on this build in turn; then the new level is finalized.
// Nothing acknowledged is lost, the group delivers nothing twice, and a
// restart moves only the leaderships of the node restarted, once each.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an earlier commit")
	}
	// STRAND_UPGRADE_SOAK runs the load that long on each mixed cluster
	// (the long form of the test; CI: 1 s).
	soak := time.Second
	if s := os.Getenv("STRAND_UPGRADE_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("STRAND_UPGRADE_SOAK=%q: %v", s, err)
		}
		soak = d
	}
	old := buildAt(t, upgradeBase)
	c := newCluster(3, nil)
	for n := 1; n <= 3; n++ {
		c.bins[n] = old
	}
	startProcCluster(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute+3*soak)
	defer cancel()
	const topic = "upgraded"
	ch, prod, stopLoad := c.startLoad(ctx, t, topic, 200)
	g := &groupTally{seen: map[string]int{}}
	groupCtx, stopGroup := context.WithCancel(ctx)
	groupDone := g.consumeGroup(groupCtx, t, c.brokers(0), topic, "upgrade-readers")
	time.Sleep(2 * time.Second)

	latest := cluster.MetadataVersionLatest
	for n := 1; n <= 3; n++ {
		if n == 2 && latest > cluster.MetadataVersionFeatures {
			// Mixed builds: the new level must wait for the old nodes.
			// Kafka clients send UpdateFeatures to the controller: a new
			// one names the old nodes, an old one the level it lacks.
			r := runCLI(t, c.addrs[1], "", "cluster", "features", "--upgrade", fmt.Sprintf("metadata.version=%d", latest))
			if r.code == 0 || !strings.Contains(r.stderr, "upgrade it first") && !strings.Contains(r.stderr, "supports metadata.version 1 to 1") {
				t.Fatalf("finalizing %d with old nodes running: exit %d\n%s%s", latest, r.code, r.stdout, r.stderr)
			}
		}
		before := c.leaderEpochs(ctx, t, topic)
		leaders := map[int32]int32{}
		for p := int32(0); p < 3; p++ {
			leaders[p] = c.leaderOf(ctx, t, []int{1, 2, 3}, topic, p)
		}
		c.procs[n].stop(t)
		c.bins[n] = "" // this build
		c.procs[n] = c.launch(t, n)
		c.procs[n].awaitServing(t)
		c.waitInSync(ctx, t, topic, time.Minute)
		time.Sleep(soak) // let the load run on the mixed cluster
		after := c.leaderEpochs(ctx, t, topic)
		for p, e := range after {
			moves, wasLed := e-before[p], leaders[p] == int32(n)
			if moves > 1 || (!wasLed && moves != 0) {
				t.Errorf("restarting node %d moved partition %d's leadership %d times (its leader was %d)", n, p, moves, leaders[p])
			}
		}
		t.Logf("node %d now runs this build; leader epochs %v -> %v", n, before, after)
	}
	r := ok(t, c.brokers(0), "", "cluster", "features", "--latest", "-o", "json")
	t.Logf("strand cluster features --latest:\n%s%s", r.stderr, r.stdout)
	var infos []featureInfo
	decodeJSON(t, r.stdout, &infos)
	for _, fi := range infos {
		if fi.Name == cluster.MetadataVersion && (fi.Finalized != latest || len(fi.Nodes) != 3) {
			t.Fatalf("after the upgrade: %+v, want metadata.version finalized at %d on 3 nodes", fi, latest)
		}
	}
	if latest > cluster.MetadataVersionFeatures {
		down := runCLI(t, c.brokers(0), "", "cluster", "features", "--upgrade", fmt.Sprintf("metadata.version=%d", latest-1))
		if down.code == 0 || !strings.Contains(down.stderr, "never lowered") {
			t.Fatalf("a downgrade was not refused: exit %d\n%s", down.code, down.stderr)
		}
	}
	time.Sleep(2 * time.Second)
	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()
	final := finalLog(ctx, t, c.brokers(0), topic)
	t.Log(ch.verify(t, final))
	// The group reads to the end before it stops.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		g.mu.Lock()
		n := len(g.seen)
		g.mu.Unlock()
		if n >= len(final) {
			break
		}
	}
	stopGroup()
	<-groupDone
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.twice) > 0 {
		t.Errorf("the consumer group delivered %d records twice across the upgrade: %v", len(g.twice), g.twice[:min(5, len(g.twice))])
	}
	if len(g.seen) < len(final) {
		t.Errorf("the consumer group read %d of the %d records", len(g.seen), len(final))
	}
	t.Logf("rolling upgrade %s -> this build: group read %d records, none twice", upgradeBase[:8], len(g.seen))
}
