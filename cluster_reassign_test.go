package strand

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterReassignmentShows: while a partition copies to a new replica
// under the node's reassignment throttle, ListPartitionReassignments
// reports its adding replica, every surface shows the move — the
// console's topic page and API, strand_reassigning_partitions,
// strand_reassignment_adding_bytes on the node copying — and the bytes
// it copies count in strand_replication_throttled_bytes_total.
func TestClusterReassignmentShows(t *testing.T) {
	c := startClusterTuned(t, 3, func(cc *ClusterConfig) { cc.ReassignmentThrottle = 256 << 10 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1]), kgo.DefaultProduceTopic("slow"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, -1, -1, nil, "slow"); err != nil {
		t.Fatal(err)
	}
	req := kadm.AlterPartitionAssignmentsReq{}
	// Start from one replica on node 1 (the topic was placed anywhere):
	// move there first, then fill it, then copy it to node 2.
	req.Assign("slow", 0, []int32{1})
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitNotMovingTopic(ctx, t, adm, "slow")
	for range 48 { // 3 MiB: twelve seconds at the throttle
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// kafka-configs --entity-default: a cluster-default rate every node
	// reports, from the default (nothing lists a replica: it throttles
	// nothing here).
	rate := "999999999"
	if err := alterOK(adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "follower.replication.throttled.rate", Value: &rate}})); err != nil {
		t.Fatalf("set the default follower rate: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) { // node 2 applies it within a heartbeat
		rc, err := adm.DescribeBrokerConfigs(ctx, 2)
		c, _ := rc.On("2", nil)
		if err == nil && slices.ContainsFunc(c.Configs, func(c kadm.Config) bool {
			return c.Key == "follower.replication.throttled.rate" && c.Value != nil && *c.Value == rate && c.Source == 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker 2's configs do not show the default rate: %+v %v", c, err)
		}
	}
	req = kadm.AlterPartitionAssignmentsReq{}
	req.Assign("slow", 0, []int32{1, 2})
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"slow": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := l["slow"][0]; !ok || !slices.Equal(r.AddingReplicas, []int32{2}) || len(r.RemovingReplicas) != 0 || !slices.Equal(r.Replicas, []int32{1, 2}) {
		t.Fatalf("ListPartitionReassignments: %+v; want replicas [1 2], adding [2], removing []", l["slow"][0])
	}
	// Node 1 learns of the move within a metadata heartbeat (the
	// controller answered the request).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		page := httpGet(t, "http://"+c.nodes[1].ConsoleAddr()+"/topics/slow")
		var detail struct {
			Partitions []struct {
				Adding []int32 `json:"adding"`
			} `json:"partitions"`
		}
		err := json.Unmarshal([]byte(httpGet(t, "http://"+c.nodes[1].ConsoleAddr()+"/api/v1/topics/slow")), &detail)
		moving := c.scrape(1, "strand_reassigning_partitions ")
		if strings.Contains(page, "moving: adding 2") && err == nil && len(detail.Partitions) == 1 && slices.Equal(detail.Partitions[0].Adding, []int32{2}) &&
			slices.Equal(moving, []string{"strand_reassigning_partitions 1"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 does not show the move: API %+v (%v), metrics %v; want partition 0 adding [2], strand_reassigning_partitions 1; topic page:\n%s",
				detail, err, moving, page)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		adding := c.scrape(2, `strand_reassignment_adding_bytes{partition="0",topic="slow"}`)
		throttled := c.scrape(2, `strand_replication_throttled_bytes_total{side="follower"}`)
		if len(adding) == 1 && len(throttled) == 1 && !strings.HasSuffix(throttled[0], " 0") {
			t.Logf("node 2 copying: %s; %s", adding[0], throttled[0])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 while it copies: %v, %v", adding, throttled)
		}
	}
}

func alterOK(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
