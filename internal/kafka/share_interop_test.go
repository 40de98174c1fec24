package kafka

// Share groups (KIP-932) against franz-go's share consumer (kgo.ShareGroup)
// on a real broker on loopback: exactly-once acceptance over 1 and 6
// partitions with three consumers, redelivery of released records and of
// records whose lock expired, rejected records in the dead-letter topic
// with their reasons, and a broker restart that loses no acknowledgement.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/ingest"
	"github.com/strandmq/strand/internal/share"
)

// shareBroker is a broker and server on a directory and address of their
// own, which a test may restart.
type shareBroker struct {
	t    *testing.T
	dir  string
	addr string
	b    *broker.Broker
	s    *Server
	done chan error
}

func newShareBroker(t *testing.T) *shareBroker {
	h := &shareBroker{t: t, dir: t.TempDir()}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *shareBroker) start() {
	h.t.Helper()
	b, err := broker.Open(broker.Config{Dir: h.dir, Logger: testLogger()})
	if err != nil {
		h.t.Fatal(err)
	}
	s, err := NewServer(Config{Broker: b, Logger: testLogger()})
	if err != nil {
		h.t.Fatal(err)
	}
	addr := h.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	for range 50 { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.addr, h.b, h.s, h.done = ln.Addr().String(), b, s, make(chan error, 1)
	go func() { h.done <- s.Serve(ln) }()
}

func (h *shareBroker) stop() {
	if h.b == nil {
		return
	}
	if err := h.s.Close(); err != nil {
		h.t.Error(err)
	}
	if err := <-h.done; err != nil {
		h.t.Error(err)
	}
	if err := h.b.Close(); err != nil {
		h.t.Error(err)
	}
	h.b = nil
}

func (h *shareBroker) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// configure sets share group configs with IncrementalAlterConfigs on a
// GROUP resource, as an admin client would.
func (h *shareBroker) configure(group string, kv ...string) {
	h.t.Helper()
	if code := alterGroupConfigs(h.t, h.addr, group, kv...); code != 0 {
		h.t.Fatalf("alter configs of group %s: error %d", group, code)
	}
}

func alterGroupConfigs(t *testing.T, addr, group string, kv ...string) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0].ErrorCode
}

// produceN writes n records "<prefix>-<i>" round-robin over the topic's
// partitions and waits for them to be acknowledged.
func produceN(t *testing.T, addr, topic, prefix string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Value: []byte(prefix + "-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// shareConsumer is one franz-go share consumer; decide says how it
// acknowledges each record (0: do not acknowledge, hold the lock).
type shareConsumer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

type delivery struct {
	who   string
	value string
	part  int32
	off   int64
	count int32
	ack   kgo.AckStatus
	// confirmed: FlushAcks returned nil after the acknowledgement and the
	// ack callback reported no error: the broker answered it.
	confirmed bool
}

// log collects every delivery of every consumer.
type deliveryLog struct {
	mu sync.Mutex
	ds []delivery
}

func (l *deliveryLog) add(d delivery) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

func (l *deliveryLog) snapshot() []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]delivery(nil), l.ds...)
}

// accepted returns value → acceptances.
func (l *deliveryLog) accepted() map[string]int {
	out := map[string]int{}
	for _, d := range l.snapshot() {
		if d.ack == kgo.AckAccept {
			out[d.value]++
		}
	}
	return out
}

func startShareConsumer(t *testing.T, addr, group, topic, name string, log *deliveryLog, decide func(r *kgo.Record) kgo.AckStatus) *shareConsumer {
	return startShareConsumerOnce(t, addr, group, topic, name, log, decide, false)
}

// startShareConsumerOnce is startShareConsumer that, with once, stops
// polling after its first records (a poll auto-accepts the previous
// poll's unacknowledged records: a consumer that holds records must not
// poll again).
func startShareConsumerOnce(t *testing.T, addr, group, topic, name string, log *deliveryLog, decide func(r *kgo.Record) kgo.AckStatus, once bool) *shareConsumer {
	t.Helper()
	var ackErrs sync.Map // partition → an ack error the broker reported
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.ShareMaxRecords(20), kgo.ClientID(name),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			for _, r := range rs {
				if r.Err != nil {
					ackErrs.Store(r.Partition, r.Err)
				}
			}
		})}
	if once {
		// One fetch per poll (ShareAcquireMode record_limit, v2): no
		// fetch acquires records in the background that the consumer
		// never sees.
		opts = append(opts, kgo.ShareMaxRecordsStrict())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &shareConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			var batch []delivery
			fs.EachRecord(func(r *kgo.Record) {
				ack := decide(r)
				batch = append(batch, delivery{who: name, value: string(r.Value), part: r.Partition, off: r.Offset, count: r.DeliveryCount(), ack: ack})
				if ack != 0 {
					r.Ack(ack)
				}
			})
			ackErrs.Clear()
			ok := ctx.Err() == nil && cl.FlushAcks(ctx) == nil
			for _, d := range batch {
				_, failed := ackErrs.Load(d.part)
				d.confirmed = ok && !failed
				log.add(d)
			}
			if once && len(batch) > 0 {
				<-ctx.Done()
			}
		}
	}()
	return c
}

// close stops polling and leaves the group.
func (c *shareConsumer) close() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

func waitShare(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func acceptAll(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }

// TestShareGroupInterop: three consumers that accept everything receive
// every record exactly once, on 1 and on 6 partitions, and the
// share-partitions end with nothing in flight.
func TestShareGroupInterop(t *testing.T) {
	for _, parts := range []int32{1, 6} {
		t.Run(fmt.Sprintf("partitions=%d", parts), func(t *testing.T) {
			h := newShareBroker(t)
			topic, group, n := "work", "workers", 600
			createTopic(t, h.b, topic, parts, nil)
			h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200")
			var log deliveryLog
			var cs []*shareConsumer
			for i := range 3 {
				cs = append(cs, startShareConsumer(t, h.addr, group, topic, fmt.Sprintf("c%d", i), &log, acceptAll))
			}
			// Every member has been told its partitions before records
			// arrive: all three share the work from the first record.
			waitShare(t, "three members with their assignments", 30*time.Second, func() bool {
				d := h.b.Share().Coordinator.Describe([]string{group})[0]
				if len(d.Members) != 3 {
					return false
				}
				for _, m := range d.Members {
					if len(m.Assigned[topic]) == 0 {
						return false
					}
				}
				return true
			})
			produceN(t, h.addr, topic, "job", n)
			waitShare(t, "every record accepted", time.Minute, func() bool { return len(log.accepted()) == n })
			for _, c := range cs {
				c.close()
			}
			for v, k := range log.accepted() {
				if k != 1 {
					t.Errorf("%s accepted %d times", v, k)
				}
			}
			who := map[string]int{}
			for _, d := range log.snapshot() {
				who[d.who]++
			}
			if parts == 6 && len(who) != 3 {
				t.Errorf("deliveries by consumer %v: want all three consumers served", who)
			}
			for _, st := range h.b.Share().Manager.Stats(group) {
				if st.InFlight != 0 || st.Acquired != 0 {
					t.Errorf("%s-%d: %+v in flight after every record was accepted", st.TP.Topic, st.TP.Partition, st.Stats)
				}
			}
		})
	}
}

// TestShareGroupRedelivery: records one member releases are delivered to
// another; records a member holds without acknowledging are delivered to
// another, with delivery count 2, once their lock expires.
func TestShareGroupRedelivery(t *testing.T) {
	h := newShareBroker(t)
	topic, group := "jobs", "crew"
	createTopic(t, h.b, topic, 1, nil)
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200", share.ConfigLockDuration, "3000")
	var log deliveryLog
	firstBy := func(who string) int {
		n := 0
		for _, d := range log.snapshot() {
			if d.who == who {
				n++
			}
		}
		return n
	}

	// The holder takes the first records and sits on them (it stays in
	// the group, heartbeating, but never acknowledges nor polls again).
	produceN(t, h.addr, topic, "hold", 10)
	holder := startShareConsumerOnce(t, h.addr, group, topic, "holder", &log, func(*kgo.Record) kgo.AckStatus { return 0 }, true)
	waitShare(t, "the holder to hold records", 30*time.Second, func() bool { return firstBy("holder") > 0 })
	// The releaser releases the next records once and goes.
	produceN(t, h.addr, topic, "rel", 10)
	releaser := startShareConsumerOnce(t, h.addr, group, topic, "releaser", &log, func(*kgo.Record) kgo.AckStatus { return kgo.AckRelease }, true)
	waitShare(t, "a release", 30*time.Second, func() bool { return firstBy("releaser") > 0 })
	releaser.close()
	accepter := startShareConsumer(t, h.addr, group, topic, "accepter", &log, acceptAll)
	waitShare(t, "every record accepted", time.Minute, func() bool { return len(log.accepted()) == 20 })
	accepter.close()
	holder.close()

	// Each delivery's count is more than the deliveries seen before it.
	seen := map[string]int32{}
	byFirst := map[string]string{}
	for _, d := range log.snapshot() {
		if d.count <= seen[d.value] {
			t.Errorf("%s delivered to %s with count %d after %d deliveries", d.value, d.who, d.count, seen[d.value])
		}
		seen[d.value] = d.count
		if _, ok := byFirst[d.value]; !ok {
			byFirst[d.value] = d.who
		}
	}
	// A held record's lock expiring counts as a delivery: its next
	// delivery's count is one more than the deliveries before it (2 when
	// the accepter takes it next; on a loaded machine the releaser may
	// take and release it first).
	released, expired := 0, 0
	before := map[string]int32{}
	for _, d := range log.snapshot() {
		if d.who != "accepter" {
			before[d.value]++
			continue
		}
		switch byFirst[d.value] {
		case "releaser":
			released++
		case "holder":
			expired++
			if d.count != before[d.value]+1 {
				t.Errorf("%s: held until its lock expired, then delivered with count %d after %d deliveries, want %d", d.value, d.count, before[d.value], before[d.value]+1)
			}
		}
	}
	if released == 0 || expired == 0 {
		t.Errorf("the accepter got %d released records and %d whose lock expired; want both", released, expired)
	}
}

// TestShareGroupDeadLetters: rejected records and records past the
// delivery-count limit go to the dead-letter topic with their reasons,
// in the shape `strand dlq` reads; every other record is accepted once;
// after the fix, a redrive brings each dead record back exactly once and
// the group accepts it.
func TestShareGroupDeadLetters(t *testing.T) {
	h := newShareBroker(t)
	// The group's dead-letter topic is the topic's own Strand DLQ, so
	// `strand dlq list orders` and `strand dlq redrive orders` find it.
	topic, group, dlq := "orders", "billing", "orders.dlq"
	createTopic(t, h.b, topic, 2, nil)
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200",
		share.ConfigDeliveryLimit, "2", share.ConfigDeadLetterTopic, dlq)
	produceN(t, h.addr, topic, "order", 30)
	var log deliveryLog
	decide := func(r *kgo.Record) kgo.AckStatus {
		i, _ := strconv.Atoi(string(r.Value[len("order-"):]))
		switch {
		case i%10 == 3:
			return kgo.AckReject
		case i%10 == 7:
			return kgo.AckRelease // always fails: given up on after 2 deliveries
		}
		return kgo.AckAccept
	}
	c := startShareConsumer(t, h.addr, group, topic, "biller", &log, decide)
	waitShare(t, "the dead letters", time.Minute, func() bool {
		return len(log.accepted()) == 24 && dlqCount(t, h, dlq) == 6
	})
	c.close()
	got := map[string]string{}
	for p := range int32(2) {
		recs, err := h.b.Fetch(dlq, broker.PartitionID(p), 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			q := ingest.Inspect(r.Headers)
			if !q.OK || q.Source.Topic != topic {
				t.Errorf("dead letter %s: headers %+v do not read as a Strand DLQ record", r.Value, q)
			}
			got[string(r.Value)] = q.Reason
		}
	}
	for i := range 30 {
		v := "order-" + strconv.Itoa(i)
		reason, dead := got[v]
		switch i % 10 {
		case 3:
			if !dead || !strings.Contains(reason, "rejected by member") {
				t.Errorf("%s: dead %v, reason %q; want rejected", v, dead, reason)
			}
		case 7:
			if !dead || !strings.Contains(reason, "delivery-count limit 2") {
				t.Errorf("%s: dead %v, reason %q; want the delivery-count limit", v, dead, reason)
			}
		default:
			if dead {
				t.Errorf("%s accepted but also dead-lettered (%q)", v, reason)
			}
		}
	}

	// The consumer is fixed; the dead letters are redriven, twice.
	fixed := startShareConsumer(t, h.addr, group, topic, "fixed", &log, acceptAll)
	defer fixed.close()
	for run := range 2 {
		res, err := h.b.Redrive(context.Background(), topic, broker.RedriveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(6 * (1 - run)); res.Redriven != want {
			t.Errorf("redrive run %d redrove %d records, want %d", run, res.Redriven, want)
		}
	}
	waitShare(t, "the redriven records accepted", time.Minute, func() bool { return len(log.accepted()) == 30 })
	// Everything in the topic has been delivered and acknowledged: a
	// second copy of a redriven record would have been accepted by now.
	tobj, _ := h.b.Topic(topic)
	waitShare(t, "the group at the end of the topic", time.Minute, func() bool {
		for p := range int32(2) {
			part, _ := tobj.Partition(broker.PartitionID(p))
			start, ok := h.b.Share().Manager.StartOffset(group, share.TopicPartition{TopicID: tobj.ID, Topic: topic, Partition: p})
			if !ok || int64(start) != int64(part.HighWatermark()) {
				return false
			}
		}
		return true
	})
	for v, k := range log.accepted() {
		if k != 1 {
			t.Errorf("%s accepted %d times", v, k)
		}
	}
}

func dlqCount(t *testing.T, h *shareBroker, dlq string) int {
	n := 0
	for p := range int32(2) {
		recs, err := h.b.Fetch(dlq, broker.PartitionID(p), 0, 1<<20)
		if err != nil {
			return 0 // not created yet
		}
		n += len(recs)
	}
	return n
}

// TestShareGroupRestart: acknowledgements survive a broker restart: no
// record accepted before it is delivered after it, and every record is
// accepted in the end.
func TestShareGroupRestart(t *testing.T) {
	h := newShareBroker(t)
	topic, group := "tasks", "runners"
	createTopic(t, h.b, topic, 3, nil)
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200")
	produceN(t, h.addr, topic, "task", 300)
	var log deliveryLog
	c := startShareConsumer(t, h.addr, group, topic, "before", &log, acceptAll)
	waitShare(t, "some acceptances", 30*time.Second, func() bool { return len(log.accepted()) >= 100 })
	c.close() // its acknowledgements were answered: they are durable
	before := map[string]bool{}
	for _, d := range log.snapshot() {
		if d.ack == kgo.AckAccept && d.confirmed {
			before[d.value] = true
		}
	}
	if len(before) < 100 {
		t.Fatalf("only %d acceptances confirmed before the restart", len(before))
	}
	h.restart()
	produceN(t, h.addr, topic, "late", 30)
	c = startShareConsumer(t, h.addr, group, topic, "after", &log, acceptAll)
	waitShare(t, "every record accepted", time.Minute, func() bool { return len(log.accepted()) == 330 })
	c.close()
	for _, d := range log.snapshot() {
		if d.who == "after" && before[d.value] {
			t.Errorf("%s was accepted before the restart and delivered again after it", d.value)
		}
	}
}

// TestShareGroupAdmin: group configs are validated, described and survive
// a restart; ListGroups lists a share group with type "share" and
// ShareGroupDescribe shows its members and their partitions.
func TestShareGroupAdmin(t *testing.T) {
	h := newShareBroker(t)
	topic, group := "admin-work", "admins"
	createTopic(t, h.b, topic, 4, nil)
	if code := alterGroupConfigs(t, h.addr, group, share.ConfigDeliveryLimit, "1"); code != kerr.InvalidConfig.Code {
		t.Errorf("delivery-count limit 1: code %d, want INVALID_CONFIG", code)
	}
	if code := alterGroupConfigs(t, h.addr, group, "share.bogus", "1"); code != kerr.InvalidConfig.Code {
		t.Errorf("an unknown group config: code %d, want INVALID_CONFIG", code)
	}
	h.configure(group, share.ConfigDeadLetterTopic, "dlq.admin", share.ConfigHeartbeat, "200")
	h.restart()

	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		got[c.Name] = *c.Value
	}
	if got[share.ConfigDeadLetterTopic] != "dlq.admin" || got[share.ConfigDeliveryLimit] != "5" {
		t.Errorf("described group configs after a restart: %v", got)
	}

	var log deliveryLog
	var cs []*shareConsumer
	for i := range 2 {
		cs = append(cs, startShareConsumer(t, h.addr, group, topic, fmt.Sprintf("a%d", i), &log, acceptAll))
	}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	adm := kadm.NewClient(cl)
	waitShare(t, "two members sharing the four partitions", 30*time.Second, func() bool {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Members) != 2 {
			return false
		}
		n := 0
		for _, m := range resp.Groups[0].Members {
			for _, tp := range m.Assignment.TopicPartitions {
				n += len(tp.Partitions)
			}
		}
		return n == 4 && resp.Groups[0].GroupState == "Stable"
	})
	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed[group]; !ok || l.ProtocolType != "share" {
		t.Errorf("ListGroups by type share: %+v", listed)
	}
	if all, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || len(all) != 0 {
		t.Errorf("ListGroups by type consumer lists %v (%v); want no share group", all, err)
	}
}

// TestShareGroupOffsets: DescribeShareGroupOffsets reports each
// share-partition's start offset and lag; AlterShareGroupOffsets is refused
// while the group has members and, once it has none, moves the start back
// so that the records are delivered again (replay is a seek, for share
// groups too); DeleteShareGroupOffsets forgets the state.
func TestShareGroupOffsets(t *testing.T) {
	h := newShareBroker(t)
	topic, group := "ledger", "auditors"
	createTopic(t, h.b, topic, 2, nil)
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200")
	produceN(t, h.addr, topic, "entry", 40)
	var log deliveryLog
	c := startShareConsumer(t, h.addr, group, topic, "auditor", &log, acceptAll)
	waitShare(t, "every record accepted", 30*time.Second, func() bool { return len(log.accepted()) == 40 })

	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	describe := func() map[int32][2]int64 {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}} // null topics: all
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("describe offsets: %v %+v", err, resp)
		}
		out := map[int32][2]int64{}
		for _, tt := range resp.Groups[0].Topics {
			for _, p := range tt.Partitions {
				out[p.Partition] = [2]int64{p.StartOffset, p.Lag}
			}
		}
		return out
	}
	waitShare(t, "the start offsets at the end", 30*time.Second, func() bool {
		d := describe()
		return d[0] == [2]int64{20, 0} && d[1] == [2]int64{20, 0}
	})

	alter := func() *kmsg.AlterShareGroupOffsetsResponse {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 15}}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := alter(); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("alter with a member: code %d, want NON_EMPTY_GROUP", r.ErrorCode)
	}
	c.close()
	if r := alter(); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter with no members: %+v", r)
	}
	if d := describe(); d[0] != [2]int64{15, 5} {
		t.Errorf("after the seek: partition 0 at %v, want start 15 with lag 5", d[0])
	}
	replay := startShareConsumer(t, h.addr, group, topic, "replay", &log, acceptAll)
	waitShare(t, "the five records again", 30*time.Second, func() bool {
		n := 0
		for _, d := range log.snapshot() {
			if d.who == "replay" {
				n++
			}
		}
		return n == 5
	})
	replay.close()

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	if r, err := del.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete offsets: %v %+v", err, r)
	}
	if d := describe(); len(d) != 0 {
		t.Errorf("after delete: %v, want no state", d)
	}
}
