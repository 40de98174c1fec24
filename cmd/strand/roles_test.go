package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newRolesCluster is three controller-only nodes (1–3, the quorum) and
// three broker-only nodes (4–6), with mutual TLS between them.
func newRolesCluster(t *testing.T) *procCluster {
	t.Helper()
	c := newCluster(6, []string{"--replica-lag-time-max", "3s"})
	c.secure(t)
	root := t.TempDir()
	var voters []string
	for n := 1; n <= 6; n++ {
		c.dirs[n] = filepath.Join(root, fmt.Sprint("n", n))
		c.addrs[n] = freeAddr(t)
		if n <= 3 {
			voters = append(voters, fmt.Sprintf("%d@%s", n, freeAddr(t)))
			c.own[n] = []string{"--roles", "controller"}
		} else {
			// A raft address that stays across restarts: the leader's
			// retries reach the restarted node there at once.
			c.own[n] = []string{"--roles", "broker", "--raft-addr", freeAddr(t)}
		}
	}
	c.quorum = strings.Join(voters, ",")
	c.start(t)
	return c
}

// quorumOf is the metadata quorum as the controller describes it: its
// leader, voters and observers.
func quorumOf(ctx context.Context, cl *kgo.Client) (leader int32, voters, observers []int32, err error) {
	resp, err := kmsg.NewPtrDescribeQuorumRequest().RequestWith(ctx, cl)
	if err == nil && (resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1) {
		err = fmt.Errorf("describe quorum: error code %d", resp.ErrorCode)
	}
	if err != nil {
		return -1, nil, nil, err
	}
	p := resp.Topics[0].Partitions[0]
	for _, v := range p.CurrentVoters {
		voters = append(voters, v.ReplicaID)
	}
	for _, v := range p.Observers {
		observers = append(observers, v.ReplicaID)
	}
	slices.Sort(voters)
	slices.Sort(observers)
	return p.LeaderID, voters, observers, nil
}

// rolesViolations checks, once, what roles promise: the quorum's voters
// are the controllers alone, and no partition of any topic (internal ones
// included) has a replica on a controller.
func rolesViolations(ctx context.Context, cl *kgo.Client) []string {
	var out []string
	if _, voters, _, err := quorumOf(ctx, cl); err == nil && !slices.Equal(voters, []int32{1, 2, 3}) {
		out = append(out, fmt.Sprintf("the quorum's voters are %v, want the controllers [1 2 3]", voters))
	}
	md, err := kadm.NewClient(cl).Metadata(ctx)
	if err != nil {
		return out
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if slices.ContainsFunc(p.Replicas, func(r int32) bool { return r <= 3 }) {
				out = append(out, fmt.Sprintf("%s-%d has replicas %v: on a controller", td.Topic, p.Partition, p.Replicas))
			}
		}
	}
	return out
}

// TestRolesControllersAndBrokers: 3 controllers and 3 brokers under an
// idempotent acks=all load (RF 3, min ISR 2) while each broker and then
// the controller leader is SIGKILLed and started again. No acknowledged
// record is lost or duplicated; throughout (checked every 300 ms and
// after every restart) the quorum's voters are the controllers alone and
// no partition has a replica on a controller; the brokers follow the
// quorum as observers; the controllers' data directories hold no
// partition; cluster info shows each node's roles.
func TestRolesControllersAndBrokers(t *testing.T) {
	c := newRolesCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, partitions = "roles", int32(3)
	ch, prod, stopLoad := c.startLoad(ctx, t, topic, 300)

	watch, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.brokers(0), ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	var mu sync.Mutex
	var violations []string
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			v := rolesViolations(watchCtx, watch)
			mu.Lock()
			violations = append(violations, v...)
			mu.Unlock()
			select {
			case <-watchCtx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()

	restart := func(n int) {
		at := time.Now()
		c.kill9(t, n)
		time.Sleep(500 * time.Millisecond)
		c.procs[n] = c.launch(t, n)
		c.procs[n].awaitServing(t)
		c.waitInSync(ctx, t, topic, 60*time.Second)
		if v := rolesViolations(ctx, watch); len(v) > 0 {
			t.Errorf("after restarting node %d: %v", n, v)
		}
		t.Logf("node %d killed and restarted: in sync again after %v", n, time.Since(at).Round(time.Millisecond))
	}
	for n := 4; n <= 6; n++ {
		restart(n)
	}
	leader, _, _, err := quorumOf(ctx, watch)
	if err != nil || leader < 1 || leader > 3 {
		t.Fatalf("controller leader %d, %v: want one of the controllers", leader, err)
	}
	restart(int(leader))
	if now, _, _, err := quorumOf(ctx, watch); err != nil || now == leader || now < 1 || now > 3 {
		t.Errorf("after killing controller %d the quorum's leader is %d (%v), want another controller", leader, now, err)
	}

	stopLoad()
	flush, cancelFlush := context.WithTimeout(ctx, time.Minute)
	_ = prod.Flush(flush)
	cancelFlush()
	prod.Close()
	c.waitInSync(ctx, t, topic, time.Minute)
	t.Log(ch.verify(t, finalLog(ctx, t, c.brokers(0), topic)))
	stopWatch()
	<-watched
	if len(violations) > 0 {
		t.Errorf("roles broken during the run (%d times), first: %s", len(violations), violations[0])
	}
	if _, voters, observers, err := quorumOf(ctx, watch); err != nil || !slices.Equal(voters, []int32{1, 2, 3}) || !slices.Equal(observers, []int32{4, 5, 6}) {
		t.Errorf("quorum at the end: voters %v, observers %v (%v); want [1 2 3] and [4 5 6]", voters, observers, err)
	}

	// A restarted node is fenced until a heartbeat finds it caught up
	// with its own registration, so the last one restarted may still be.
	var missing []string
	var info string
	settling := time.Now()
	for deadline := settling.Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		info, missing = ok(t, c.addrs[4], "", "cluster", "info").stdout, nil
		for n := 1; n <= 6; n++ {
			role := map[bool]string{true: "controller", false: "broker"}[n <= 3]
			line := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+%s\s+live\s+%s(,active)?\s+\d+$`, n, regexp.QuoteMeta(c.addrs[n]), role))
			if !line.MatchString(info) {
				missing = append(missing, fmt.Sprintf("no live %s line for node %d", role, n))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(missing) > 0 {
		t.Errorf("cluster info 30 s after the last restart: %v:\n%s", missing, info)
	}
	t.Logf("cluster info showed every node live %v after the load stopped", time.Since(settling).Round(time.Millisecond))
	for n := 1; n <= 3; n++ {
		entries, _ := os.ReadDir(c.dirs[n])
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), topic+"-") || strings.HasPrefix(e.Name(), "__") {
				t.Errorf("controller %d's data directory holds partition %s", n, e.Name())
			}
		}
	}
	for n := 1; n <= 6; n++ {
		c.procs[n].stop(t)
	}
	checkReplicasConverged(t, c.dirs[4:], topic, partitions)
}

// TestServeRolesRefused: serve refuses roles it cannot honour, at once
// and saying why — an unknown or empty role, a one-role node without a
// quorum (a controller-only single node would serve no data), a broker
// listed among the voters or started with --join, --raft-addr on a
// controller, and a data directory whose meta.properties records other
// roles than this start's.
func TestServeRolesRefused(t *testing.T) {
	t.Parallel()
	quorum := "1@" + freeAddr(t)
	kept := t.TempDir()
	if err := os.WriteFile(filepath.Join(kept, "meta.properties"), []byte("version=1\nnode.id=1\nprocess.roles=broker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown role", []string{"--roles", "voter"}, `unknown role "voter"`},
		{"empty role", []string{"--roles", "broker,"}, "an empty role"},
		{"controller alone", []string{"--roles", "controller"}, "--roles controller needs --controller-quorum"},
		{"broker alone", []string{"--roles", "broker"}, "--roles broker needs --controller-quorum"},
		{"broker with --join", []string{"--roles", "broker", "--join", "--controller-quorum", quorum, "--node-id", "2"}, "--join is for a controller"},
		{"broker in the quorum", []string{"--roles", "broker", "--controller-quorum", quorum, "--node-id", "1"}, "a broker-only node is not a voter"},
		{"raft address of a voter", []string{"--raft-addr", freeAddr(t), "--controller-quorum", quorum, "--node-id", "1"}, "--raft-addr is for a broker-only node"},
		{"roles changed", []string{"--data-dir", kept, "--controller-quorum", quorum, "--node-id", "1"}, "was node 1's with --roles broker, and this start has --roles broker,controller; a node keeps its roles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--console-listen", "", "--schema-registry-listen", ""}
			if !slices.Contains(tc.args, "--data-dir") {
				args = append(args, "--data-dir", t.TempDir())
			}
			r := runCLI(t, "", "", append(args, tc.args...)...)
			if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("strand serve %v: exit %d, stderr:\n%s\nwant a refusal with %q", tc.args, r.code, r.stderr, tc.want)
			}
		})
	}
}
