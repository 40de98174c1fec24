package strand

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicationRemoteDLQ: a validated topic whose DLQ partition is led
// by another node (after a failover, a reassignment, or made so) still
// takes produces with invalid records: the source leader sends them to
// the DLQ's leader instead of failing the produce until the two leaders
// meet again.
func TestReplicationRemoteDLQ(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(topic string, replicas []int32, configs map[string]string) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = 0, replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		for k, v := range configs {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, kmsgStr(v)
			rt.Configs = append(rt.Configs, cfg)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, c.client(1))
		if err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s on %v: %v %+v", topic, replicas, err, resp)
		}
		c.waitISR(1, topic, slices.Sorted(slices.Values(replicas)), 10*time.Second)
	}
	create("vd", []int32{1, 2, 3}, map[string]string{"strand.validation": "json"})
	create("vd.dlq", []int32{2, 3, 1}, nil)
	if l, d := c.leaders(1, "vd")[0], c.leaders(1, "vd.dlq")[0]; l != 1 || d != 2 {
		t.Fatalf("leaders: vd-0 on %d, vd.dlq-0 on %d; want 1 and 2", l, d)
	}
	prod := c.client(3, kgo.RecordRetries(3))
	var valid, invalid []string
	for i := range 20 {
		v := fmt.Sprintf(`{"i":%d}`, i)
		if i%4 == 1 {
			v = fmt.Sprintf("not json %d", i)
			invalid = append(invalid, v)
		} else {
			valid = append(valid, v)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "vd", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s to vd (leader 1, its DLQ led by 2): %v", v, err)
		}
	}
	consumeAll(ctx, t, c, 2, "vd", valid)
	consumeAll(ctx, t, c, 3, "vd.dlq", invalid)
}
