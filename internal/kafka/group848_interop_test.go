package kafka_test

// KIP-848 interop: franz-go consumers on the next-generation protocol
// (kgo.ServerSideBalancer) against a real broker on loopback, with the range
// and uniform server assignors: exactly-once consumption of a 12-partition
// topic through a member leaving and a broker restart, no partition owned by
// two members at any time, and the member-epoch checks of OffsetCommit.

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand"
)

// start848 runs a broker whose consumer groups heartbeat every 250 ms and
// expire members after 6 s (Kafka's 5 s and 45 s would only slow the test).
func start848(t *testing.T, dir, addr string) *strand.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: dir, Addr: addr, Logger: testLogger(), MetricsAddr: "127.0.0.1:0",
		GroupConsumerHeartbeatInterval: 250 * time.Millisecond, GroupConsumerSessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// broker848 is a start848 broker on a directory of its own, which a test
// may restart on the same address; Cleanup closes the current one.
type broker848 struct {
	t    *testing.T
	dir  string
	addr string
	b    *strand.Broker
}

func newBroker848(t *testing.T) *broker848 {
	h := &broker848{t: t, dir: t.TempDir()}
	h.b = start848(t, h.dir, "")
	h.addr = h.b.Addr()
	t.Cleanup(func() { h.b.Close() })
	return h
}

// restart closes the broker and starts it again on the same directory and
// address.
func (h *broker848) restart() {
	h.t.Helper()
	if err := h.b.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.b = start848(h.t, h.dir, h.addr)
}

// ownership records which member holds each partition, from the clients'
// own assign/revoke/lost callbacks, and reports a partition assigned to a
// member while another still holds it.
type ownership struct {
	t  *testing.T
	mu sync.Mutex
	by map[int32]string
}

func (o *ownership) assigned(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, list := range ps {
		for _, p := range list {
			if cur, ok := o.by[p]; ok && cur != member {
				o.t.Errorf("partition %d assigned to %s while %s holds it", p, member, cur)
			}
			o.by[p] = member
		}
	}
}

func (o *ownership) released(member string, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, list := range ps {
		for _, p := range list {
			if o.by[p] == member {
				delete(o.by, p)
			}
		}
	}
}

// start848Member is startMember (group_interop_test.go) on the KIP-848
// protocol: the balancer names the server assignor (range → "range",
// sticky → "uniform").
func start848Member(t *testing.T, ctx context.Context, addr, group, topic, name string, balancer kgo.GroupBalancer, tr *tracker, own *ownership) *member {
	t.Helper()
	assigned := make(chan struct{})
	var once sync.Once
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			own.assigned(name, ps)
			if len(ps) > 0 {
				once.Do(func() { close(assigned) })
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { own.released(name, ps) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { own.released(name, ps) }),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RetryTimeout(time.Minute),
	)
	if err != nil {
		t.Fatal(err)
	}
	return runMember(t, ctx, name, cl, tr, assigned)
}

// describe848 returns the group as ConsumerGroupDescribe reports it.
func describe848(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedConsumerGroup, error) {
	ds, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, err
	}
	d := ds[group]
	return d, d.Err
}

// settled reports whether the group is Stable with n members, each holding
// exactly its target, and every partition of the topic held once.
func settled(d kadm.DescribedConsumerGroup, n int, topic string) bool {
	return settledN(d, n, topic, groupPartitions)
}

// holdings maps member id → its partitions.
func holdings(d kadm.DescribedConsumerGroup, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for _, m := range d.Members {
		out[m.MemberID] = slices.Sorted(maps.Keys(m.Assignment[topic]))
	}
	return out
}

func TestFranzGo848Groups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		assignor string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"uniform", kgo.StickyBalancer()},
	} {
		t.Run(tc.assignor, func(t *testing.T) { testFranzGo848(t, tc.assignor, tc.balancer) })
	}
}

func testFranzGo848(t *testing.T, assignor string, balancer kgo.GroupBalancer) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	h := newBroker848(t)
	addr := h.addr
	topic, group := "orders-848-"+assignor, "billing-848-"+assignor
	adm := adminClient(t, addr)
	if r, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			rs = append(rs, groupRecord(topic, i))
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	tr := newTracker(t)
	own := &ownership{t: t, by: map[int32]string{}}
	var members []*member
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	for i := range 3 {
		members = append(members, start848Member(t, ctx, addr, group, topic, fmt.Sprintf("m%d", i), balancer, tr, own))
	}
	var d kadm.DescribedConsumerGroup
	await(t, ctx, "a stable group of 3", func() bool {
		d, err = describe848(ctx, adm, group)
		return err == nil && settled(d, 3, topic)
	})
	if d.AssignorName != assignor {
		t.Fatalf("assignor %q, want %q", d.AssignorName, assignor)
	}
	for id, ps := range holdings(d, topic) {
		if len(ps) != groupPartitions/3 {
			t.Fatalf("member %s holds %v of a 3-member group", id, ps)
		}
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if l, ok := listed[group]; err != nil || !ok || l.GroupType != "consumer" || l.State != "Stable" {
		t.Fatalf("list consumer groups: %v %+v", err, listed)
	}
	if classic, err := adm.ListGroupsByType(ctx, []string{"classic"}); err != nil || len(classic) != 0 {
		t.Fatalf("list classic groups: %v %+v", err, classic)
	}

	produce(0, 6000)
	if err := tr.waitFor(ctx, 6000); err != nil {
		t.Fatal(err)
	}

	// A stale epoch is refused; so is a member the group does not know.
	memberID, epoch := members[1].cl.GroupMetadata()
	commit := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, pcl)
		if err != nil {
			t.Fatalf("offset commit: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(memberID, epoch+5); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a future epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("not-a-member", epoch); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit by a stranger: %v", kerr.ErrorForCode(code))
	}

	// Everything m0 consumed is committed before it leaves (a member stopped
	// mid-commit would see its records delivered again: not what this
	// test is about).
	waitCommitted(t, ctx, tr, 6000)

	// m0 leaves: only its partitions move (uniform is sticky; range
	// recomputes ranges over the members sorted by id, so a survivor may
	// trade partitions too — counted, not asserted).
	before := holdings(d, topic)
	leaver, _ := members[0].cl.GroupMetadata()
	members[0].stop()
	members = members[1:]
	await(t, ctx, "a stable group of 2", func() bool {
		d, err = describe848(ctx, adm, group)
		return err == nil && settled(d, 2, topic)
	})
	after := holdings(d, topic)
	lost := 0
	for id, ps := range after {
		for _, p := range before[id] {
			if !slices.Contains(ps, p) {
				lost++
			}
		}
	}
	t.Logf("%s: member %s left; survivors gave up %d partitions (moved in all: %d)", assignor, leaver, lost, len(before[leaver])+lost)
	if assignor == "uniform" && lost != 0 {
		t.Fatalf("uniform: survivors lost %d partitions when a member left: before %v, after %v", lost, before, after)
	}

	// The group's rebalances are counted: 3 joins and a leave at least.
	body := scrape(t, ctx, "http://"+h.b.MetricsAddr()+"/metrics")
	if n := metricValue(body, `strand_group_rebalances_total{group="`+group+`"}`); n < 4 {
		t.Fatalf("strand_group_rebalances_total %v after 3 joins and a leave", n)
	}
	t.Logf("%s: partitions moved over the group's life so far: %v", assignor,
		metricValue(body, `strand_group_partitions_moved_total{group="`+group+`"}`))

	produce(6000, 12_000)
	if err := tr.waitFor(ctx, 12_000); err != nil {
		t.Fatal(err)
	}

	// A broker restart on the same address: the members carry on at their
	// epochs, the group is restored from __consumer_offsets.
	epochBefore := d.Epoch
	h.restart()
	adm = adminClient(t, addr)
	await(t, ctx, "the group back, stable, after a restart", func() bool {
		d, err = describe848(ctx, adm, group)
		return err == nil && settled(d, 2, topic)
	})
	if d.Epoch < epochBefore {
		t.Fatalf("group epoch %d after restart, %d before", d.Epoch, epochBefore)
	}
	t.Logf("%s: group epoch %d before the restart, %d after", assignor, epochBefore, d.Epoch)
	produce(12_000, 13_200)
	if err := tr.waitFor(ctx, 13_200); err != nil {
		t.Fatal(err)
	}

	dups := 0
	for _, n := range tr.seen[:13_200] {
		dups += max(n-1, 0)
	}
	t.Logf("%s: 13,200 records, %d delivered more than once", assignor, dups)
	if dups != 0 {
		t.Fatalf("%d records delivered more than once", dups)
	}

	// Everything is committed: the committed offsets are the end offsets,
	// and they survive the members leaving and another restart.
	waitCommitted(t, ctx, tr, 13_200)
	for _, m := range members {
		m.stop()
	}
	members = nil
	await(t, ctx, "an empty group", func() bool {
		d, err = describe848(ctx, adm, group)
		return err == nil && d.State == "Empty"
	})
	h.restart()
	adm = adminClient(t, addr)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil || committed.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, committed.Error())
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At != o.Offset {
			t.Errorf("partition %d: committed %+v, end %d", o.Partition, c, o.Offset)
		}
	})
	if total != 13_200 {
		t.Fatalf("end offsets sum to %d", total)
	}
	if d, err := describe848(ctx, adm, group); err != nil || d.State != "Empty" || d.Epoch < epochBefore {
		t.Fatalf("group after the last restart: %v %+v", err, d)
	}
}

func scrape(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of the sample named exactly series (name and
// labels), or -1.
func metricValue(body, series string) float64 {
	for line := range strings.Lines(body) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// waitCommitted waits until the members committed n records in all.
func waitCommitted(t *testing.T, ctx context.Context, tr *tracker, n int64) {
	t.Helper()
	await(t, ctx, fmt.Sprintf("%d records committed", n), func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		var sum int64
		for _, c := range tr.committed {
			sum += c
		}
		return sum == n
	})
}

// TestFranzGo848IncrementalRebalance is B-T4's movement figure: 10 members
// on 120 partitions under steady load, then an 11th joins, in three groups
// side by side in one run: KIP-848 with the uniform assignor, classic eager
// range and classic cooperative-sticky. For each it prints the partitions
// that changed owner, those revoked from members, and the consumption gap
// of the partitions that did not move (the longest time one of them went
// without a record consumed while the group rebalanced). KIP-848 must move
// at most 11, all to the newcomer, revoke nothing else, and keep its
// unmoved partitions flowing; eager range stops every partition.
func TestFranzGo848IncrementalRebalance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start848(t, t.TempDir(), "")
	defer b.Close()
	adm := adminClient(t, b.Addr())
	const parts = 120
	type run struct {
		name    string
		opts    []kgo.Opt
		mu      sync.Mutex
		revoked map[string]int        // member → partitions revoked since the count was reset
		seen    map[int32][]time.Time // partition → when each of its records was consumed
	}
	classic := []kgo.Opt{kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond)}
	runs := []*run{
		{name: "848-uniform", opts: []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}},
		{name: "classic-eager-range", opts: append([]kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}, classic...)},
		{name: "classic-cooperative-sticky", opts: append([]kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}, classic...)},
	}
	for _, r := range runs {
		if res, err := adm.CreateTopic(ctx, parts, 1, nil, "t-"+r.name); err != nil || res.Err != nil {
			t.Fatalf("create topic: %v %v", err, res.Err)
		}
		r.revoked = map[string]int{}
		r.seen = map[int32][]time.Time{}
	}
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
	}()

	// Steady load: a record to every partition of every topic each 100 ms.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	defer func() { stopLoad(); <-loadDone }()
	go func() {
		defer close(loadDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for loadCtx.Err() == nil {
			var rs []*kgo.Record
			for _, r := range runs {
				for p := range int32(parts) {
					rs = append(rs, &kgo.Record{Topic: "t-" + r.name, Partition: p, Value: []byte("x")})
				}
			}
			pcl.ProduceSync(loadCtx, rs...)
			select {
			case <-loadCtx.Done():
			case <-tick.C:
			}
		}
	}()

	join := func(r *run, name string) {
		opts := append([]kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.ClientID(name), kgo.ConsumerGroup("g-" + r.name),
			kgo.ConsumeTopics("t-" + r.name), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				r.mu.Lock()
				defer r.mu.Unlock()
				for _, l := range ps {
					r.revoked[name] += len(l)
				}
			})}, r.opts...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				now := time.Now()
				r.mu.Lock()
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					if len(p.Records) > 0 {
						r.seen[p.Partition] = append(r.seen[p.Partition], now)
					}
				})
				r.mu.Unlock()
			}
		}()
	}
	// owners returns partition → member (client id) once the group is
	// settled with n members, each holding parts/n or parts/n+1.
	owners := func(r *run, n int) map[int32]string {
		var out map[int32]string
		await(t, ctx, fmt.Sprintf("%s settled with %d members", r.name, n), func() bool {
			out = map[int32]string{}
			if strings.HasPrefix(r.name, "848") {
				d, err := describe848(ctx, adm, "g-"+r.name)
				if err != nil || !settledN(d, n, "t-"+r.name, parts) {
					return false
				}
				for _, m := range d.Members {
					for p := range m.Assignment["t-"+r.name] {
						out[p] = m.ClientID
					}
				}
			} else {
				ds, err := adm.DescribeGroups(ctx, "g-"+r.name)
				d := ds["g-"+r.name]
				if err != nil || d.Err != nil || d.State != "Stable" || len(d.Members) != n {
					return false
				}
				for _, m := range d.Members {
					a, ok := m.Assigned.AsConsumer()
					if !ok {
						return false
					}
					for _, tp := range a.Topics {
						for _, p := range tp.Partitions {
							out[p] = m.ClientID
						}
					}
				}
			}
			return len(out) == parts
		})
		return out
	}
	for _, r := range runs {
		for i := range 10 {
			join(r, fmt.Sprintf("m%02d", i))
		}
	}
	before := map[string]map[int32]string{}
	for _, r := range runs {
		before[r.name] = owners(r, 10)
	}
	// Every partition flowing before the newcomer comes.
	for _, r := range runs {
		await(t, ctx, r.name+" consuming every partition", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			clear(r.revoked)
			for p := range int32(parts) {
				if s := r.seen[p]; len(s) == 0 || time.Since(s[len(s)-1]) > time.Second {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(2 * time.Second) // the steady state the baseline gap is measured over
	start := time.Now()
	for _, r := range runs {
		join(r, "m10")
	}
	type figures struct {
		moved, toNewcomer, revoked int
		gap, baseline              time.Duration
		settle                     time.Duration
	}
	got := map[string]figures{}
	for _, r := range runs {
		after := owners(r, 11)
		var f figures
		f.settle = time.Since(start)
		for p, was := range before[r.name] {
			if after[p] != was {
				f.moved++
				if after[p] == "m10" {
					f.toNewcomer++
				}
			}
		}
		// The members' callbacks run as they reconcile: wait for the
		// revocations that moved partitions imply.
		await(t, ctx, r.name+" revocations reported", func() bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			n := 0
			for _, c := range r.revoked {
				n += c
			}
			return n >= f.moved
		})
		// The gap window closes a second after the group settled; an
		// unmoved partition's gap is the longest stretch in the window
		// between two of its consumed records (or the window's edge).
		time.Sleep(time.Until(start.Add(f.settle + time.Second)))
		end := time.Now()
		r.mu.Lock()
		for _, c := range r.revoked {
			f.revoked += c
		}
		for p := range int32(parts) {
			// Before the join, every partition's own steady-state gap.
			f.baseline = max(f.baseline, longestGap(r.seen[p], start.Add(-2*time.Second), start))
			if before[r.name][p] == after[p] {
				f.gap = max(f.gap, longestGap(r.seen[p], start, end))
			}
		}
		r.mu.Unlock()
		got[r.name] = f
	}
	t.Logf("10 → 11 members on %d partitions, a record per partition every 100 ms, same run:", parts)
	t.Logf("%-28s %6s %12s %8s %22s %16s %8s", "GROUP", "MOVED", "TO NEWCOMER", "REVOKED", "UNMOVED: LONGEST GAP",
		"GAP BEFORE JOIN", "SETTLED")
	for _, r := range runs {
		f := got[r.name]
		t.Logf("%-28s %6d %12d %8d %22v %16v %8v", r.name, f.moved, f.toNewcomer, f.revoked,
			f.gap.Round(time.Millisecond), f.baseline.Round(time.Millisecond), f.settle.Round(time.Millisecond))
	}
	if f := got["848-uniform"]; f.moved > 11 || f.moved != f.toNewcomer || f.revoked != f.moved {
		t.Fatalf("848-uniform: moved %d (to the newcomer %d), revoked %d: want ≤ 11, all to the newcomer, none revoked needlessly",
			f.moved, f.toNewcomer, f.revoked)
	}
	if f := got["classic-eager-range"]; f.revoked != 10*parts/10 {
		t.Fatalf("classic eager range revoked %d, want every partition (%d)", f.revoked, parts)
	}
}

// longestGap is the longest stretch within [from, to] between two
// consecutive times of seen (sorted), the window's edges counting as the
// last time before from and to itself.
func longestGap(seen []time.Time, from, to time.Time) time.Duration {
	var gap time.Duration
	last := from
	for _, at := range seen {
		if at.Before(from) {
			last = at
			continue
		}
		if at.After(to) {
			break
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return max(gap, to.Sub(last))
}

// settledN is settled for a topic of parts partitions: n members, each
// holding its target.
func settledN(d kadm.DescribedConsumerGroup, n int, topic string, parts int) bool {
	if d.State != "Stable" || len(d.Members) != n {
		return false
	}
	held := 0
	for _, m := range d.Members {
		if !maps.EqualFunc(m.Assignment, m.TargetAssignment, func(a, b map[int32]struct{}) bool { return maps.Equal(a, b) }) {
			return false
		}
		held += len(m.Assignment[topic])
	}
	return held == parts
}

// TestFranzGo848StaticMember: a static member (group.instance.id) that
// closes leaves temporarily (epoch -2) and keeps its partitions reserved; a
// new client with the same instance id takes them back without the other
// member's assignment changing.
func TestFranzGo848StaticMember(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start848(t, t.TempDir(), "")
	defer b.Close()
	adm := adminClient(t, b.Addr())
	if res, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, "static"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	start := func(instance string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("g-static"), kgo.ConsumeTopics("static"),
			kgo.InstanceID(instance), kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		return cl
	}
	a, bcl := start("a"), start("b")
	defer func() { a.Close() }()
	defer bcl.Close()
	byInstance := func(d kadm.DescribedConsumerGroup) map[string][]int32 {
		out := map[string][]int32{}
		for _, m := range d.Members {
			if m.InstanceID != nil {
				out[*m.InstanceID] = slices.Sorted(maps.Keys(m.Assignment["static"]))
			}
		}
		return out
	}
	var d kadm.DescribedConsumerGroup
	var err error
	await(t, ctx, "two static members settled", func() bool {
		d, err = describe848(ctx, adm, "g-static")
		return err == nil && settled(d, 2, "static")
	})
	before := byInstance(d)
	epoch := d.Epoch
	oldID, _ := a.GroupMetadata()

	// franz-go v1.22.3 closes a static member with a -2 heartbeat that
	// lacks the instance id, which Kafka (and Strand) refuse with
	// INVALID_REQUEST ("InstanceId can't be null."): the member would stay
	// until its session ends. So the test closes the client, then sends
	// the temporary leave a Kafka client sends, with the instance id.
	a.Close()
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	instance := "a"
	leave.Group, leave.MemberID, leave.MemberEpoch, leave.InstanceID = "g-static", oldID, -2, &instance
	raw, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := leave.RequestWith(ctx, raw)
	if err != nil || resp.ErrorCode != 0 || resp.MemberEpoch != -2 {
		t.Fatalf("static leave: %v %+v", err, resp)
	}
	d, err = describe848(ctx, adm, "g-static")
	if err != nil || len(d.Members) != 2 {
		t.Fatalf("after the static leave: %v %+v", err, d)
	}
	for _, m := range d.Members {
		if m.MemberID == oldID && m.MemberEpoch != -2 {
			t.Fatalf("a after its static leave: %+v", m)
		}
	}
	if d.Epoch != epoch {
		t.Fatalf("a temporary leave bumped the group epoch %d → %d", epoch, d.Epoch)
	}
	a = start("a")
	await(t, ctx, "a back", func() bool {
		d, err = describe848(ctx, adm, "g-static")
		newID, _ := a.GroupMetadata()
		return err == nil && settled(d, 2, "static") && newID != "" && newID != oldID
	})
	after := byInstance(d)
	if !slices.Equal(before["a"], after["a"]) || !slices.Equal(before["b"], after["b"]) {
		t.Fatalf("static rejoin changed the assignment: before %v, after %v", before, after)
	}
	t.Logf("static member a rejoined with a new member id and kept %v; b kept %v", after["a"], after["b"])
}

// TestFranzGo848Regex: a regex subscription is resolved by the broker
// (franz-go sends SubscribedTopicRegex), including a topic created after
// the member joined (noticed at the engine's metadata refresh).
func TestFranzGo848Regex(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := start848(t, t.TempDir(), "")
	defer b.Close()
	adm := adminClient(t, b.Addr())
	for _, topic := range []string{"rx-a", "rx-b", "other"} {
		if res, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil || res.Err != nil {
			t.Fatalf("create topic: %v %v", err, res.Err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("g-rx"), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	go func() {
		for ctx.Err() == nil && !cl.PollFetches(ctx).IsClientClosed() {
		}
	}()
	topics := func(want ...string) {
		t.Helper()
		await(t, ctx, fmt.Sprintf("assigned %v", want), func() bool {
			d, err := describe848(ctx, adm, "g-rx")
			if err != nil || len(d.Members) != 1 {
				return false
			}
			m := d.Members[0]
			got := slices.Sorted(maps.Keys(m.Assignment))
			return slices.Equal(got, want) && m.SubscribedTopicRegex != nil
		})
	}
	topics("rx-a", "rx-b")
	if res, err := adm.CreateTopic(ctx, 2, 1, nil, "rx-c"); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	topics("rx-a", "rx-b", "rx-c")
}

// TestBroker848RestartMidReconciliation is B-T6 with a broker restart: two
// groups are restarted while a member still has partitions to revoke.
// After the restart no partition has two owners; in one group the member's
// revocation then completes the reconciliation, in the other the member
// stays silent and its rebalance timeout (restarted on load) fences it, so
// the other member gets every partition.
func TestBroker848RestartMidReconciliation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	h := newBroker848(t)
	addr := h.addr
	adm := adminClient(t, addr)
	for _, topic := range []string{"t1", "t2"} {
		if res, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil || res.Err != nil {
			t.Fatalf("create topic: %v %v", err, res.Err)
		}
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ids := map[string][16]byte{}
	for _, topic := range []string{"t1", "t2"} {
		md, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		ids[topic] = md[topic].ID
	}
	beat := func(group, member string, epoch int32, topic string, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, member, epoch, -1
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 2000, []string{topic}
		}
		if owned != nil {
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			if len(owned) > 0 {
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: ids[topic], Partitions: owned})
			}
		}
		resp, err := req.RequestWith(ctx, raw)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %s/%s@%d: %v %+v", group, member, epoch, err, resp)
		}
		return resp
	}
	held := func(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
		if r.Assignment == nil || len(r.Assignment.Topics) == 0 {
			return nil
		}
		return r.Assignment.Topics[0].Partitions
	}
	// In both groups: a holds everything, b joins, a is told to revoke 3.
	kept := map[string][]int32{}
	for _, g := range []struct{ group, topic string }{{"g-ack", "t1"}, {"g-silent", "t2"}} {
		beat(g.group, "a", 0, g.topic, []int32{})
		beat(g.group, "b", 0, g.topic, []int32{})
		r := beat(g.group, "a", 1, g.topic, []int32{0, 1, 2, 3, 4, 5})
		if r.MemberEpoch != 1 || len(held(r)) != 3 {
			t.Fatalf("%s: a told to revoke: %+v", g.group, r)
		}
		kept[g.group] = held(r)
	}
	restart := func() {
		h.restart()
		// Fresh clients: kgo does not retry a heartbeat on a connection
		// the restart cut.
		adm = adminClient(t, addr)
		if raw, err = kgo.NewClient(kgo.SeedBrokers(addr)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(raw.Close)
	}
	restart()
	exclusive := func(group string) kadm.DescribedConsumerGroup {
		t.Helper()
		d, err := describe848(ctx, adm, group)
		if err != nil {
			t.Fatalf("describe %s: %v", group, err)
		}
		seen := map[int32]string{}
		for _, m := range d.Members {
			for _, ps := range m.Assignment {
				for p := range ps {
					if other, dup := seen[p]; dup {
						t.Fatalf("%s: partition %d held by %s and %s", group, p, other, m.MemberID)
					}
					seen[p] = m.MemberID
				}
			}
		}
		return d
	}
	for _, group := range []string{"g-ack", "g-silent"} {
		if d := exclusive(group); d.State != "Reconciling" || len(d.Members) != 2 {
			t.Fatalf("%s after the restart: %+v", group, d)
		}
	}

	// g-ack: a revokes, b gets the three partitions, the group is Stable.
	if r := beat("g-ack", "a", 1, "t1", kept["g-ack"]); r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", r)
	}
	if r := beat("g-ack", "b", 2, "t1", []int32{}); len(held(r)) != 3 {
		t.Fatalf("b after a revoked: %+v", r)
	}
	if d := exclusive("g-ack"); d.State != "Stable" {
		t.Fatalf("g-ack: %+v", d)
	}

	// g-silent: a never answers; its rebalance timeout (2 s, restarted on
	// load) fences it while b keeps heartbeating, and b gets all six.
	var mine []int32
	epoch := int32(2)
	await(t, ctx, "b holding all of t2", func() bool {
		r := beat("g-silent", "b", epoch, "t2", mine)
		epoch = r.MemberEpoch
		if r.Assignment != nil {
			mine = held(r)
		}
		time.Sleep(200 * time.Millisecond)
		return len(mine) == 6
	})
	if d := exclusive("g-silent"); d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("g-silent: %+v", d)
	}
}
