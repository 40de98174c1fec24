package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/testcert"
	"github.com/strandmq/strand/internal/testnet"
)

// procCluster is `strand serve` processes on loopback, nodes 1…size (three
// unless newProcClusterN says otherwise), every one a voter; slices are
// indexed by node id.
type procCluster struct {
	quorum string
	size   int
	dirs   []string
	addrs  []string
	procs  []*serveProc
	extra  []string   // more serve flags, on every start
	own    [][]string // flags of one node, on every start
	bins   []string   // a node's strand binary ("": this build's)
	// balance leaves the partition balancer on (tests place partitions
	// where they check them, so it is off unless a test is about it).
	balance bool
	load    *checker // the scenario's load, once started
	// certs, if set, is a directory of a cluster CA (ca.crt) and node
	// certificates (node-N.crt, node-N.key): the nodes talk mutual TLS.
	certs string
	ca    *testcert.CA // signed certs
}

// newCluster is an unstarted procCluster of size nodes.
func newCluster(size int, extra []string) *procCluster {
	return &procCluster{size: size, extra: extra, dirs: make([]string, size+1), addrs: make([]string, size+1),
		procs: make([]*serveProc, size+1), own: make([][]string, size+1), bins: make([]string, size+1)}
}

func freeAddr(t *testing.T) string { return testnet.FreeAddr(t) }

func newProcCluster(t *testing.T, extra ...string) *procCluster {
	t.Helper()
	return newProcClusterN(t, 3, extra...)
}

func newProcClusterN(t *testing.T, size int, extra ...string) *procCluster {
	t.Helper()
	return startProcCluster(t, newCluster(size, extra))
}

// newSecureProcClusterN is newProcClusterN with mutual TLS between the
// nodes, as a cluster spanning machines runs.
func newSecureProcClusterN(t *testing.T, size int, extra ...string) *procCluster {
	t.Helper()
	c := newCluster(size, extra)
	c.secure(t)
	return startProcCluster(t, c)
}

func startProcCluster(t *testing.T, c *procCluster) *procCluster {
	t.Helper()
	size := c.size
	var voters []string
	root := t.TempDir()
	for n := 1; n <= size; n++ {
		voters = append(voters, fmt.Sprintf("%d@%s", n, freeAddr(t)))
		c.dirs[n] = filepath.Join(root, fmt.Sprint("n", n))
		c.addrs[n] = freeAddr(t)
	}
	c.quorum = strings.Join(voters, ",")
	c.start(t)
	return c
}

// tailLogs returns the last lines of every node's log.
func (c *procCluster) tailLogs(lines int) string {
	var b strings.Builder
	for n := 1; n <= c.size; n++ {
		if p := c.procs[n]; p != nil {
			l := strings.Split(p.logs.String(), "\n")
			fmt.Fprintf(&b, "--- node %d, last lines:\n%s\n", n, strings.Join(l[max(0, len(l)-lines):], "\n"))
		}
	}
	return b.String()
}

// start launches the nodes and waits until they serve.
func (c *procCluster) start(t *testing.T) {
	t.Helper()
	for n := 1; n <= c.size; n++ {
		c.procs[n] = c.launch(t, n)
	}
	for n := 1; n <= c.size; n++ {
		c.procs[n].awaitServing(t)
	}
}

func (c *procCluster) launch(t *testing.T, n int) *serveProc {
	t.Helper()
	args := []string{"--node-id", fmt.Sprint(n), "--listen", c.addrs[n], "--data-dir", c.dirs[n],
		"--controller-quorum", c.quorum, "--broker-heartbeat-interval", "200ms", "--broker-session-timeout", "3s"}
	if c.certs != "" {
		args = append(args, c.tlsFlags(n)...)
	}
	args = append(args, append(c.own[n], c.extra...)...)
	if c.bins[n] == "" && !c.balance {
		args = append(args, "--partition-balancer=false")
	}
	if c.bins[n] != "" {
		return startProc(t, exec.Command(c.bins[n], append(serveDefaults(), args...)...))
	}
	return launchServe(t, 0, args...)
}

func (c *procCluster) brokers(except int) string {
	var out []string
	for n := 1; n <= c.size; n++ {
		if n != except {
			out = append(out, c.addrs[n])
		}
	}
	return strings.Join(out, ",")
}

// TestClusterControllerKill is scenario S5: SIGKILL of the node leading
// the metadata quorum leaves a working cluster of two — the next topic
// create through a survivor succeeds within the election timeout and a
// session, applied once — and the killed node, started again, serves its
// partitions with every acknowledged record.
func TestClusterControllerKill(t *testing.T) {
	c := newProcCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	ok(t, c.addrs[1], "", "topic", "create", "s5", "--partitions", "6")
	var info clusterInfo
	// Node 2's metadata follows the controller's by a heartbeat: a broker
	// unfenced a moment ago may still show fenced there.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		decodeJSON(t, ok(t, c.addrs[2], "", "cluster", "info", "-o", "json").stdout, &info)
		good := len(info.Brokers) == 3 && info.ControllerID >= 1 && info.ControllerID <= 3
		for _, b := range info.Brokers {
			good = good && b.State == "live" && b.Voter && b.Controller == (b.ID == info.ControllerID) && b.Address == c.addrs[b.ID]
		}
		if good {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster info: %+v (addresses %v)", info, c.addrs)
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[2]), kgo.DefaultProduceTopic("s5"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 300
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	meta, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctl := int(meta.Controller)
	if ctl < 1 || ctl > 3 || len(meta.Brokers) != 3 {
		t.Fatalf("controller %d, brokers %v", ctl, meta.Brokers)
	}
	if err := c.procs[ctl].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.procs[ctl].wait(t, 30*time.Second)
	killed := time.Now()

	var created time.Duration
	for {
		r := runCLI(t, c.brokers(ctl), "", "topic", "create", "after-kill", "--partitions", "2", "--timeout", "10s")
		// An attempt that timed out on the client may still have committed;
		// its retry then finds the topic (as with Kafka).
		if r.code == 0 || strings.Contains(r.stderr, "already exists") {
			created = time.Since(killed)
			break
		}
		if time.Since(killed) > 30*time.Second { // an attempt during the election may fail; one must succeed
			t.Fatalf("no topic create succeeded in 30 s after the controller died:\n%s", r.stderr)
		}
		t.Logf("topic create %v after the kill: exit %d: %s", time.Since(killed).Round(time.Millisecond), r.code, strings.TrimSpace(r.stderr))
	}
	t.Logf("controller %d killed; a topic create through a survivor succeeded %v later", ctl, created.Round(time.Millisecond))
	// Every survivor lists it once, as soon as its image has caught up
	// with the controller's.
	for n := 1; n <= 3; n++ {
		if n == ctl {
			continue
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			list := ok(t, c.addrs[n], "", "topic", "list", "-o", "json")
			if strings.Count(list.stdout, `"after-kill"`) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d's topic list after the kill:\n%s", n, list.stdout)
			}
		}
	}

	// cluster info through a survivor: a new controller, and the killed
	// node fenced once its session (3 s here) is over.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		decodeJSON(t, ok(t, c.brokers(ctl), "", "cluster", "info", "-o", "json").stdout, &info)
		fenced := false
		for _, b := range info.Brokers {
			fenced = fenced || (int(b.ID) == ctl && b.State == "fenced")
		}
		if fenced && int(info.ControllerID) != ctl {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster info after killing node %d: %+v", ctl, info)
		}
	}

	c.procs[ctl] = c.launch(t, ctl)
	c.procs[ctl].awaitServing(t)
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[ctl]), kgo.ConsumeTopics("s5"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records after the restart; the restarted node:\n%s", len(seen), n, c.procs[ctl].logs.String())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// TestClusterRefusesForeignDirectory: a node whose data directory names
// another cluster id than the quorum's refuses to start, naming both.
func TestClusterRefusesForeignDirectory(t *testing.T) {
	c := newProcCluster(t)
	c.procs[3].stop(t)
	props := filepath.Join(c.dirs[3], "meta.properties")
	b, err := os.ReadFile(props)
	if err != nil {
		t.Fatal(err)
	}
	real := regexp.MustCompile(`cluster.id=(\S+)`).FindStringSubmatch(string(b))
	if real == nil {
		t.Fatalf("meta.properties has no cluster id:\n%s", b)
	}
	forged := strings.Replace(string(b), real[1], "AnotherClusterIdAAAAA", 1)
	if err := os.WriteFile(props, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	p := c.launch(t, 3)
	p.awaitServing(t)
	if err := p.wait(t, 30*time.Second); err == nil {
		t.Fatal("a node with another cluster's data directory started")
	}
	for _, id := range []string{real[1], "AnotherClusterIdAAAAA"} {
		if !p.contains(id) {
			t.Fatalf("the refusal does not name cluster %s:\n%s", id, p.logs.String())
		}
	}
}

// TestClusterAddAndRemoveVoter: a fourth node started with --join waits
// until `strand cluster add-voter` adds it to the quorum, then registers,
// serves and is given partitions; `cluster remove-voter` takes it out of
// the quorum again, and a member restarted with the original
// --controller-quorum still starts.
func TestClusterAddAndRemoveVoter(t *testing.T) {
	c := newProcCluster(t)
	raft4, addr4, dir4 := freeAddr(t), freeAddr(t), filepath.Join(t.TempDir(), "n4")
	p4 := launchServe(t, 0, "--node-id", "4", "--listen", addr4, "--data-dir", dir4, "--join",
		"--controller-quorum", c.quorum+",4@"+raft4, "--broker-heartbeat-interval", "200ms", "--broker-session-timeout", "3s")
	if r := ok(t, c.addrs[1], "", "cluster", "add-voter", "--node-id", "4", "--raft-addr", raft4); !strings.Contains(r.stdout, "added node 4") {
		t.Fatalf("add-voter: %s", r.stdout)
	}
	p4.awaitServing(t)
	var info clusterInfo
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		decodeJSON(t, ok(t, c.addrs[2], "", "cluster", "info", "-o", "json").stdout, &info)
		live, voters := 0, 0
		for _, b := range info.Brokers {
			if b.State == "live" {
				live++
			}
			if b.Voter {
				voters++
			}
		}
		if live == 4 && voters == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after add-voter: %+v\nnode 4's log:\n%s", info, p4.logs.String())
		}
	}
	ok(t, addr4, "", "topic", "create", "wide", "--partitions", "8")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r := runCLI(t, c.addrs[1], "", "topic", "describe", "wide", "-o", "json") // node 1 learns of it within a heartbeat
		if r.code == 0 && strings.Contains(strings.ReplaceAll(r.stdout, " ", ""), `"leader":4`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partition of a new topic on the added node:\n%s%s", r.stdout, r.stderr)
		}
	}

	p4.stop(t)
	if r := ok(t, c.addrs[1], "", "cluster", "remove-voter", "--node-id", "4", "-o", "json"); !strings.Contains(r.stdout, `"result": "removed"`) {
		t.Fatalf("remove-voter -o json: %s", r.stdout)
	}
	decodeJSON(t, ok(t, c.addrs[2], "", "cluster", "info", "-o", "json").stdout, &info)
	for _, b := range info.Brokers {
		if b.ID == 4 && b.Voter {
			t.Fatalf("node 4 is still a voter: %+v", info)
		}
	}
	// A member started again with the original quorum list.
	c.procs[2].stop(t)
	c.procs[2] = c.launch(t, 2)
	c.procs[2].awaitServing(t)
	if c.procs[2].addr == "" {
		t.Fatalf("node 2 did not start again with the original quorum list:\n%s", c.procs[2].logs.String())
	}
}

// TestTopicReassignCLI: strand topic reassign moves a one-replica
// partition from node 1 to nodes 2 and 3 and waits for it; the records
// come back through the new replicas; --list and --cancel then say
// nothing is moving.
func TestTopicReassignCLI(t *testing.T) {
	c := newProcCluster(t)
	b := c.brokers(0)
	ok(t, b, "", "topic", "create", "ra", "--replica-assignment", "1")
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "k%d:v%d\n", i, i)
	}
	ok(t, b, lines.String(), "produce", "ra", "-K", ":")
	r := ok(t, b, "", "topic", "reassign", "ra", "--replica-assignment", "2:3", "--wait", "--timeout", "60s")
	if !strings.Contains(r.stdout, "reassigning 1 partition of ra") || !strings.Contains(r.stdout, "reassignment of ra complete") {
		t.Fatalf("reassign --wait:\n%s\n%s", r.stdout, r.stderr)
	}
	var desc topicDescription
	decodeJSON(t, ok(t, b, "", "topic", "describe", "ra", "-o", "json").stdout, &desc)
	if p := desc.Partitions[0]; !slices.Equal(p.Replicas, []int32{2, 3}) || (p.Leader != 2 && p.Leader != 3) || p.EndOffset != 100 {
		t.Fatalf("after the move: %+v", p)
	}
	r = ok(t, c.addrs[2]+","+c.addrs[3], "", "consume", "ra", "--count", "100", "--format", `%o\n`)
	if n := strings.Count(r.stdout, "\n"); n != 100 || !strings.HasPrefix(r.stdout, "0\n") || !strings.HasSuffix(r.stdout, "\n99\n") {
		t.Fatalf("consumed %d records through the new replicas, want 100:\n%.500s", n, r.stdout)
	}
	if r := ok(t, b, "", "topic", "reassign", "ra", "--list"); !strings.Contains(r.stdout, "no reassignment of ra in progress") {
		t.Errorf("--list: %q", r.stdout)
	}
	if r := runCLI(t, b, "", "topic", "reassign", "ra", "--cancel"); r.code != exitError || !strings.Contains(r.stderr, "no reassignment") {
		t.Errorf("--cancel with nothing moving: exit %d, %q", r.code, r.stderr)
	}
	if r := runCLI(t, b, "", "topic", "reassign", "ra", "--replica-assignment", "2:9"); r.code != exitError || !strings.Contains(r.stderr, "invalid replica assignment") {
		t.Errorf("a target on an unknown broker: exit %d, %q", r.code, r.stderr)
	}
	// topic alter returns once every node shows the change: each one,
	// asked at once, has it.
	if r := ok(t, c.addrs[1], "", "topic", "alter", "ra", "--config", "retention.ms=3600000"); strings.Contains(r.stderr, "warning") {
		t.Errorf("topic alter: %s", r.stderr)
	}
	for n := 1; n <= 3; n++ {
		var d topicDescription
		decodeJSON(t, ok(t, c.addrs[n], "", "topic", "describe", "ra", "-o", "json").stdout, &d)
		if len(d.Configs) != 1 || d.Configs[0].Name != "retention.ms" || d.Configs[0].Value != "3600000" {
			t.Errorf("node %d right after topic alter: configs %+v", n, d.Configs)
		}
	}
}

// TestControllerRestartedAtOnce: the node leading the metadata quorum is
// SIGKILLed and started again at once, three times. Its successor gives
// every broker a fresh session on taking over, the dead process's
// registration included, so the new process is refused as a twin for a
// while; it must wait that out and serve, not exit.
func TestControllerRestartedAtOnce(t *testing.T) {
	c := newProcCluster(t)
	for i := range 3 {
		var info clusterInfo
		decodeJSON(t, ok(t, c.brokers(0), "", "cluster", "info", "-o", "json").stdout, &info)
		n := int(info.ControllerID)
		if n < 1 || n > 3 {
			t.Fatalf("round %d: no controller: %+v", i, info)
		}
		c.kill9(t, n)
		c.procs[n] = c.launch(t, n)
		c.procs[n].awaitServing(t)
		if c.procs[n].addr == "" {
			t.Fatalf("round %d: node %d, the controller, restarted at once and did not serve:\n%s", i, n, c.procs[n].logs.String())
		}
		t.Logf("round %d: node %d (controller) killed and serving again", i, n)
	}
}

// awaitBrokers waits until every seed broker of cl lists want unfenced
// brokers in its metadata: a node serves its listener before the
// controller has its registration, and a topic placed on it in between is
// refused ("not a live broker"). The request goes to each seed itself:
// kgo may answer a client's Metadata request from its cache.
func awaitBrokers(t *testing.T, cl *kgo.Client, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		short := ""
		for _, b := range cl.SeedBrokers() {
			resp, err := b.Request(ctx, kmsg.NewPtrMetadataRequest())
			if err != nil {
				short = err.Error()
			} else if got := len(resp.(*kmsg.MetadataResponse).Brokers); got < want {
				short = fmt.Sprintf("a seed lists %d brokers", got)
			}
		}
		if short == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the metadata never listed %d brokers: %s", want, short)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
