package cluster

import (
	"fmt"
	"reflect"
	"testing"
)

// TestCodecRoundTrip: every record survives encode and decode, and the
// decoder refuses what it does not know instead of skipping it.
func TestCodecRoundTrip(t *testing.T) {
	id := NewTopicID()
	recs := []Record{
		ClusterInit{ClusterID: "c1"},
		PutTopic{Topic: Topic{Name: "a", ID: id, Partitions: 3, Configs: map[string]string{"cleanup.policy": "compact"}}},
		RemoveTopic{Name: "a"},
		ForgetDeleted{IDs: []TopicID{id}},
		RegisterBroker{ID: 1, IncarnationID: "x", Endpoints: []Endpoint{{"CLIENT", "h", 9092}}, Rack: "r"},
		BrokerRegistrationChange{ID: 1, Epoch: 5, Fenced: -1, InControlledShutdown: 1},
		UnregisterBroker{ID: 1, Epoch: 5},
		Partition{TopicID: id, PartitionID: 0, Replicas: []NodeID{1, 2}, ISR: []NodeID{1}, Leader: 1},
		PartitionChange{TopicID: id, PartitionID: 0, ExpectedPartitionEpoch: 3, ISR: []NodeID{1, 2}, Leader: LeaderUnchanged},
		ProducerIDBlock{Broker: 2, First: 1000, Count: 1000},
		PutTopic{Topic: Topic{Name: "a", ID: id, Partitions: 4}, Prev: &Topic{Name: "a", ID: id, Partitions: 3}},
	}
	b, err := EncodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(b)
	if err != nil || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: %v, %v\nwant %v", got, err, recs)
	}
	for _, bad := range []string{
		`{"records":[{"type":"grow_topic","version":1,"data":{}}]}`,
		`{"records":[{"type":"put_topic","version":2,"data":{}}]}`,
		`{"records":[{"type":"remove_topic","version":1,"data":{"Name":"a","Extra":1}}]}`,
		`{"records":[],"more":true}`,
	} {
		if _, err := DecodeRecords([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}

// FuzzDecodeRecords: the decoder never panics, and what it accepts
// re-encodes to something it decodes the same way.
func FuzzDecodeRecords(f *testing.F) {
	b, _ := EncodeRecords([]Record{ClusterInit{ClusterID: "c"}, PutTopic{Topic: Topic{Name: "t", ID: NewTopicID(), Partitions: 1}}})
	f.Add(b)
	f.Add([]byte(`{"records":[{"type":"remove_topic","version":1,"data":{"Name":"t"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := DecodeRecords(data)
		if err != nil {
			return
		}
		again, err := EncodeRecords(recs)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := DecodeRecords(again); err != nil || fmt.Sprint(back) != fmt.Sprint(recs) {
			t.Fatalf("re-decode: %v, %v", back, err)
		}
	})
}
