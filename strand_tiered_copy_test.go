package strand_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// remote.log.copy.disable (Kafka 3.9): a tiered topic with it set uploads
// nothing and keeps its local data by the total retention (here
// unlimited, so local.retention.bytes=1 deletes nothing); ListOffsets -6
// is -1. Set back to false, the sealed segments go to the store and local
// retention applies again; the records read from 0 throughout.
func TestTieredCopyDisable(t *testing.T) {
	store := startObjectStore(t)
	b, cl := startTiered(t, filepath.Join(t.TempDir(), "data"), store)
	defer func() {
		cl.Close()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	const topic, n = "readonly", 300
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable":   kadm.StringPtr("true"),
		"remote.log.copy.disable": kadm.StringPtr("true"),
		"local.retention.bytes":   kadm.StringPtr("1"),
		"segment.bytes":           kadm.StringPtr("8192"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	b.TierPass(false)
	b.ApplyRetention()
	if tiered, local, pending := listOffset(t, cl, topic, -5), listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -6); tiered != -1 || local != 0 || pending != -1 {
		t.Fatalf("with remote.log.copy.disable: latest tiered %d, earliest local %d, earliest pending upload %d; want -1, 0, -1", tiered, local, pending)
	}

	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "remote.log.copy.disable", Value: kadm.StringPtr("false")},
	}, topic)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	b.TierPass(false)
	b.ApplyRetention()
	tiered, local := listOffset(t, cl, topic, -5), listOffset(t, cl, topic, -4)
	if tiered <= 0 || local != tiered+1 {
		t.Fatalf("copy enabled again: latest tiered %d, earliest local %d; want uploads and local retention after them", tiered, local)
	}
	for i, r := range consumeFromZero(t, b.Addr(), topic, n)[:n] {
		if r.Offset != int64(i) || string(r.Value) != tieredValue(i) {
			t.Fatalf("record %d: offset %d", i, r.Offset)
		}
	}
}
