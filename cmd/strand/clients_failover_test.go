package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// sarama and kafka-go through a node kill: each produces with acks=all to
// an RF 3, min ISR 2 topic while node 2 is SIGKILLed and started again,
// then reads the topic back with its own consumer. Every record it was
// told was written is there, at the offset it was told — once for sarama's
// idempotent producer; kafka-go has none, so its retries may duplicate.
// (franz-go: the scenarios; kafka-python, kcat and kafkajs: test/interop.)

// ackLog collects what a client acknowledged.
type ackLog struct {
	mu     sync.Mutex
	acked  map[string]pos
	failed int
}

func (a *ackLog) ack(v string, p int32, off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acked[v] = pos{p, off}
}

func (a *ackLog) fail() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failed++
}

// throughNodeKill creates topic, runs produce (which must stop when its
// context ends) across a SIGKILL and restart of node 2, and checks what
// read returns (every record of the topic by position) against what
// produce was told. A producer that is not idempotent may write a record
// twice when it retries one whose answer was lost (Kafka's at-least-once):
// its duplicates are counted, not failed.
func throughNodeKill(t *testing.T, topic string, idempotent bool, produce func(ctx context.Context, brokers []string, a *ackLog), read func(ctx context.Context, brokers []string) map[pos]string) {
	c := newProcCluster(t)
	ok(t, c.addrs[1], "", "topic", "create", topic, "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.waitInSync(ctx, t, topic, 20*time.Second)
	brokers := strings.Split(c.brokers(0), ",")
	a := &ackLog{acked: map[string]pos{}}
	load, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); produce(load, brokers, a) }()
	time.Sleep(2 * time.Second)
	c.kill9(t, 2)
	time.Sleep(2 * time.Second)
	c.procs[2] = c.launch(t, 2)
	c.procs[2].awaitServing(t)
	time.Sleep(3 * time.Second)
	stop()
	<-done
	c.waitInSync(ctx, t, topic, time.Minute)
	got := read(ctx, brokers)
	a.mu.Lock()
	defer a.mu.Unlock()
	at := map[string][]pos{}
	for p, v := range got {
		at[v] = append(at[v], p)
	}
	lost, moved, dups := 0, 0, 0
	for v, p := range a.acked {
		switch {
		case len(at[v]) == 0:
			lost++
			t.Errorf("%s acknowledged %s at %d@%d; it is not in the topic", topic, v, p.partition, p.offset)
		case got[p] != v:
			moved++
			t.Errorf("%s acknowledged %s at %d@%d; the topic has it at %v", topic, v, p.partition, p.offset, at[v])
		}
	}
	for v, ps := range at {
		if len(ps) > 1 {
			dups++
			if idempotent {
				t.Errorf("%s: %s is in the topic %d times: %v", topic, v, len(ps), ps)
			}
		}
	}
	t.Logf("%s: %d acknowledged, %d failed, %d read back; lost %d, at another offset %d, duplicated %d", topic, len(a.acked), a.failed, len(got), lost, moved, dups)
	if len(a.acked) < 100 {
		t.Errorf("only %d records acknowledged: the load barely ran", len(a.acked))
	}
}

func TestSaramaThroughNodeKill(t *testing.T) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1 // sarama's idempotent producer requires it
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 50
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewRoundRobinPartitioner
	cfg.Metadata.Retry.Backoff = 100 * time.Millisecond
	throughNodeKill(t, "sarama-kill", true, func(ctx context.Context, brokers []string, a *ackLog) {
		prod, err := sarama.NewAsyncProducer(brokers, cfg)
		if err != nil {
			t.Error(err)
			return
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for m := range prod.Successes() {
				a.ack(m.Metadata.(string), m.Partition, m.Offset)
			}
		}()
		go func() {
			defer wg.Done()
			for range prod.Errors() {
				a.fail()
			}
		}()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			<-tick.C
			v := fmt.Sprint("s", i)
			prod.Input() <- &sarama.ProducerMessage{Topic: "sarama-kill", Value: sarama.StringEncoder(v), Metadata: v}
		}
		prod.AsyncClose() // flushes what is in flight, then closes both channels
		wg.Wait()
	}, func(ctx context.Context, brokers []string) map[pos]string {
		cl, err := sarama.NewClient(brokers, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		cons, err := sarama.NewConsumerFromClient(cl)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		out := map[pos]string{}
		for p := range int32(3) {
			end, err := cl.GetOffset("sarama-kill", p, sarama.OffsetNewest)
			if err != nil {
				t.Fatal(err)
			}
			pc, err := cons.ConsumePartition("sarama-kill", p, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			for next := int64(0); next < end; {
				select {
				case m := <-pc.Messages():
					out[pos{p, m.Offset}] = string(m.Value)
					next = m.Offset + 1
				case <-ctx.Done():
					t.Fatalf("sarama read partition %d up to %d of %d", p, next, end)
				}
			}
			pc.Close()
		}
		return out
	})
}

func TestKafkaGoThroughNodeKill(t *testing.T) {
	throughNodeKill(t, "kafkago-kill", false, func(ctx context.Context, brokers []string, a *ackLog) {
		transport := &kafkago.Transport{MetadataTTL: 250 * time.Millisecond}
		defer transport.CloseIdleConnections()
		w := &kafkago.Writer{Addr: kafkago.TCP(brokers...), Topic: "kafkago-kill", Balancer: &kafkago.RoundRobin{},
			RequiredAcks: kafkago.RequireAll, Async: true, MaxAttempts: 50, WriteBackoffMin: 100 * time.Millisecond,
			BatchTimeout: 10 * time.Millisecond, Transport: transport,
			Completion: func(msgs []kafkago.Message, err error) {
				for _, m := range msgs {
					if err != nil {
						a.fail()
						continue
					}
					a.ack(string(m.Value), int32(m.Partition), m.Offset)
				}
			}}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		warm := 0
		for i := 0; ctx.Err() == nil; i++ {
			<-tick.C
			err := w.WriteMessages(context.Background(), kafkago.Message{Value: []byte(fmt.Sprint("g", i))})
			// kafka-go's transport may answer its first lookups of a topic
			// from a metadata cache it is still filling.
			for ; errors.Is(err, kafkago.UnknownTopicOrPartition) && warm < 50; warm++ {
				time.Sleep(100 * time.Millisecond)
				err = w.WriteMessages(context.Background(), kafkago.Message{Value: []byte(fmt.Sprint("g", i))})
			}
			if err != nil {
				t.Errorf("kafka-go queue record %d: %v", i, err)
				return
			}
		}
		t.Logf("kafka-go: %d unknown-topic answers to its first writes", warm)
		if err := w.Close(); err != nil { // waits for the batches in flight
			t.Logf("kafka-go writer close: %v", err)
		}
	}, func(ctx context.Context, brokers []string) map[pos]string {
		out := map[pos]string{}
		for p := range 3 {
			conn, err := kafkago.DialLeader(ctx, "tcp", brokers[0], "kafkago-kill", p)
			if err != nil {
				t.Fatal(err)
			}
			end, err := conn.ReadLastOffset()
			conn.Close()
			if err != nil {
				t.Fatal(err)
			}
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: "kafkago-kill", Partition: p, MaxWait: 200 * time.Millisecond})
			for next := int64(0); next < end; {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("kafka-go read partition %d up to %d of %d: %v", p, next, end, errors.Join(err, r.Close()))
				}
				out[pos{int32(p), m.Offset}] = string(m.Value)
				next = m.Offset + 1
			}
			r.Close()
		}
		return out
	})
}
