package kafka_test

// Online migration (issue 15 item 3, B-T5): a live classic group upgraded
// to the KIP-848 consumer protocol when a KIP-848 member joins, its classic
// members kept working inside the consumer group through a rolling
// upgrade, and the downgrade back to a classic group when the last KIP-848
// member leaves — franz-go clients on both protocols, under load, with
// every record consumed once by committed offsets.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFranzGo848OnlineMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	h := newBroker848(t)
	addr := h.addr
	const topic, group = "orders-migrate", "billing-migrate"
	adm := adminClient(t, addr)
	if r, err := adm.CreateTopic(ctx, groupPartitions, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	produced := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := produced; i < produced+n; i++ {
			rs = append(rs, groupRecord(topic, i))
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		produced += n
	}
	tr := newTracker(t)
	own := &ownership{t: t, by: map[int32]string{}}
	members := map[string]*member{}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	classic := func(name string) {
		members[name] = startMember(t, ctx, addr, group, topic, name, kgo.CooperativeStickyBalancer(), tr)
	}
	next := func(name string) {
		members[name] = start848Member(t, ctx, addr, group, topic, name, kgo.StickyBalancer(), tr, own)
	}
	// stop lets a member commit what it consumed, then closes it (it
	// leaves the group).
	stop := func(name string) {
		t.Helper()
		waitCommitted(t, ctx, tr, int64(produced))
		members[name].stop()
		delete(members, name)
	}
	// consumerSettled waits for a consumer group of n members (classic
	// among them), each at its target, every partition held once.
	consumerSettled := func(what string, n, classics int) kadm.DescribedConsumerGroup {
		t.Helper()
		var d kadm.DescribedConsumerGroup
		await(t, ctx, what, func() bool {
			d, err = describe848(ctx, adm, group)
			return err == nil && settled(d, n, topic) && classicMembers(ctx, t, pcl, group) == classics
		})
		return d
	}
	classicSettled := func(what string, n int) {
		t.Helper()
		await(t, ctx, what, func() bool {
			ds, err := adm.DescribeGroups(ctx, group)
			d := ds[group]
			if err != nil || d.Err != nil || d.State != "Stable" || len(d.Members) != n {
				return false
			}
			held := 0
			for _, m := range d.Members {
				a, ok := m.Assigned.AsConsumer()
				if !ok {
					return false
				}
				for _, tp := range a.Topics {
					held += len(tp.Partitions)
				}
			}
			return held == groupPartitions
		})
	}
	groupType := func() string {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return listed[group].GroupType
	}
	step := func(what string) {
		t.Helper()
		produce(1500)
		if err := tr.waitFor(ctx, produced); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s: %d records consumed", what, produced)
	}

	// A classic cooperative-sticky group of two, consuming.
	classic("c0")
	classic("c1")
	classicSettled("a classic group of 2", 2)
	step("classic group of 2")

	// A KIP-848 member joins: the live group converts; the classic members
	// stay, now served by the consumer group.
	next("n0")
	d := consumerSettled("converted: 2 classic members and n0", 3, 2)
	if typ := groupType(); typ != "consumer" {
		t.Fatalf("group type %q after the upgrade", typ)
	}
	t.Logf("upgraded: consumer group at epoch %d, assignment %v", d.Epoch, holdings(d, topic))
	step("2 classic + 1 KIP-848")

	// Rolling upgrade of the classic members.
	stop("c0")
	next("n1")
	consumerSettled("c0 replaced by n1", 3, 1)
	step("1 classic + 2 KIP-848")
	stop("c1")
	next("n2")
	consumerSettled("c1 replaced by n2", 3, 0)
	step("3 KIP-848")

	// And back: classic members replace the KIP-848 ones; when the last
	// KIP-848 member leaves, the group is a classic group again.
	stop("n0")
	classic("c2")
	consumerSettled("n0 replaced by classic c2", 3, 1)
	step("1 classic + 2 KIP-848 (downgrading)")
	stop("n1")
	classic("c3")
	consumerSettled("n1 replaced by classic c3", 3, 2)
	step("2 classic + 1 KIP-848 (downgrading)")
	stop("n2")
	classicSettled("downgraded: a classic group of c2 and c3", 2)
	if typ := groupType(); typ != "classic" {
		t.Fatalf("group type %q after the downgrade", typ)
	}
	step("classic group of 2 (downgraded)")

	waitCommitted(t, ctx, tr, int64(produced))
	dups := 0
	for _, n := range tr.seen[:produced] {
		dups += max(n-1, 0)
	}
	t.Logf("online migration classic → consumer → classic: %d records, %d consumed more than once, %d lost", produced, dups, produced-tr.distinct)
	if dups != 0 || tr.distinct != produced {
		t.Fatalf("%d records: %d consumed more than once, %d distinct", produced, dups, tr.distinct)
	}
}

// classicMembers counts the members of a consumer group that speak the
// classic protocol (ConsumerGroupDescribe v1's MemberType 0), or -1.
func classicMembers(ctx context.Context, t *testing.T, cl *kgo.Client, group string) int {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return -1
	}
	n := 0
	for _, m := range resp.Groups[0].Members {
		if m.MemberType == 0 {
			n++
		}
	}
	return n
}
