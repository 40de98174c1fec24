package cluster

import (
	"errors"
	"testing"
)

// TestBrokerRecords: Kafka's registration rules — a new incarnation takes
// the entry's index as its epoch and starts fenced; the same incarnation
// re-registering keeps epoch and fence state; a change or unregistration
// with a stale epoch is a no-op.
func TestBrokerRecords(t *testing.T) {
	im := NewImage("c")
	im, _ = im.WithAt(10, RegisterBroker{ID: 1, IncarnationID: "i1", Endpoints: []Endpoint{{"CLIENT", "h", 9092}}})
	b, _ := im.Broker(1)
	if b.Epoch != 10 || !b.Fenced {
		t.Fatalf("new registration: %+v", b)
	}
	im, _ = im.WithAt(11, BrokerRegistrationChange{ID: 1, Epoch: 10, Fenced: -1})
	im, _ = im.WithAt(12, RegisterBroker{ID: 1, IncarnationID: "i1", Rack: "r1"})
	if b, _ := im.Broker(1); b.Epoch != 10 || b.Fenced || b.Rack != "r1" {
		t.Fatalf("same incarnation again: %+v", b)
	}
	im, _ = im.WithAt(13, RegisterBroker{ID: 1, IncarnationID: "i2"})
	if b, _ := im.Broker(1); b.Epoch != 13 || !b.Fenced {
		t.Fatalf("a restarted process: %+v", b)
	}
	im, _ = im.WithAt(14, BrokerRegistrationChange{ID: 1, Epoch: 10, Fenced: -1}, UnregisterBroker{ID: 1, Epoch: 10})
	if b, ok := im.Broker(1); !ok || !b.Fenced {
		t.Fatalf("stale epoch changed the broker: %+v %v", b, ok)
	}
	im, _ = im.WithAt(15, UnregisterBroker{ID: 1, Epoch: 13})
	if _, ok := im.Broker(1); ok {
		t.Fatal("unregistration with the current epoch kept the broker")
	}
}

// TestPartitionRecords: a partition is registered once, under an existing
// topic; a change applies only at the expected partition epoch, always
// bumps it, and bumps the leader epoch only when the leader changes;
// removing the topic removes its partitions.
func TestPartitionRecords(t *testing.T) {
	id := NewTopicID()
	im, err := NewImage("c").With(PutTopic{Topic: Topic{Name: "t", ID: id, Partitions: 2}},
		Partition{TopicID: id, PartitionID: 0, Replicas: []NodeID{1, 2, 3}, ISR: []NodeID{1, 2, 3}, Leader: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Record{
		Partition{TopicID: id, PartitionID: 0, Replicas: []NodeID{1}, Leader: 1},           // registered
		Partition{TopicID: id, PartitionID: 2, Replicas: []NodeID{1}, Leader: 1},           // no such partition
		Partition{TopicID: NewTopicID(), PartitionID: 0, Replicas: []NodeID{1}, Leader: 1}, // no such topic
		PartitionChange{TopicID: id, PartitionID: 0, ExpectedPartitionEpoch: 1, Leader: 2}, // stale CAS
	} {
		if _, err := im.With(bad); !errors.Is(err, ErrConflict) {
			t.Errorf("%T %+v: %v", bad, bad, err)
		}
	}
	im, _ = im.With(PartitionChange{TopicID: id, PartitionID: 0, ExpectedPartitionEpoch: 0, ISR: []NodeID{1, 2}, Leader: LeaderUnchanged})
	p, _ := im.Partition(id, 0)
	if p.PartitionEpoch != 1 || p.LeaderEpoch != 0 || len(p.ISR) != 2 || p.Leader != 1 {
		t.Fatalf("ISR shrink: %+v", p)
	}
	im, _ = im.With(PartitionChange{TopicID: id, PartitionID: 0, ExpectedPartitionEpoch: 1, Leader: 2})
	if p, _ := im.Partition(id, 0); p.PartitionEpoch != 2 || p.LeaderEpoch != 1 || p.Leader != 2 {
		t.Fatalf("leader change: %+v", p)
	}
	im, _ = im.With(RemoveTopic{Name: "t"})
	if _, ok := im.Partition(id, 0); ok {
		t.Fatal("a removed topic's partition is still registered")
	}
}

// TestProducerIDBlocks: blocks never overlap — one proposed from a stale
// view of the next free id is refused — and may skip ids.
func TestProducerIDBlocks(t *testing.T) {
	im := NewImage("c")
	im, err := im.With(ProducerIDBlock{Broker: 1, First: 0, Count: 1000})
	if err != nil || im.NextProducerID() != 1000 {
		t.Fatalf("first block: %v, next %d", err, im.NextProducerID())
	}
	if _, err := im.With(ProducerIDBlock{Broker: 2, First: 0, Count: 1000}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an overlapping block: %v", err)
	}
	if im, err = im.With(ProducerIDBlock{Broker: 2, First: 5000, Count: 1000}); err != nil || im.NextProducerID() != 6000 {
		t.Fatalf("a block above the next free id: %v, next %d", err, im.NextProducerID())
	}
}

// TestPutTopicCompareAndSet: a topic change computed from a topic that has
// changed since is refused; one computed from the current topic applies.
func TestPutTopicCompareAndSet(t *testing.T) {
	id := NewTopicID()
	v1 := Topic{Name: "t", ID: id, Partitions: 1, Configs: map[string]string{"retention.ms": "1"}}
	im, err := NewImage("c").With(PutTopic{Topic: v1})
	if err != nil {
		t.Fatal(err)
	}
	v2 := Topic{Name: "t", ID: id, Partitions: 1, Configs: map[string]string{"retention.ms": "2"}}
	if im, err = im.With(PutTopic{Topic: v2, Prev: &v1}); err != nil {
		t.Fatal(err)
	}
	stale := Topic{Name: "t", ID: id, Partitions: 2, Configs: map[string]string{"retention.ms": "1"}} // grown from v1
	if _, err := im.With(PutTopic{Topic: stale, Prev: &v1}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a change computed from an older topic: %v, want ErrConflict", err)
	}
	if got, _ := im.Topic("t"); got.Configs["retention.ms"] != "2" {
		t.Fatalf("topic after the refused change: %+v", got)
	}
}
