package main

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupBrokerKilled: three franz-go share consumers accept records
// from a `strand serve` that is SIGKILLed mid-stream and restarted on the
// same data directory. No acknowledgement the clients saw succeed is
// undone — a record is never delivered again after its acceptance was
// confirmed, before or after the kill — and every record is accepted.
func TestShareGroupBrokerKilled(t *testing.T) {
	const topic, group, total = "queue-kill", "workers-kill", 3000
	dir, addr := t.TempDir(), freeAddr(t)
	args := []string{"--data-dir", dir, "--listen", addr}
	broker := startServe(t, args...)
	defer func() { broker.stop(t) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if r, err := kadm.NewClient(admCl).CreateTopic(ctx, 3, 1, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, kv := range [][2]string{{"share.auto.offset.reset", "earliest"}, {"share.heartbeat.interval.ms", "200"}} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, c)
	}
	cfg.Resources = append(cfg.Resources, res)
	if r, err := cfg.RequestWith(ctx, admCl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("group configs: %v %+v", err, r)
	}
	var rs []*kgo.Record
	for i := range total {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := admCl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Events in one order: a delivery of a value after its acceptance was
	// confirmed is an acknowledgement undone.
	var mu sync.Mutex
	confirmed := map[string]bool{}
	accepted := map[string]bool{}
	undone := 0
	var wg sync.WaitGroup
	var clients []*kgo.Client
	defer func() {
		for _, cl := range clients {
			cl.Close()
		}
		wg.Wait()
	}()
	for i := range 3 {
		var ackFailed sync.Map
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("w"+strconv.Itoa(i)),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.ShareMaxRecords(50), kgo.RetryTimeout(time.Minute),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				for _, r := range rs {
					if r.Err != nil {
						ackFailed.Store(r.Partition, true)
					}
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				var polled []*kgo.Record
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					if confirmed[string(r.Value)] {
						undone++
						t.Errorf("%s delivered again (count %d) after its acceptance was confirmed", r.Value, r.DeliveryCount())
					}
					polled = append(polled, r)
				})
				mu.Unlock()
				ackFailed.Clear()
				cl.MarkAcks(kgo.AckAccept, polled...)
				ok := cl.FlushAcks(ctx) == nil
				mu.Lock()
				for _, r := range polled {
					accepted[string(r.Value)] = true
					if _, failed := ackFailed.Load(r.Partition); ok && !failed {
						confirmed[string(r.Value)] = true
					}
				}
				mu.Unlock()
			}
		}()
	}
	count := func(m map[string]bool) int {
		mu.Lock()
		defer mu.Unlock()
		return len(m)
	}
	for count(confirmed) < total/3 {
		if ctx.Err() != nil {
			t.Fatal("no progress before the kill")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := broker.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = broker.wait(t, 10*time.Second)
	atKill := count(confirmed)
	broker = startServe(t, args...)
	for count(accepted) < total || count(confirmed) < total {
		if ctx.Err() != nil {
			t.Fatalf("after the restart: %d of %d accepted, %d confirmed", count(accepted), total, count(confirmed))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("SIGKILLed with %d of %d acceptances confirmed; all %d accepted after the restart", atKill, total, total)
	if undone > 0 {
		t.Errorf("%d confirmed acceptances undone", undone)
	}
}
