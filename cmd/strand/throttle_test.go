package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestThrottledReassignment moves a partition holding STRAND_THROTTLE_MB
// (CI: 16) MiB to a new replica with `strand topic reassign --throttle`
// under an acks=all produce load on its leader, and checks:
//
//   - the throttle limits the copy: it takes at least (size − one
//     second's burst − one fetch) / rate — a lower bound;
//   - produce p99 during the throttled copy stays within 2× the idle
//     baseline measured just before on the same cluster;
//   - --status shows the adding replica, what it has copied and its
//     throttle; ListPartitionReassignments its adding replica;
//   - when the move completes, the controller has removed its entries
//     from the topic's throttled-replicas lists, and --wait the rates.
//
// The 1 GiB form of the issue: STRAND_THROTTLE_MB=1024 (see README).
func TestThrottledReassignment(t *testing.T) {
	mb := 16
	if v, err := strconv.Atoi(os.Getenv("STRAND_THROTTLE_MB")); err == nil && v > 0 {
		mb = v
	}
	size := int64(mb) << 20
	rate := min(size/5, 16<<20) // CI: about 5 s of copying; the long form at 16 MiB/s
	if v, err := strconv.ParseInt(os.Getenv("STRAND_THROTTLE_RATE"), 10, 64); err == nil && v > 0 {
		rate = v
	}
	c := newProcClusterN(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ok(t, c.addrs[1], "", "topic", "create", "bulk", "--replica-assignment", "1")
	ok(t, c.addrs[1], "", "topic", "create", "live", "--replica-assignment", "1:3")
	fillTopic(ctx, t, c.addrs[1], "bulk", size)

	lat, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1]), kgo.DefaultProduceTopic("live"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer lat.Close()
	produceLatencies(ctx, t, lat, 500*time.Millisecond, nil) // warm up: connections, metadata
	base := produceLatencies(ctx, t, lat, 4*time.Second, nil)

	type cliDone struct {
		r    cliResult
		took time.Duration
	}
	done := make(chan cliDone, 1)
	started := time.Now()
	go func() {
		r := runCLI(t, c.addrs[1], "", "topic", "reassign", "bulk", "--replica-assignment", "1:2",
			"--throttle", strconv.FormatInt(rate, 10), "--wait", "--timeout", "8m")
		done <- cliDone{r, time.Since(started)}
	}()
	adm := kadm.NewClient(c.nodeClient(t, 1))
	defer adm.Close()
	var status string
	checked := false
	under := produceLatencies(ctx, t, lat, 0, func() bool {
		select {
		case d := <-done:
			done <- d
			return true
		default:
		}
		if !checked && time.Since(started) > time.Second {
			l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"bulk": {0: {}}})
			if r, moving := l["bulk"][0]; err == nil && moving {
				if !slices.Equal(r.AddingReplicas, []int32{2}) || len(r.RemovingReplicas) != 0 {
					t.Errorf("ListPartitionReassignments: adding %v, removing %v; want adding [2], removing []", r.AddingReplicas, r.RemovingReplicas)
				}
				status = runCLI(t, c.addrs[1], "", "topic", "reassign", "bulk", "--status").stdout
				checked = true
			}
		}
		return false
	})
	d := <-done
	if d.r.code != 0 {
		t.Fatalf("strand topic reassign --throttle --wait: exit %d\n%s\n%s", d.r.code, d.r.stdout, d.r.stderr)
	}
	t.Logf("reassign: %s", strings.TrimSpace(d.r.stdout))
	t.Logf("--status during the copy:\n%s", status)
	if !checked {
		t.Fatalf("the move was over before ListPartitionReassignments showed it (%v)", d.took)
	}
	if want := fmt.Sprintf("%.1f MiB/s", float64(rate)/(1<<20)); !strings.Contains(status, want) || !strings.Contains(status, "PARTITION") {
		t.Errorf("--status does not show the throttle %s:\n%s", want, status)
	}

	// The throttle held the copy to its rate (a lower bound only).
	floor := time.Duration(float64(size-rate-1<<20) / float64(rate) * float64(time.Second))
	if d.took < floor {
		t.Errorf("%d MiB moved in %v at a throttle of %d B/s; it cannot take less than %v", mb, d.took, rate, floor)
	}
	bp, up := p99(base), p99(under)
	t.Logf("moved %d MiB at throttle %.1f MiB/s in %v (floor %v); produce p99 idle %v (%d samples), during the move %v (%d samples): ratio %.2f",
		mb, float64(rate)/(1<<20), d.took.Round(10*time.Millisecond), floor.Round(10*time.Millisecond), bp, len(base), up, len(under), float64(up)/float64(bp))
	if up > 2*bp {
		t.Errorf("produce p99 %v during the throttled move, more than twice the idle %v", up, bp)
	}

	// The move's throttle is gone: its list entries (the controller) and
	// the rates (--wait).
	rc, err := adm.DescribeTopicConfigs(ctx, "bulk")
	if err != nil || len(rc) != 1 {
		t.Fatalf("describe bulk: %v", err)
	}
	for _, name := range []string{leaderThrottledReplicas, followerThrottledReplicas} {
		if cfg := configNamed(rc[0], name); cfg != nil && cfg.Value != nil && *cfg.Value != "" {
			t.Errorf("after the move, bulk still has %s=%s", name, *cfg.Value)
		}
	}
	brc, err := adm.DescribeBrokerConfigs(ctx, 2)
	if err != nil || len(brc) != 1 {
		t.Fatalf("describe broker 2: %v", err)
	}
	if cfg := configNamed(brc[0], followerThrottledRate); cfg == nil || cfg.Source != 5 {
		t.Errorf("after --wait, broker 2's %s is still set: %+v", followerThrottledRate, cfg)
	}
}

// fillTopic writes size bytes of incompressible 64 KiB records to topic.
func fillTopic(ctx context.Context, t *testing.T, addr, topic string, size int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	val := make([]byte, 64<<10)
	errs := make(chan error, 1)
	for n := int64(0); n < size; n += int64(len(val)) {
		v := make([]byte, len(val))
		_, _ = rand.Read(v)
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("filling %s: %v", topic, err)
	default:
	}
}

// produceLatencies produces 1 KiB records one at a time, 100 a second,
// for d (or, d 0, until stop says so) and returns each one's latency.
func produceLatencies(ctx context.Context, t *testing.T, cl *kgo.Client, d time.Duration, stop func() bool) []time.Duration {
	t.Helper()
	val := make([]byte, 1024)
	var out []time.Duration
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(d)
	for i := 0; i < 1_000_000; i++ {
		if d > 0 && time.Now().After(end) || d == 0 && stop() {
			return out
		}
		start := time.Now()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		out = append(out, time.Since(start))
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	return out
}

func p99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(lat))
	return s[min(len(s)-1, len(s)*99/100)]
}
