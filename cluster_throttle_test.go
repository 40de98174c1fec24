package strand

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterLeaderThrottle: Kafka's leader-side throttle alone (no
// follower rate, no --reassignment-throttle): the leader serves the
// listed out-of-sync replica no faster than its
// leader.replication.throttled.rate, so the copy takes at least
// (size − one second's burst − one fetch) / rate, and the bytes count as
// the leader's throttled bytes, none as the follower's.
func TestClusterLeaderThrottle(t *testing.T) {
	c := startClusterTuned(t, 3, func(cc *ClusterConfig) { cc.ReassignmentThrottle = -1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1]), kgo.DefaultProduceTopic("led"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "led"); err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("led", 0, []int32{1})
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitNotMovingTopic(ctx, t, adm, "led")
	const size, rate = 4 << 20, 1 << 20
	for range size / (64 << 10) {
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r, list := "1048576", "0:1"
	if err := alterOK(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &r}}, 1)); err != nil {
		t.Fatal(err)
	}
	if err := alterOK(adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.replicas", Value: &list}}, "led")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // every node applies the configs within a heartbeat
	start := time.Now()
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("led", 0, []int32{1, 2})
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitNotMovingTopic(ctx, t, adm, "led")
	took := time.Since(start)
	floor := time.Duration(float64(size-rate-(1<<20)) / rate * float64(time.Second))
	if took < floor {
		t.Errorf("4 MiB copied in %v under a 1 MiB/s leader throttle; it cannot take less than %v", took, floor)
	}
	leader := c.scrape(1, `strand_replication_throttled_bytes_total{side="leader"}`)
	follower := c.scrape(2, `strand_replication_throttled_bytes_total{side="follower"}`)
	if len(leader) != 1 || strings.HasSuffix(leader[0], " 0") || len(follower) != 1 || !strings.HasSuffix(follower[0], " 0") {
		t.Errorf("node 1 %v, node 2 %v; want leader-side bytes on 1 and no follower-side bytes on 2", leader, follower)
	}
	t.Logf("copied 4 MiB in %v (floor %v); %v; %v", took.Round(10*time.Millisecond), floor, leader, follower)
}

func waitNotMovingTopic(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err == nil && len(l[topic]) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-0 still moving: %v %v", topic, l, err)
		}
	}
}

// TestClusterInSyncReplicasNotThrottled: Kafka's rule that a throttle
// never holds back an in-sync replica. With every replica listed on both
// sides at 1 KiB/s, 4 MiB of acks=all produces with min.insync.replicas
// 2 all succeed: had the follower been throttled it would have fallen
// out of the ISR (2 s lag time here) and the produces failed with
// NOT_ENOUGH_REPLICAS. No byte counts as throttled.
func TestClusterInSyncReplicasNotThrottled(t *testing.T) {
	c := startClusterTuned(t, 3, func(cc *ClusterConfig) { cc.ReassignmentThrottle = 1024 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1]), kgo.DefaultProduceTopic("hot"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR, all := "2", "*"
	if _, err := adm.CreateTopic(ctx, 1, 2, map[string]*string{"min.insync.replicas": &minISR,
		"leader.replication.throttled.replicas": &all, "follower.replication.throttled.replicas": &all}, "hot"); err != nil {
		t.Fatal(err)
	}
	r := "1024"
	if err := alterOK(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &r},
		{Name: "follower.replication.throttled.rate", Value: &r}})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // every node applies the configs within a heartbeat
	for i := range 64 {
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d of 64 under a 1 KiB/s throttle of in-sync replicas: %v", i, err)
		}
	}
	for id := int32(1); id <= 3; id++ {
		for _, line := range c.scrape(id, "strand_replication_throttled_bytes_total") {
			if !strings.HasSuffix(line, " 0") {
				t.Errorf("node %d: %s; an in-sync replica's bytes were throttled", id, line)
			}
		}
	}
}
