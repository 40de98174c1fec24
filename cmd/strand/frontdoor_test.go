package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServePidFileFreshCluster is what an operator of a new three-node
// cluster on a shared host sees: every node writes its pid to --pid-file;
// the first start greets nobody with an unclean-shutdown warning; right
// after a leader is SIGKILLed `topic describe` prints the true record count
// or says it is unknown, never a smaller total that reads as loss; and
// `kill $(cat n2.pid)` stops that node alone, cleanly, removing its file.
func TestServePidFileFreshCluster(t *testing.T) {
	c := newCluster(3, nil)
	root := t.TempDir()
	var voters []string
	pidFiles := make([]string, 4)
	for n := 1; n <= 3; n++ {
		voters = append(voters, fmt.Sprintf("%d@%s", n, freeAddr(t)))
		c.dirs[n] = filepath.Join(root, fmt.Sprint("n", n))
		c.addrs[n] = freeAddr(t)
		pidFiles[n] = filepath.Join(root, fmt.Sprintf("n%d.pid", n))
		c.own[n] = []string{"--pid-file", pidFiles[n]}
	}
	c.quorum = strings.Join(voters, ",")
	c.start(t)
	for n := 1; n <= 3; n++ {
		raw, err := os.ReadFile(pidFiles[n])
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(c.procs[n].cmd.Process.Pid) + "\n"; string(raw) != want {
			t.Fatalf("node %d's pid file holds %q, want %q", n, raw, want)
		}
	}
	ok(t, c.addrs[1], "", "topic", "create", "orders", "--partitions", "6", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	var lines strings.Builder
	for i := 1; i <= 600; i++ {
		fmt.Fprintf(&lines, "order-%d:paid\n", i)
	}
	ok(t, c.brokers(0), lines.String(), "produce", "orders", "-K", ":")
	for n := 1; n <= 3; n++ {
		for _, alarm := range []string{"unclean shutdown", "did not stop cleanly"} {
			if c.procs[n].contains(alarm) {
				t.Errorf("node %d of a brand-new cluster warns of an %q:\n%s", n, alarm, c.procs[n].logs.String())
			}
		}
	}

	var desc topicDescription
	decodeJSON(t, ok(t, c.brokers(0), "", "topic", "describe", "orders", "-o", "json").stdout, &desc)
	victim := int(desc.Partitions[0].Leader)
	if err := c.procs[victim].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	header := regexp.MustCompile(`topic orders: 6 partitions, (\d+) records`)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		r := ok(t, c.brokers(victim), "", "topic", "describe", "orders")
		if m := header.FindStringSubmatch(r.stdout); m != nil && m[1] != "600" {
			t.Fatalf("after node %d was killed, describe printed a total of %s records of 600:\n%s%s", victim, m[1], r.stdout, r.stderr)
		} else if m == nil && !strings.Contains(r.stdout, "records unknown") {
			t.Fatalf("describe printed neither a total nor \"records unknown\":\n%s", r.stdout)
		}
	}

	stopped := victim%3 + 1 // a live node
	if out, err := exec.Command("bash", "-c", "kill $(cat "+pidFiles[stopped]+")").CombinedOutput(); err != nil {
		t.Fatalf("kill $(cat n%d.pid): %v\n%s", stopped, err, out)
	}
	if err := c.procs[stopped].wait(t, time.Minute); err != nil {
		t.Fatalf("node %d, stopped by its pid file, exited with %v:\n%s", stopped, err, c.procs[stopped].logs.String())
	}
	if _, err := os.Stat(pidFiles[stopped]); !os.IsNotExist(err) {
		t.Fatalf("node %d's pid file is still there after a clean stop (%v)", stopped, err)
	}
	other := 6 - victim - stopped
	select {
	case err := <-c.procs[other].done:
		t.Fatalf("node %d exited too (%v)", other, err)
	default:
	}
}

// TestRemoveLiveVoterWarns: removing a voter that still serves is allowed
// (as in Kafka) but said plainly: the process keeps running until it is
// stopped.
func TestRemoveLiveVoterWarns(t *testing.T) {
	c := newProcClusterN(t, 1)
	r := runCLI(t, c.addrs[1], "", "cluster", "remove-voter", "--node-id", "1")
	if !strings.Contains(r.stderr, "warning: node 1 is still running") {
		t.Fatalf("remove-voter of a live node (exit %d) did not warn:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestClassicGroupSaysWhatItLacks: a classic group has no rebalance
// history, and an empty group nothing to preview; both are said in words,
// not shown as an empty table or "no members" alone.
func TestClassicGroupSaysWhatItLacks(t *testing.T) {
	addr := startBroker(t).Addr()
	ok(t, addr, "", "topic", "create", "clicks", "--partitions", "2")
	ok(t, addr, "a\nb\n", "produce", "clicks")
	ok(t, addr, "", "consume", "clicks", "--group", "classic-etl")
	r := ok(t, addr, "", "group", "describe", "classic-etl", "--history")
	if !strings.Contains(r.stdout, "no rebalance history") || !strings.Contains(r.stdout, "--group-protocol consumer") {
		t.Fatalf("group describe --history of a classic group:\n%s", r.stdout)
	}
	r = runCLI(t, addr, "", "group", "assign", "classic-etl", "--preview", "--add", "1")
	if r.code != exitError || !strings.Contains(r.stderr, "has no members to preview a change of: the preview starts from the live members' assignment") {
		t.Fatalf("group assign --preview of an empty group: exit %d\n%s", r.code, r.stderr)
	}
}
