package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/share"
)

// shareWork is three franz-go share consumers of one group acknowledging
// every record of a topic on a cluster — accepting it, or what decide says
// — and what they saw: a value delivered again after its acceptance or
// rejection was confirmed (FlushAcks returned nil and no partition's
// acknowledgement failed) is an acknowledgement undone.
type shareWork struct {
	t          *testing.T
	topic      string
	decide     func(value string) kgo.AckStatus // nil: accept all
	mu         sync.Mutex
	deliveries map[string]int
	accepted   map[string]bool // accepted or rejected
	rejected   map[string]bool
	confirmed  map[string]bool
	// confirmedAt are the confirmed records by position (a redriven
	// value comes back as another record); acceptances counts each
	// value's confirmed acceptances.
	confirmedAt map[string]bool
	acceptances map[string]int
	// uncertain are accepted values whose acknowledgement failed on the
	// client (its answer lost with a killed node): it may or may not have
	// been applied, and the value may or may not come again.
	uncertain map[string]bool
	// everUncertain are the values whose acknowledgement failed on the
	// client at least once, confirmed later or not.
	everUncertain map[string]bool
	undone        int
	// brokers and group are for the diagnosis printed on a failure.
	brokers, group string
	// ackErrs counts, per partition, the acknowledgement errors the
	// clients saw (ShareAckCallback's and FlushAcks'); uncertainAt holds
	// each uncertain value's record and the acknowledgement it was in.
	ackErrs     map[int32]map[string]int
	uncertainAt map[string]uncertainAck
	wg          sync.WaitGroup
	clients     []*kgo.Client
}

func startShareWork(t *testing.T, ctx context.Context, brokers, group, topic string) *shareWork {
	t.Helper()
	return startShareWorkDeciding(t, ctx, brokers, group, topic, nil)
}

// startShareWorkDeciding is startShareWork acknowledging each record as
// decide says (a release is not an acknowledgement: the record comes
// again).
func startShareWorkDeciding(t *testing.T, ctx context.Context, brokers, group, topic string, decide func(string) kgo.AckStatus) *shareWork {
	t.Helper()
	w := &shareWork{t: t, topic: topic, decide: decide, deliveries: map[string]int{}, accepted: map[string]bool{}, rejected: map[string]bool{},
		confirmed: map[string]bool{}, confirmedAt: map[string]bool{}, acceptances: map[string]int{}, uncertain: map[string]bool{}, everUncertain: map[string]bool{},
		brokers: brokers, group: group, ackErrs: map[int32]map[string]int{}, uncertainAt: map[string]uncertainAck{}}
	t.Cleanup(w.close)
	for i := range 3 {
		var ackFailed sync.Map
		cl, err := kgo.NewClient(keptClientLog(t, fmt.Sprint(group, "-w", i)), kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(fmt.Sprint("w", i)), kgo.FetchMaxWait(200*time.Millisecond), kgo.ShareMaxRecords(50), kgo.RetryTimeout(time.Minute),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				for _, r := range rs {
					if r.Err != nil {
						ackFailed.Store(r.Partition, true)
						w.noteAckErr(r.Partition, r.Err)
					}
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		w.clients = append(w.clients, cl)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for poll := 0; ctx.Err() == nil; poll++ {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				var polled []*kgo.Record
				w.mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					v := string(r.Value)
					if w.confirmedAt[recordAt(r)] {
						w.undone++
						t.Errorf("%s delivered again (count %d) after its acceptance was confirmed", v, r.DeliveryCount())
					}
					w.deliveries[v]++
					polled = append(polled, r)
				})
				w.mu.Unlock()
				ackFailed.Clear()
				status := make([]kgo.AckStatus, len(polled))
				for i, r := range polled {
					status[i] = kgo.AckAccept
					if w.decide != nil {
						status[i] = w.decide(string(r.Value))
					}
					cl.MarkAcks(status[i], r)
				}
				flushErr := cl.FlushAcks(ctx)
				ok := flushErr == nil
				if flushErr != nil && len(polled) > 0 {
					w.noteAckErr(-1, flushErr)
				}
				w.mu.Lock()
				for i, r := range polled {
					v := string(r.Value)
					if status[i] == kgo.AckRelease {
						continue
					}
					w.accepted[v] = true
					if status[i] == kgo.AckReject {
						w.rejected[v] = true
					}
					if _, failed := ackFailed.Load(r.Partition); ok && !failed {
						w.confirmed[v], w.confirmedAt[recordAt(r)] = true, true
						if status[i] == kgo.AckAccept {
							w.acceptances[v]++
						}
						delete(w.uncertain, v)
						delete(w.uncertainAt, v)
					} else {
						w.uncertain[v], w.everUncertain[v] = true, true
						w.uncertainAt[v] = uncertainAck{r: r, consumer: i, poll: poll}
					}
				}
				w.mu.Unlock()
			}
		}()
	}
	return w
}

// noteAckErr counts an acknowledgement error a client saw for partition
// (-1: FlushAcks').
func (w *shareWork) noteAckErr(partition int32, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ackErrs[partition] == nil {
		w.ackErrs[partition] = map[string]int{}
	}
	w.ackErrs[partition][err.Error()]++
}

// diagnose describes, per partition, what the consumers saw — records
// delivered more than once, confirmed, uncertain (their offsets), the
// acknowledgement errors — and what the group's share-partitions say now
// (start offset and lag: an uncertain record below a share-partition with
// no lag was applied, its answer lost; lag is work the group still has).
func (w *shareWork) diagnose() string {
	var b strings.Builder
	w.mu.Lock()
	type part struct {
		delivered, again, confirmed int
		uncertain                   []int64
	}
	parts := map[int32]*part{}
	get := func(p int32) *part {
		if parts[p] == nil {
			parts[p] = &part{}
		}
		return parts[p]
	}
	for v, n := range w.deliveries {
		if !strings.HasPrefix(v, "job-") {
			continue
		}
		var i int
		fmt.Sscanf(v, "job-%d", &i)
		p := get(int32(i % 3)) // produceJobs' round robin over three partitions
		p.delivered++
		if n > 1 {
			p.again++
		}
		if w.confirmed[v] {
			p.confirmed++
		}
	}
	for _, u := range w.uncertainAt {
		p := get(u.r.Partition)
		p.uncertain = append(p.uncertain, u.r.Offset)
	}
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		p := parts[k]
		slices.Sort(p.uncertain)
		fmt.Fprintf(&b, "partition %d: %d jobs delivered (%d more than once), %d confirmed, %d uncertain at offsets %s; ack errors %v\n",
			k, p.delivered, p.again, p.confirmed, len(p.uncertain), offsetRanges(p.uncertain), w.ackErrs[k])
	}
	fmt.Fprintf(&b, "FlushAcks errors: %v\n", w.ackErrs[-1])
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(w.brokers, ",")...))
	if err != nil {
		return b.String() + err.Error()
	}
	defer cl.Close()
	ds, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, w.group)
	for err != nil && ctx.Err() == nil { // a killed node is still in the client's metadata for a moment
		time.Sleep(200 * time.Millisecond)
		ds, err = kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, w.group)
	}
	if err != nil {
		return b.String() + "share group offsets: " + err.Error()
	}
	d := ds[w.group]
	for _, ps := range d.Offsets {
		for _, k := range slices.Sorted(maps.Keys(ps)) {
			o := ps[k]
			fmt.Fprintf(&b, "share-partition %s-%d: start offset %d, lag %d, err %v\n", o.Topic, o.Partition, o.StartOffset, o.Lag, o.Err)
		}
	}
	return b.String() + fmt.Sprint("group error: ", d.Err)
}

// offsetRanges writes sorted offsets as runs ("3-7 9").
func offsetRanges(os []int64) string {
	var parts []string
	for i := 0; i < len(os); {
		j := i
		for j+1 < len(os) && os[j+1] == os[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(os[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", os[i], os[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, " ")
}

// uncertainAck is an uncertain record and the acknowledgement that failed
// on the client: the consumer's poll it was delivered in (each poll's
// acknowledgements are flushed before the next poll).
type uncertainAck struct {
	r              *kgo.Record
	consumer, poll int
}

// lostAcks returns, per consumer, how many of its polls' acknowledgements
// are still uncertain.
func (w *shareWork) lostAcks() map[int]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	polls := map[[2]int]bool{}
	for v, u := range w.uncertainAt {
		if strings.HasPrefix(v, "job-") {
			polls[[2]int{u.consumer, u.poll}] = true
		}
	}
	out := map[int]int{}
	for k := range polls {
		out[k[0]]++
	}
	return out
}

// lagging returns the group's share-partitions that still have lag (work
// the group has not finished: records not acknowledged, not archived), or
// why it could not tell.
func (w *shareWork) lagging(ctx context.Context) (string, bool) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(w.brokers, ",")...))
	if err != nil {
		return err.Error(), true
	}
	defer cl.Close()
	ds, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, w.group)
	if err != nil {
		return err.Error(), true
	}
	d := ds[w.group]
	if d.Err != nil {
		return d.Err.Error(), true
	}
	var lag []string
	for _, ps := range d.Offsets {
		for _, o := range ps {
			if o.Err != nil || o.Lag != 0 {
				lag = append(lag, fmt.Sprintf("%s-%d: lag %d, err %v", o.Topic, o.Partition, o.Lag, o.Err))
			}
		}
	}
	return strings.Join(lag, "; "), len(lag) > 0
}

// recordAt names a record by its position.
func recordAt(r *kgo.Record) string { return fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset) }

func (w *shareWork) close() {
	for _, cl := range w.clients {
		cl.Close()
	}
	w.clients = nil
	w.wg.Wait()
}

// count returns how many values of m start with prefix.
func (w *shareWork) count(m map[string]bool, prefix string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for v := range m {
		if strings.HasPrefix(v, prefix) {
			n++
		}
	}
	return n
}

// warm produces a warm-up record to every partition until each has been
// delivered: every share-partition has then been initialized (at the log
// end by the default share.auto.offset.reset=latest), so every record
// produced after it is the group's to deliver.
func (w *shareWork) warm(ctx context.Context, prod *kgo.Client, partitions int32) {
	w.t.Helper()
	for round := 0; ; round++ {
		done := true
		for p := range partitions {
			prefix := fmt.Sprintf("warm-%d-", p)
			if w.count(w.accepted, prefix) > 0 {
				continue
			}
			done = false
			r := &kgo.Record{Topic: w.topic, Partition: p, Value: fmt.Appendf(nil, "%s%d", prefix, round)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				w.t.Fatalf("warm-up produce: %v", err)
			}
		}
		if done {
			return
		}
		if ctx.Err() != nil {
			w.t.Fatal("the share consumers never received a warm-up record of every partition")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// produce writes values job-0 … job-(n-1), round-robin over the partitions.
func produceJobs(t *testing.T, ctx context.Context, prod *kgo.Client, topic string, partitions int32, n int) {
	t.Helper()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i) % partitions, Value: fmt.Appendf(nil, "job-%d", i)})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// await waits until every job is accepted and confirmed.
func (w *shareWork) await(ctx context.Context, n int) {
	w.t.Helper()
	for w.count(w.accepted, "job-") < n || w.count(w.confirmed, "job-") < n {
		if ctx.Err() != nil {
			w.t.Fatalf("%d of %d jobs accepted, %d confirmed\n%s", w.count(w.accepted, "job-"), n, w.count(w.confirmed, "job-"), w.diagnose())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitKilled waits, after a node was killed, until every job is accepted
// and each one is confirmed or uncertain: its acknowledgement failed on the
// client, the answer lost with the node. Kafka's contract leaves such an
// acknowledgement open (applied or not), and only a confirmed one must
// hold; one not applied comes back (its records are available again at the
// new leader) and is confirmed then. What is left uncertain must be what
// the node took with it: at most one acknowledgement per consumer (a
// consumer flushes a poll's acknowledgements before it polls again), and
// applied — the group's share-partitions end with no lag, nothing left
// acquired or available.
//
// How many records that one acknowledgement holds is not bounded by the
// consumers' ShareMaxRecords: in the batch-optimized acquire mode (KIP-1206,
// the default) a fetch takes whole log batches, and one produced batch of
// hundreds of records is one fetch and one acknowledgement.
func (w *shareWork) awaitKilled(ctx context.Context, n int) {
	w.t.Helper()
	settled := func() (bool, string) {
		if w.count(w.accepted, "job-") < n || w.count(w.confirmed, "job-")+w.count(w.uncertain, "job-") < n {
			return false, "not every job acknowledged"
		}
		for c, k := range w.lostAcks() {
			if k > 1 {
				return false, fmt.Sprintf("consumer %d has %d polls' acknowledgements uncertain", c, k)
			}
		}
		if w.count(w.uncertain, "job-") == 0 {
			return true, ""
		}
		lag, lagging := w.lagging(ctx)
		return !lagging, lag
	}
	for {
		ok, why := settled()
		if ok {
			return
		}
		if ctx.Err() != nil {
			w.t.Fatalf("%d of %d jobs accepted, %d confirmed, %d uncertain: %s\n%s", w.count(w.accepted, "job-"), n, w.count(w.confirmed, "job-"),
				w.count(w.uncertain, "job-"), why, w.diagnose())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createReplicated creates topic on all three nodes, once every node is a
// live broker (a node registers a moment after it serves).
func createReplicated(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, parts int32) {
	t.Helper()
	for {
		r, err := adm.CreateTopic(ctx, parts, 3, nil, topic)
		if err == nil && r.Err == nil {
			return
		}
		if ctx.Err() != nil || (r.Err != nil && !errors.Is(r.Err, kerr.InvalidReplicationFactor)) {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func manualProducer(t *testing.T, brokers string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestClusterShareGroups: three franz-go share consumers of one group on a
// three-node cluster share a topic of one partition (all three read it at
// once) and one of six partitions led by different nodes: every record is
// delivered once and accepted once. The share-partitions live on their
// leaders, membership on the group's coordinator and the state with the
// share coordinators of __share_group_state, often three different nodes.
func TestClusterShareGroups(t *testing.T) {
	c := newProcCluster(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.tailLogs(30))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := c.brokers(0)
	prod := manualProducer(t, brokers)
	adm := kadm.NewClient(prod)
	for _, tc := range []struct {
		topic string
		parts int32
	}{{"cq1", 1}, {"cq6", 6}} {
		createReplicated(t, ctx, adm, tc.topic, tc.parts)
		const total = 600
		start := time.Now()
		w := startShareWork(t, ctx, brokers, "workers-"+tc.topic, tc.topic)
		w.warm(ctx, prod, tc.parts)
		produceJobs(t, ctx, prod, tc.topic, tc.parts, total)
		w.await(ctx, total)
		t.Logf("%s: %d records accepted by 3 share consumers in %v (with the warm-up)", tc.topic, total, time.Since(start).Round(time.Millisecond))
		w.close()
		w.mu.Lock()
		for v, n := range w.deliveries {
			if strings.HasPrefix(v, "job-") && n != 1 {
				t.Errorf("%s: %s delivered %d times", tc.topic, v, n)
			}
		}
		w.mu.Unlock()
	}
}

// TestClusterShareNodeKilled: three share consumers accept records of a
// three-partition topic on a three-node cluster, and reject one in fifty
// into the group's dead-letter topic; mid-stream the leader of
// partition 0 (its share-partition's home) is SIGKILLed, or the leader of
// the __share_group_state partition holding that share-partition's state
// (its share coordinator). The survivors take over — the new partition
// leader reloads the state from the coordinator, a new coordinator replays
// the state partition — and no acknowledgement the clients saw succeed is
// undone: a record is never delivered again after its acceptance (or
// rejection) was confirmed, and every record is accepted or rejected. Each
// rejected record is in the dead-letter topic, and exactly once unless
// an answer to its rejection was lost with the node (then it may have been
// rejected, and written, twice: the dead letter is written before the
// state that archives the record, so a crash between them never loses one).
func TestClusterShareNodeKilled(t *testing.T) {
	for _, victim := range []string{"partition leader", "share coordinator"} {
		t.Run(strings.ReplaceAll(victim, " ", "-"), func(t *testing.T) {
			const parts, total = 3, 1500
			topic, group := "ck-"+victim[:5], "workers-"+victim[:5]
			c := newProcCluster(t)
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(c.tailLogs(30))
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			prod := manualProducer(t, c.brokers(0))
			adm := kadm.NewClient(prod)
			createReplicated(t, ctx, adm, topic, parts)
			// Locks of 15 s (Kafka's least, group.share.min.record.lock.duration.ms),
			// not 30: records whose acknowledgements a client dropped come back
			// when their locks expire — as when the group's coordinator died
			// with the node (membership is in memory: the members rejoin, and
			// franz-go drops the acknowledgements of its reset sessions).
			ok(t, c.brokers(0), "", "group", "config", group, "--config", "errors.deadletterqueue.topic.name="+topic+".dlq",
				"--config", "share.record.lock.duration.ms=15000")
			poison := func(v string) bool {
				var i int
				_, err := fmt.Sscanf(v, "job-%d", &i)
				return err == nil && i%50 == 0
			}
			w := startShareWorkDeciding(t, ctx, c.brokers(0), group, topic, func(v string) kgo.AckStatus {
				if poison(v) {
					return kgo.AckReject
				}
				return kgo.AckAccept
			})
			w.warm(ctx, prod, parts)
			produceJobs(t, ctx, prod, topic, parts, total)
			for w.count(w.confirmed, "job-") < total/3 {
				if ctx.Err() != nil {
					t.Fatal("no progress before the kill")
				}
				time.Sleep(5 * time.Millisecond)
			}
			node := victimNode(t, ctx, adm, victim, group, topic)
			if err := c.procs[node].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = c.procs[node].wait(t, 10*time.Second)
			atKill := w.count(w.confirmed, "job-")
			w.awaitKilled(ctx, total)
			// A confirmed record delivered again would come back at once:
			// the new leader holds no locks.
			time.Sleep(2 * time.Second)
			t.Logf("%s (node %d) SIGKILLed with %d of %d acceptances confirmed; all accepted after it, %d with an acknowledgement whose answer was lost",
				victim, node, atKill, total, w.count(w.uncertain, "job-"))
			t.Logf("%d jobs had an acknowledgement fail on the client at least once\n%s", w.count(w.everUncertain, "job-"), w.diagnose())
			dead := awaitDeadLetters(t, ctx, c.brokers(node), topic, total/50)
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.undone > 0 {
				t.Errorf("%d confirmed acceptances undone", w.undone)
			}
			copies := map[string]int{}
			for _, d := range dead {
				copies[d.Value]++
			}
			for i := 0; i < total; i += 50 {
				v := fmt.Sprint("job-", i)
				if n := copies[v]; n == 0 || (n > 1 && !w.everUncertain[v]) {
					t.Errorf("%s is in the dead-letter topic %d times (its rejection's answer lost: %t)", v, n, w.everUncertain[v])
				}
				delete(copies, v)
			}
			for v := range copies {
				t.Errorf("%s is in the dead-letter topic but was never rejected", v)
			}
			for v := range w.accepted {
				if poison(v) && !w.rejected[v] {
					t.Errorf("%s was accepted, not rejected", v)
				}
			}
		})
	}
}

// victimNode is the node leading topic's partition 0, or the leader of the
// __share_group_state partition holding group's state of it.
func victimNode(t *testing.T, ctx context.Context, adm *kadm.Client, victim, group, topic string) int {
	t.Helper()
	md, err := adm.Metadata(ctx, topic, share.StateTopic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	if victim == "partition leader" {
		return int(td.Partitions[0].Leader)
	}
	sd := md.Topics[share.StateTopic]
	if sd.Err != nil || len(sd.Partitions) == 0 {
		t.Fatalf("%s: %v", share.StateTopic, sd.Err)
	}
	k := share.StatePartitionFor(share.SPKey{Group: group, TopicID: td.ID, Partition: 0}, int32(len(sd.Partitions)))
	return int(sd.Partitions[k].Leader)
}

// clientLogs numbers the kept client logs: a test run with -count keeps
// each run's.
var clientLogs atomic.Int64

// keptClientLog logs a share consumer's client at debug level to a file
// in $STRAND_TEST_LOGS named after it, beside the nodes' logs (keptLog):
// its share fetches with their session epochs and partitions, its
// heartbeats and assignments. Without the variable it logs nothing.
func keptClientLog(t *testing.T, name string) kgo.Opt {
	t.Helper()
	dir := os.Getenv("STRAND_TEST_LOGS")
	if dir == "" {
		return kgo.WithLogger(nil)
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.kgo.log", strings.ReplaceAll(t.Name(), "/", "_"), name, clientLogs.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, nil))
}
