package kafka_test

// Consumer-group interop: franz-go's group consumer with the range,
// roundrobin and cooperative-sticky balancers, and sarama's ConsumerGroup,
// against a real broker on loopback, through membership churn and a broker
// restart.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand"
)

const (
	groupRecords    = 30_000
	groupPartitions = 12
	groupKeys       = 500
)

// startGroups runs a broker whose first rebalance waits only briefly for
// more members (Kafka's 3s default would only slow the tests down).
func startGroups(t *testing.T, dir string) *strand.Broker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := strand.Start(ctx, strand.Config{Dir: dir, Logger: testLogger(), GroupInitialRebalanceDelay: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func adminClient(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// groupRecord i has key "key-<i mod 500>" and value "<i>:<seq>", seq being
// its place among its key's records (the order a consumer must see them in).
func groupRecord(topic string, i int) *kgo.Record {
	return &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", i%groupKeys), Value: fmt.Appendf(nil, "%d:%d", i, i/groupKeys)}
}

func parseGroupValue(t *testing.T, v []byte) (idx, seq int) {
	a, b, ok := strings.Cut(string(v), ":")
	idx, err1 := strconv.Atoi(a)
	seq, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		t.Errorf("bad record value %q", v)
	}
	return idx, seq
}

// tracker checks what group members consume.
type tracker struct {
	t  *testing.T
	mu sync.Mutex
	// committed is each partition's offset as last committed successfully.
	committed map[int32]int64
	seen      []int // deliveries per record
	distinct  int
	// last is each member's last sequence number per key.
	last     map[string]map[string]int
	progress chan struct{} // closed and replaced on every new record
}

func newTracker(t *testing.T) *tracker {
	return &tracker{t: t, committed: map[int32]int64{}, seen: make([]int, groupRecords),
		last: map[string]map[string]int{}, progress: make(chan struct{})}
}

func (tr *tracker) consume(member string, r *kgo.Record) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	idx, seq := parseGroupValue(tr.t, r.Value)
	if idx < 0 || idx >= groupRecords || string(r.Key) != fmt.Sprintf("key-%d", idx%groupKeys) {
		tr.t.Errorf("unexpected record %q/%q", r.Key, r.Value)
		return
	}
	if c, ok := tr.committed[r.Partition]; ok && r.Offset < c {
		tr.t.Errorf("%s: record %d (partition %d offset %d) consumed again after offset %d was committed",
			member, idx, r.Partition, r.Offset, c)
	}
	redelivery := tr.seen[idx] > 0
	last := tr.last[member]
	if last == nil {
		last = map[string]int{}
		tr.last[member] = last
	}
	key := string(r.Key)
	if prev, ok := last[key]; ok && seq <= prev && !redelivery {
		tr.t.Errorf("%s: key %s: sequence %d after %d", member, key, seq, prev)
	}
	// A redelivery restarts from a committed offset and goes on in order.
	last[key] = seq
	if tr.seen[idx] == 0 {
		tr.distinct++
		close(tr.progress)
		tr.progress = make(chan struct{})
	}
	tr.seen[idx]++
}

func (tr *tracker) commit(recs []*kgo.Record) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, r := range recs {
		tr.committed[r.Partition] = max(tr.committed[r.Partition], r.Offset+1)
	}
}

// waitFor blocks until at least n distinct records were consumed.
func (tr *tracker) waitFor(ctx context.Context, n int) error {
	for {
		tr.mu.Lock()
		d, ch := tr.distinct, tr.progress
		tr.mu.Unlock()
		if d >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d records consumed: %w", d, n, ctx.Err())
		}
	}
}

// member is one kgo group consumer that commits what each poll returned
// before it lets a rebalance happen (BlockRebalanceOnPoll), so no partition
// moves with consumed but uncommitted records.
type member struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	// assigned is closed when the member is first assigned partitions.
	assigned chan struct{}
}

func startMember(t *testing.T, ctx context.Context, addr, group, topic, name string, balancer kgo.GroupBalancer, tr *tracker) *member {
	t.Helper()
	assigned := make(chan struct{})
	var once sync.Once
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
			if len(ps) > 0 {
				once.Do(func() { close(assigned) })
			}
		}),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(200*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	return runMember(t, ctx, name, cl, tr, assigned)
}

// runMember polls cl until ctx ends or the client closes: each poll's
// records go to tr and are committed before the member lets a rebalance
// happen.
func runMember(t *testing.T, ctx context.Context, name string, cl *kgo.Client, tr *tracker, assigned chan struct{}) *member {
	ctx, cancel := context.WithCancel(ctx)
	m := &member{name: name, cl: cl, cancel: cancel, done: make(chan struct{}), assigned: assigned}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollRecords(ctx, 2000)
			if fs.IsClientClosed() || ctx.Err() != nil {
				cl.AllowRebalance()
				return
			}
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s: fetch %s-%d: %v", name, topic, p, err)
				}
			})
			recs := fs.Records()
			for _, r := range recs {
				tr.consume(name, r)
			}
			if len(recs) > 0 {
				if err := cl.CommitRecords(ctx, recs...); err == nil {
					tr.commit(recs)
				} else {
					t.Logf("%s: commit failed (the records may be delivered again): %v", name, err)
				}
			}
			cl.AllowRebalance()
		}
	}()
	return m
}

// stop ends the poll loop and closes the client, which leaves the group.
func (m *member) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

func TestFranzGoGroups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) { testFranzGoGroup(t, tc.balancer) })
	}
}

func testFranzGoGroup(t *testing.T, balancer kgo.GroupBalancer) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	b := startGroups(t, dir)
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	topic, group := "orders-"+balancer.ProtocolName(), "billing-"+balancer.ProtocolName()
	adm := adminClient(t, b.Addr())
	if r, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}

	tr := newTracker(t)
	members := []*member{}
	for i := range 3 {
		members = append(members, startMember(t, ctx, b.Addr(), group, topic, fmt.Sprintf("m%d", i), balancer, tr))
	}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()

	// Produce while the group consumes, in three phases, so that records
	// keep arriving through the churn: the first 12,000 to three members;
	// then one member leaves and 9,000 more arrive; then a new member
	// joins and the last 9,000 arrive.
	phases := []int{12_000, 21_000, groupRecords}
	next := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			produced <- err
			return
		}
		defer pcl.Close()
		var (
			mu    sync.Mutex
			first error
		)
		from := 0
		for k, to := range phases {
			if k > 0 {
				select {
				case <-next:
				case <-ctx.Done():
					produced <- ctx.Err()
					return
				}
			}
			for i := from; i < to; i++ {
				pcl.Produce(ctx, groupRecord(topic, i), func(_ *kgo.Record, err error) {
					if err != nil {
						mu.Lock()
						first = cmpErr(first, err)
						mu.Unlock()
					}
				})
			}
			from = to
		}
		err = pcl.Flush(ctx)
		mu.Lock()
		defer mu.Unlock()
		produced <- cmpErr(first, err)
	}()

	advance := func() {
		select {
		case next <- struct{}{}:
		case err := <-produced:
			t.Fatalf("produce: %v", err)
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}

	// Churn: one member leaves mid-stream, another joins.
	if err := tr.waitFor(ctx, 10_000); err != nil {
		t.Fatal(err)
	}
	members[0].stop()
	members = members[1:]
	advance()
	if err := tr.waitFor(ctx, 18_000); err != nil {
		t.Fatal(err)
	}
	m3 := startMember(t, ctx, b.Addr(), group, topic, "m3", balancer, tr)
	members = append(members, m3)
	// The last records arrive once the new member has partitions, so that
	// it consumes some of them.
	select {
	case <-m3.assigned:
	case <-ctx.Done():
		t.Fatal("m3 was never assigned partitions")
	}
	advance()

	if err := <-produced; err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := tr.waitFor(ctx, groupRecords); err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, n := range tr.seen {
		dups += n - 1
	}
	t.Logf("%s: %d records, %d delivered more than once (before a commit)", balancer.ProtocolName(), groupRecords, dups)
	for _, m := range []string{"m0", "m1", "m2", "m3"} {
		if tr.last[m] == nil {
			t.Errorf("member %s consumed nothing", m)
		}
	}

	// Everything consumed is committed: lag drains to 0, the group is Stable
	// with its three members, and it is listed.
	var lag kadm.DescribedGroupLags
	await(t, ctx, "lag 0 and a stable group of 3", func() bool {
		var err error
		lag, err = adm.Lag(ctx, group)
		if err != nil {
			return false
		}
		l := lag[group]
		return l.Error() == nil && l.Lag.Total() == 0 && l.State == "Stable" && len(l.Members) == 3
	})
	if n := len(lag[group].Lag.Sorted()); n != groupPartitions {
		t.Fatalf("lag lists %d partitions", n)
	}
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil || described[group].Err != nil || described[group].Protocol != balancer.ProtocolName() {
		t.Fatalf("describe: %v %+v", err, described[group])
	}
	listed, err := adm.ListGroups(ctx)
	if l, ok := listed[group]; err != nil || !ok || l.ProtocolType != "consumer" || l.State != "Stable" {
		t.Fatalf("list groups: %v %+v", err, listed)
	}

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
	if total != groupRecords {
		t.Fatalf("end offsets sum to %d", total)
	}

	// Committed offsets survive a broker restart.
	for _, m := range members {
		m.stop()
	}
	members = nil
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	b = startGroups(t, dir)
	defer b.Close()
	adm = adminClient(t, b.Addr())
	again, err := adm.FetchOffsets(ctx, group)
	if err != nil || again.Error() != nil {
		t.Fatalf("fetch offsets after restart: %v %v", err, again.Error())
	}
	committed.Each(func(o kadm.OffsetResponse) {
		if a, ok := again.Lookup(o.Topic, o.Partition); !ok || a.At != o.At || a.LeaderEpoch != o.LeaderEpoch {
			t.Errorf("%s-%d after restart: %+v, before %+v", o.Topic, o.Partition, a, o)
		}
	})
	if len(again.Offsets().Sorted()) != groupPartitions {
		t.Fatalf("%d offsets after restart", len(again.Offsets().Sorted()))
	}
	lag, err = adm.Lag(ctx, group)
	if err != nil || lag[group].Lag.Total() != 0 || lag[group].State != "Empty" {
		t.Fatalf("lag after restart: %v %+v", err, lag[group])
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// await polls cond until it holds or ctx ends. It is for conditions only
// observable by asking the broker (lag, group state).
func await(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// saramaHandler records every message and marks it for commit.
type saramaHandler struct {
	mu       sync.Mutex
	seen     map[string]bool
	n        int
	progress chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		h.mu.Lock()
		k := fmt.Sprintf("%d/%d", msg.Partition, msg.Offset)
		if !h.seen[k] {
			h.seen[k] = true
			close(h.progress)
			h.progress = make(chan struct{})
		}
		h.mu.Unlock()
		s.MarkMessage(msg, "")
	}
	return nil
}

func (h *saramaHandler) waitFor(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		d, ch := len(h.seen), h.progress
		h.mu.Unlock()
		if d >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages consumed: %w", d, n, ctx.Err())
		}
	}
}

// TestSaramaConsumerGroup: two sarama group members (range) consume a topic
// to the end and commit; the committed offsets are the end offsets.
func TestSaramaConsumerGroup(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startGroups(t, t.TempDir())
	defer b.Close()
	const topic, group, n = "sarama-group", "sarama-consumers", 6000
	adm := adminClient(t, b.Addr())
	if r, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = groupRecord(topic, i)
	}
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pcl.Close()

	cfg := saramaConfig(sarama.V2_1_0_0)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	h := &saramaHandler{seen: map[string]bool{}, progress: make(chan struct{})}
	var wg sync.WaitGroup
	cctx, stop := context.WithCancel(ctx)
	var groups []sarama.ConsumerGroup
	for range 2 {
		cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, group, cfg)
		if err != nil {
			t.Fatal(err)
		}
		groups = append(groups, cg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				if err := cg.Consume(cctx, []string{topic}, h); err != nil && cctx.Err() == nil {
					t.Errorf("consume: %v", err)
					return
				}
			}
		}()
		go func() {
			for err := range cg.Errors() {
				t.Logf("sarama group error: %v", err)
			}
		}()
	}
	waitErr := h.waitFor(ctx, n)
	stop()
	wg.Wait()
	for _, cg := range groups {
		if err := cg.Close(); err != nil { // commits marked offsets
			t.Error(err)
		}
	}
	if waitErr != nil {
		t.Fatal(waitErr)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil || committed.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, committed.Error())
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At != o.Offset {
			t.Errorf("partition %d: committed %+v, end %d", o.Partition, c, o.Offset)
		}
	})
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil || described[group].State != "Empty" {
		t.Fatalf("describe after close: %v %+v", err, described[group])
	}
}

// TestFranzGoReplayBySeek is the seed's "replay = seek" with a real
// consumer: a group consumes a topic to the end and commits (lag 0); with
// the group empty, its offsets are moved back to the start (what "strand
// group seek --to-earliest" does); lag jumps back to the log's length, and
// the next consumer of the group re-delivers every record from the start.
func TestFranzGoReplayBySeek(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	b := startGroups(t, t.TempDir())
	defer b.Close()
	const topic, group, n = "replay", "replayers", 2000
	adm := adminClient(t, b.Addr())
	if r, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = groupRecord(topic, i)
	}
	if err := pcl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pcl.Close()

	consumeAll := func() map[int32][]int64 {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		got := map[int32][]int64{}
		for total := 0; total < n; {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%d of %d records: %v", total, n, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r.Offset) })
			total += fs.NumRecords()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	totalLag := func() int64 {
		t.Helper()
		lags, err := adm.Lag(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		l := lags[group]
		if err := l.Error(); err != nil {
			t.Fatal(err)
		}
		return l.Lag.Total()
	}

	// Start the group at the start of the log by committing there: the
	// consumer's reset policy (AtEnd) would otherwise skip everything.
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := adm.CommitOffsets(ctx, group, starts.Offsets()); err != nil || r.Error() != nil {
		t.Fatalf("commit start offsets: %v %v", err, r.Error())
	}
	if l := totalLag(); l != n {
		t.Fatalf("lag before consuming: %d, want %d", l, n)
	}
	first := consumeAll()
	if l := totalLag(); l != 0 {
		t.Fatalf("lag after consuming everything: %d", l)
	}

	// Seek back to the start while the group is empty: lag jumps back up.
	if r, err := adm.CommitOffsets(ctx, group, starts.Offsets()); err != nil || r.Error() != nil {
		t.Fatalf("seek to earliest: %v %v", err, r.Error())
	}
	if l := totalLag(); l != n {
		t.Fatalf("lag after seek to earliest: %d, want %d", l, n)
	}
	again := consumeAll()
	for p, offs := range first {
		if len(again[p]) != len(offs) || again[p][0] != 0 {
			t.Fatalf("partition %d: replay delivered %d records from %v, first pass %d", p, len(again[p]), again[p][:min(1, len(again[p]))], len(offs))
		}
	}
	if l := totalLag(); l != 0 {
		t.Fatalf("lag after the replay: %d", l)
	}
}
