package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/broker"
)

// TestInternalTopicsRefusedToSuperUser (issue 16 item 4): the internal
// topics are the broker's whatever the ACLs say — a super user, allowed
// everything by the authorizer, can neither produce to __consumer_offsets
// or __transaction_state (INVALID_TOPIC_EXCEPTION), delete them, nor delete
// their records.
func TestInternalTopicsRefusedToSuperUser(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := scramClient(t, ts.addr, "admin")
	adm := kadm.NewClient(admin)
	// A transaction with an offset commit makes both internal topics exist.
	createTopic(t, ts.b, "t", 1, nil)
	txn := scramClient(t, ts.addr, "admin", kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CommitOffsets(ctx, "g", kadm.Offsets{"t": {0: kadm.Offset{At: 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{broker.ConsumerOffsetsTopic, broker.TransactionStateTopic} {
		err := admin.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("forged")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("super user produces to %s: %v, want INVALID_TOPIC_EXCEPTION", topic, err)
		}
		if _, err := ts.b.Topic(topic); err != nil {
			t.Fatalf("%s does not exist: %v", topic, err)
		}
		res, err := adm.DeleteTopics(ctx, topic)
		if err == nil && res[topic].Err == nil {
			t.Errorf("super user deleted %s", topic)
		}
		if _, err := ts.b.Topic(topic); err != nil {
			t.Errorf("%s gone after a DeleteTopics: %v", topic, err)
		}
		dr, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: kadm.Offset{At: -1}}})
		if err == nil && dr.Error() == nil {
			t.Errorf("super user deleted the records of %s", topic)
		}
	}
}
