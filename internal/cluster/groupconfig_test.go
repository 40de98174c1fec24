package cluster

import (
	"errors"
	"maps"
	"testing"
)

// Group configs are metadata.version 4: refused below it (an older node
// would not know the record), set and removed at it, kept through a
// snapshot and through the record codec.
func TestAlterGroupConfig(t *testing.T) {
	im := NewImage("c")
	set := AlterGroupConfig{Group: "g", Set: map[string]string{"share.delivery.count.limit": "3", "errors.deadletterqueue.topic.name": "g.dlq"}}
	if _, err := im.With(set); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("a group config at metadata.version 1 = %v, want ErrUnsupportedFeature", err)
	}
	im.features = map[string]int16{MetadataVersion: MetadataVersionGroupConfigs}
	next, err := im.With(set, AlterGroupConfig{Group: "g", Set: map[string]string{"share.auto.offset.reset": "earliest"}, Remove: []string{"share.delivery.count.limit"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"errors.deadletterqueue.topic.name": "g.dlq", "share.auto.offset.reset": "earliest"}
	if got := next.GroupConfigs("g"); !maps.Equal(got, want) {
		t.Fatalf("configs = %v, want %v", got, want)
	}
	if im.GroupConfigs("g") != nil {
		t.Fatal("the change leaked into the image it was applied to")
	}
	b, err := EncodeImage(next)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeImage(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.GroupConfigs("g"); !maps.Equal(got, want) {
		t.Fatalf("after a snapshot: %v, want %v", got, want)
	}
	enc, err := EncodeRecords([]Record{set})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeRecords(enc)
	if err != nil || len(recs) != 1 {
		t.Fatalf("decode: %v %v", recs, err)
	}
	if r, ok := recs[0].(AlterGroupConfig); !ok || !maps.Equal(r.Set, set.Set) {
		t.Fatalf("round trip: %#v", recs[0])
	}
	gone, err := next.With(AlterGroupConfig{Group: "g", Remove: []string{"errors.deadletterqueue.topic.name", "share.auto.offset.reset"}})
	if err != nil {
		t.Fatal(err)
	}
	if gone.GroupConfigs("g") != nil || gone.GroupsWithConfigs() != 0 {
		t.Fatalf("every config removed, the group remains: %v", gone.GroupConfigs("g"))
	}
}
