package kafka_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A-T8 with sarama: a sarama transactional producer (transaction version
// 1: explicit AddPartitionsToTxn; sarama 2.5 and 3.6 protocol levels) runs
// 200 transactions of 5 records over 3 partitions, aborting 30%; a
// read_committed franz-go consumer sees exactly the committed records and
// a read_uncommitted one all of them.
func TestSaramaTransactions(t *testing.T) {
	t.Parallel()
	for _, v := range []sarama.KafkaVersion{sarama.V2_5_0_0, sarama.V3_6_0_0} {
		t.Run(v.String(), func(t *testing.T) {
			b := start(t, t.TempDir())
			defer b.Close()
			topic := "sarama-tx"
			adm := adminClient(t, b.Addr())
			if r, err := adm.CreateTopic(context.Background(), 3, 1, nil, topic); err != nil || r.Err != nil {
				t.Fatalf("create topic: %v %v", err, r.Err)
			}
			cfg := saramaConfig(v)
			cfg.Producer.Transaction.ID = "sarama-" + v.String()
			cfg.Producer.Partitioner = sarama.NewRoundRobinPartitioner
			prod, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			rng := rand.New(rand.NewPCG(3, uint64(v.String()[0])))
			committed := map[string]bool{}
			const txns, per = 200, 5
			aborted := 0
			for i := range txns {
				if err := prod.BeginTxn(); err != nil {
					t.Fatalf("txn %d: begin: %v", i, err)
				}
				var vals []string
				for j := range per {
					val := fmt.Sprintf("t%03d-%d", i, j)
					if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(val)}); err != nil {
						t.Fatalf("txn %d: send: %v", i, err)
					}
					vals = append(vals, val)
				}
				if rng.IntN(10) < 3 {
					if err := prod.AbortTxn(); err != nil {
						t.Fatalf("txn %d: abort: %v", i, err)
					}
					aborted++
					continue
				}
				if err := prod.CommitTxn(); err != nil {
					t.Fatalf("txn %d: commit: %v", i, err)
				}
				for _, val := range vals {
					committed[val] = true
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			read := func(level kgo.IsolationLevel, n int) map[string]int {
				c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(level),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				got, total := map[string]int{}, 0
				for total < n && ctx.Err() == nil {
					c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got[string(r.Value)]++; total++ })
				}
				return got
			}
			rc := read(kgo.ReadCommitted(), len(committed))
			for val, n := range rc {
				if !committed[val] || n != 1 {
					t.Fatalf("read_committed saw %q %d times (committed: %v)", val, n, committed[val])
				}
			}
			if len(rc) != len(committed) {
				t.Fatalf("read_committed saw %d of %d committed records", len(rc), len(committed))
			}
			if all := read(kgo.ReadUncommitted(), txns*per); len(all) != txns*per {
				t.Fatalf("read_uncommitted saw %d of %d records", len(all), txns*per)
			}
			t.Logf("sarama %s: %d transactions, %d aborted; read_committed saw exactly the %d committed records", v, txns, aborted, len(committed))
		})
	}
}
