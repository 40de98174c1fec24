package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// lateTxn drives one transactional id with raw requests, so a test can
// deliver a message of transaction N after transaction N+1 began: what a
// proxy that holds one request back would do, made deterministic.
type lateTxn struct {
	t     *testing.T
	ctx   context.Context
	cl    *kgo.Client
	id    string
	topic string
	pid   int64
	epoch int16
}

func newLateTxn(t *testing.T, ctx context.Context, addr, id, topic string, tv int) *lateTxn {
	opts := txnVersionOpts(tv)
	if tv >= 2 { // topics by name: Produce v13 names them by id
		v := kversion.Stable()
		v.SetMaxKeyVersion(int16(kmsg.Produce), 12)
		opts = []kgo.Opt{kgo.MaxVersions(v)}
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	l := &lateTxn{t: t, ctx: ctx, cl: cl, id: id, topic: topic}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	l.pid, l.epoch = resp.ProducerID, resp.ProducerEpoch
	return l
}

// produce sends one transactional record at epoch and seq and returns the
// partition's error code.
func (l *lateTxn) produce(epoch int16, seq int32, value string) int16 {
	l.t.Helper()
	batch, err := record.Encode(0, []record.Record{{Value: []byte(value)}}, record.BatchOptions{
		ProducerID: l.pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true,
	})
	if err != nil {
		l.t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = &l.id, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = l.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(l.ctx, l.cl)
	if err != nil {
		l.t.Fatalf("produce %q: %v", value, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// add is AddPartitionsToTxn (transaction version 1's explicit add).
func (l *lateTxn) add() {
	l.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = l.id, l.pid, l.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = l.topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(l.ctx, l.cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		l.t.Fatalf("AddPartitionsToTxn: %v %+v", err, resp)
	}
}

// end sends EndTxn at epoch and returns its code and the epoch it answers
// (transaction version 2 bumps it).
func (l *lateTxn) end(epoch int16, commit bool) (int16, int16) {
	l.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = l.id, l.pid, epoch, commit
	resp, err := req.RequestWith(l.ctx, l.cl)
	if err != nil {
		l.t.Fatalf("EndTxn: %v", err)
	}
	return resp.ErrorCode, resp.ProducerEpoch
}

// state is the transaction's state as DescribeTransactions answers.
func (l *lateTxn) state() string {
	l.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{l.id}
	resp, err := req.RequestWith(l.ctx, l.cl)
	if err != nil || len(resp.TransactionStates) != 1 {
		l.t.Fatalf("DescribeTransactions: %v", err)
	}
	return resp.TransactionStates[0].State
}

// read returns the values read from the topic at an isolation level once
// the partition is stable (no transaction open).
func (l *lateTxn) read(b *broker.Broker, level kgo.IsolationLevel) []string {
	l.t.Helper()
	p, _ := b.Partition(l.topic, 0)
	for deadline := time.Now().Add(10 * time.Second); p.LastStableOffset() != p.HighWatermark(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.t.Fatalf("LSO %d never reached HW %d", p.LastStableOffset(), p.HighWatermark())
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(l.cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.ConsumeTopics(l.topic),
		kgo.FetchIsolationLevel(level), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		l.t.Fatal(err)
	}
	defer c.Close()
	var got []string
	ctx, cancel := context.WithTimeout(l.ctx, time.Second)
	defer cancel()
	for ctx.Err() == nil {
		c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// A-T5, transaction version 2: a Produce and an EndTxn of transaction N
// delivered after transaction N+1 began are both refused — N's epoch is
// behind the one EndTxn bumped — and N+1 is untouched: it can still be
// aborted, and nothing of the late messages is ever read.
func TestTxnLateMessagesTV2(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "late2", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := newLateTxn(t, ctx, ts.addr, "late-tv2", "late2", 2)

	n := l.epoch
	if code := l.produce(n, 0, "N"); code != 0 {
		t.Fatalf("txn N produce: %v", kerr.ErrorForCode(code))
	}
	code, bumped := l.end(n, true)
	if code != 0 || bumped != n+1 {
		t.Fatalf("EndTxn N: %v, epoch %d (want %d)", kerr.ErrorForCode(code), bumped, n+1)
	}
	if code := l.produce(bumped, 0, "N+1"); code != 0 {
		t.Fatalf("txn N+1 produce: %v", kerr.ErrorForCode(code))
	}

	// The late Produce of N: fenced by the bumped epoch.
	if code := l.produce(n, 1, "N late"); code == 0 {
		t.Fatal("a Produce of transaction N was appended during N+1")
	} else {
		t.Logf("late Produce of N: %v", kerr.ErrorForCode(code))
	}
	// The late EndTxn of N (a retry of its commit): refused, N+1 goes on.
	if code, _ := l.end(n, true); code == 0 {
		t.Fatal("a late EndTxn of transaction N was accepted during N+1")
	} else {
		t.Logf("late EndTxn of N: %v", kerr.ErrorForCode(code))
	}
	if st := l.state(); st != "Ongoing" {
		t.Fatalf("N+1 after the late EndTxn: %s, want Ongoing", st)
	}
	if code, _ := l.end(bumped, false); code != 0 {
		t.Fatalf("abort N+1: %v", kerr.ErrorForCode(code))
	}
	if got := l.read(ts.b, kgo.ReadCommitted()); !slices.Equal(got, []string{"N"}) {
		t.Fatalf("read_committed: %q, want [N]", got)
	}
	if got := l.read(ts.b, kgo.ReadUncommitted()); !slices.Equal(got, []string{"N", "N+1"}) {
		t.Fatalf("read_uncommitted: %q, want [N N+1] (the late Produce never appended)", got)
	}
}

// A-T5, transaction version 1 (a client capped at Produce v11 and EndTxn
// v4, explicit AddPartitionsToTxn): a late Produce of transaction N that
// arrives after N ended and before N+1 added the partition is refused by
// the partition's check with the coordinator (KIP-890 part 1), so it
// cannot open a hanging transaction. A late EndTxn is the exposure KIP-890
// part 2 closes: the epoch is the same, so the coordinator cannot tell it
// from N+1's own, and a late commit of N commits N+1 (as in Kafka). The
// test pins that behaviour; docs/TRANSACTIONS.md names it.
func TestTxnLateMessagesTV1(t *testing.T) {
	ts := startServer(t, broker.Config{}, Config{})
	createTopic(t, ts.b, "late1", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := newLateTxn(t, ctx, ts.addr, "late-tv1", "late1", 1)

	l.add()
	if code := l.produce(l.epoch, 0, "N"); code != 0 {
		t.Fatalf("txn N produce: %v", kerr.ErrorForCode(code))
	}
	if code, _ := l.end(l.epoch, true); code != 0 {
		t.Fatalf("EndTxn N: %v", kerr.ErrorForCode(code))
	}
	for l.state() != "CompleteCommit" { // markers written
		time.Sleep(5 * time.Millisecond)
	}
	// The late Produce of N, before N+1 adds the partition: refused.
	if code := l.produce(l.epoch, 1, "N late"); code == 0 {
		t.Fatal("a late Produce of transaction N opened a transaction the coordinator does not know")
	} else {
		t.Logf("late Produce of N: %v", kerr.ErrorForCode(code))
	}
	p, _ := ts.b.Partition("late1", 0)
	if n := p.OpenTransactions(); n != 0 {
		t.Fatalf("%d transactions open on the partition after the refused late Produce", n)
	}

	// N+1 begins; a late EndTxn(commit) of N arrives: it commits N+1.
	l.add()
	if code := l.produce(l.epoch, 1, "N+1"); code != 0 {
		t.Fatalf("txn N+1 produce: %v", kerr.ErrorForCode(code))
	}
	if code, _ := l.end(l.epoch, true); code != 0 {
		t.Fatalf("late EndTxn of N: %v (transaction version 1 cannot tell it from N+1's)", kerr.ErrorForCode(code))
	}
	// N+1's own abort now finds the transaction committed.
	code, _ := l.end(l.epoch, false)
	t.Logf("N+1's own abort after the late commit: %v", kerr.ErrorForCode(code))
	if code == 0 {
		t.Fatal("N+1's abort was accepted after a late commit had committed it")
	}
	if got := l.read(ts.b, kgo.ReadCommitted()); !slices.Equal(got, []string{"N", "N+1"}) {
		t.Fatalf("read_committed: %q, want [N N+1] (the documented exposure)", got)
	}
}
