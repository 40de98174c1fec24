package metrics

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupCounted: a share consumer that accepts some records,
// rejects one and releases one moves the share families as it should.
func TestShareGroupCounted(t *testing.T) {
	m, addr := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "crew"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	cfg.Resources = append(cfg.Resources, res)
	if r, err := cfg.RequestWith(ctx, cl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("group config: %v %+v", err, r)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup("crew"), kgo.ConsumeTopics("jobs"), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	released := false
	accepted := 0
	for accepted < 9 && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			switch {
			case string(r.Value) == "3":
				r.Ack(kgo.AckReject)
			case string(r.Value) == "5" && !released:
				released = true
				r.Ack(kgo.AckRelease)
			default:
				r.Ack(kgo.AckAccept)
				accepted++
			}
		})
		if err := consumer.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	group := map[string]string{"group": "crew"}
	for name, want := range map[string]float64{
		"strand_share_records_acquired_total":      11, // ten, and the released one again
		"strand_share_records_redelivered_total":   1,
		"strand_share_records_dead_lettered_total": 1,
	} {
		if v := mustValue(t, m, name, group); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
	for typ, want := range map[string]float64{"accept": 9, "reject": 1, "release": 1} {
		if v := mustValue(t, m, "strand_share_records_acknowledged_total", map[string]string{"group": "crew", "type": typ}); v != want {
			t.Errorf("acknowledged %s = %v, want %v", typ, v, want)
		}
	}
	if v := mustValue(t, m, "strand_share_partition_in_flight", map[string]string{"group": "crew", "topic": "jobs", "partition": "0"}); v != 0 {
		t.Errorf("in flight = %v, want 0 once everything is done", v)
	}
}
