package cluster

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strandmq/strand/internal/vfs"
)

// TestRecords: records change a copy (an image never changes under its
// readers), a conflicting record leaves the image as it was, and removing
// a topic leaves its id's tombstone until ForgetDeleted.
func TestRecords(t *testing.T) {
	a, b := NewTopicID(), NewTopicID()
	im := NewImage("c1")
	next, err := im.With(PutTopic{Topic: Topic{Name: "a", ID: a, Partitions: 2, Configs: map[string]string{"retention.ms": "1"}}},
		PutTopic{Topic: Topic{Name: "b", ID: b, Partitions: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Topics()) != 0 || len(next.Topics()) != 2 {
		t.Fatalf("With changed its receiver or lost a topic: %d, %d topics", len(im.Topics()), len(next.Topics()))
	}
	for _, bad := range []Record{
		PutTopic{Topic: Topic{Name: "a", ID: NewTopicID(), Partitions: 3}}, // the name is taken by another id
		PutTopic{Topic: Topic{Name: "a", ID: a, Partitions: 1}},            // partitions never shrink
		PutTopic{Topic: Topic{Name: "c", ID: b, Partitions: 1}},            // an id names one topic
		PutTopic{Topic: Topic{Name: "", ID: a, Partitions: 1}},
		RemoveTopic{Name: "nope"},
	} {
		if got, err := next.With(bad); !errors.Is(err, ErrConflict) || got != next {
			t.Errorf("%T %+v: %v", bad, bad, err)
		}
	}
	after, err := next.With(PutTopic{Topic: Topic{Name: "a", ID: a, Partitions: 4}}, RemoveTopic{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if ta, _ := after.Topic("a"); ta.Partitions != 4 {
		t.Fatalf("a has %d partitions", ta.Partitions)
	}
	if _, ok := after.Topic("b"); ok || !after.IsDeleted(b) {
		t.Fatal("b removed without a tombstone")
	}
	if forgotten, _ := after.With(ForgetDeleted{IDs: []TopicID{b}}); forgotten.IsDeleted(b) {
		t.Fatal("ForgetDeleted kept the tombstone")
	}
}

// TestFileStore: the image survives a reopen and a power cut after Apply
// returned (meta.json is written atomically and synced), subscribers see
// every applied image, and a failed Apply changes nothing.
func TestFileStore(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	s, existed, err := OpenFileStore(fs, "/d")
	if err != nil || existed {
		t.Fatalf("fresh directory: existed %v, %v", existed, err)
	}
	if _, err := s.Apply(ClusterInit{ClusterID: "c1"}); err != nil {
		t.Fatal(err)
	}
	var seen []int
	cancel := s.Subscribe(func(im *Image) { seen = append(seen, len(im.Topics())) })
	ids := map[string]TopicID{}
	for i := range 3 {
		name := fmt.Sprint("t", i)
		ids[name] = NewTopicID()
		if _, err := s.Apply(PutTopic{Topic: Topic{Name: name, ID: ids[name], Partitions: int32(i + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Apply(RemoveTopic{Name: "t1"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.Apply(RemoveTopic{Name: "t1"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("removing twice: %v", err)
	}
	if fmt.Sprint(seen) != "[1 2 3 2]" {
		t.Fatalf("subscriber saw %v", seen)
	}
	cluster := s.Image().ClusterID()

	crashed := fs.CrashClone(vfs.CrashOptions{})
	for name, disk := range map[string]vfs.FS{"reopen": fs, "power cut": crashed} {
		r, existed, err := OpenFileStore(disk, "/d")
		if err != nil || !existed {
			t.Fatalf("%s: existed %v, %v", name, existed, err)
		}
		im := r.Image()
		if im.ClusterID() != "c1" || im.ClusterID() != cluster || len(im.Topics()) != 2 || !im.IsDeleted(ids["t1"]) {
			t.Fatalf("%s: cluster %s, topics %v, t1 tombstoned %v", name, im.ClusterID(), im.Topics(), im.IsDeleted(ids["t1"]))
		}
		if t2, _ := im.Topic("t2"); t2.ID != ids["t2"] || t2.Partitions != 3 {
			t.Fatalf("%s: t2 is %+v", name, t2)
		}
	}
}
