package kafka

// share.isolation.level against franz-go's transactional producer and
// share consumer: a read_committed share group hands out committed
// records only, and only once their transaction ended; a read_uncommitted
// one hands out aborted records too. Neither hands out a transaction
// marker.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/share"
)

// txnProduce writes values in one transaction of cl and ends it (commit
// or abort); end=false leaves it open.
func txnProduce(t *testing.T, cl *kgo.Client, values []string, end bool, commit kgo.TransactionEndTry) {
	t.Helper()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + "-" + strconv.Itoa(i)
	}
	return out
}

func TestShareGroupIsolation(t *testing.T) {
	for _, tc := range []struct {
		level        string
		wantAborted  bool
		wantBeforeTx int // records accepted while the last transaction is still open
	}{
		{level: share.ReadCommitted, wantAborted: false, wantBeforeTx: 4},
		{level: share.ReadUncommitted, wantAborted: true, wantBeforeTx: 4 + 4 + 3 + 2},
	} {
		t.Run(tc.level, func(t *testing.T) {
			h := newShareBroker(t)
			topic, group := "ledger", "auditors"
			createTopic(t, h.b, topic, 1, nil)
			h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200", share.ConfigIsolationLevel, tc.level)
			tx, err := kgo.NewClient(kgo.SeedBrokers(h.addr), kgo.TransactionalID("ledger-tx"), kgo.DefaultProduceTopic(topic))
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			txnProduce(t, tx, values("committed", 4), true, kgo.TryCommit)
			txnProduce(t, tx, values("aborted", 4), true, kgo.TryAbort)
			txnProduce(t, tx, values("late", 3), false, kgo.TryCommit) // open: the LSO stays at its first record
			produceN(t, h.addr, topic, "plain", 2)                     // above the LSO

			var log deliveryLog
			c := startShareConsumer(t, h.addr, group, topic, "c0", &log, acceptAll)
			defer c.close()
			waitShare(t, "the records below the open transaction accepted", 30*time.Second, func() bool { return len(log.accepted()) >= tc.wantBeforeTx })
			if tc.level == share.ReadCommitted {
				// The share-partition never grew past the open
				// transaction's first record.
				for _, st := range h.b.Share().Manager.Stats(group) {
					if st.End > 4+4+1+1 { // 4 committed, their marker, 4 aborted, their marker
						t.Errorf("window end %d passed the last stable offset %d", st.End, 10)
					}
				}
			}
			if err := tx.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			want := 4 + 3 + 2
			if tc.wantAborted {
				want += 4
			}
			waitShare(t, "every deliverable record accepted", 30*time.Second, func() bool { return len(log.accepted()) == want })

			got := log.accepted()
			for v, n := range got {
				if n != 1 {
					t.Errorf("%s accepted %d times", v, n)
				}
				if strings.HasPrefix(v, "aborted") != tc.wantAborted && strings.HasPrefix(v, "aborted") {
					t.Errorf("%s (of an aborted transaction) was delivered to a %s group", v, tc.level)
				}
			}
			for _, p := range []string{"committed", "late", "plain"} {
				for _, v := range values(p, 1) {
					if got[v] != 1 {
						t.Errorf("%s accepted %d times, want once", v, got[v])
					}
				}
			}
			// No transaction marker was ever handed out: the group
			// acquired exactly the data records it delivered.
			for _, cn := range h.b.Share().Manager.Counters() {
				if cn.Group == group && cn.Acquired != int64(len(log.snapshot())) {
					t.Errorf("%d records acquired, %d delivered: markers or aborted records were acquired", cn.Acquired, len(log.snapshot()))
				}
			}
			for _, st := range h.b.Share().Manager.Stats(group) {
				if st.InFlight != 0 {
					t.Errorf("%+v in flight after every record was accepted", st.Stats)
				}
			}
		})
	}
}
