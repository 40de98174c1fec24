package console

import (
	"context"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/record"
)

// TestTopicShowsLastStableOffset: while a transaction is open the topic
// page shows the last stable offset below the high watermark, marked, and
// the API reports it; once the transaction commits they meet.
func TestTopicShowsLastStableOffset(t *testing.T) {
	f := newFixture(t)
	if _, err := f.b.CreateTopic(broker.TopicSpec{Name: "tx", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := f.b.Partition("tx", 0)
	if err != nil {
		t.Fatal(err)
	}
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 42, 0, 0, true
	batch, err := record.Encode(0, []record.Record{{Value: []byte("pending")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, commit, err := p.AppendVerifiedAsync(batch, broker.AcksAll)
	if err == nil {
		err = commit.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	d := getJSON[TopicDetail](t, f, "/api/v1/topics/tx")
	if got := d.Partitions[0]; got.HighWatermark != 1 || got.LastStable != 0 {
		t.Fatalf("open transaction: high watermark %d, last stable %d; want 1 and 0", got.HighWatermark, got.LastStable)
	}
	if _, page := f.get(t, "/topics/tx"); !strings.Contains(page, `class="num lso">0 <span class="tag"`) || !strings.Contains(page, "open txn") {
		t.Fatalf("topic page does not mark the open transaction:\n%s", page)
	}
	if err := p.WriteMarker(ctx, 42, 0, true, 0); err != nil {
		t.Fatal(err)
	}
	d = getJSON[TopicDetail](t, f, "/api/v1/topics/tx")
	if got := d.Partitions[0]; got.HighWatermark != 2 || got.LastStable != 2 {
		t.Fatalf("committed: high watermark %d, last stable %d; want 2 and 2", got.HighWatermark, got.LastStable)
	}
	if _, page := f.get(t, "/topics/tx"); strings.Contains(page, "open txn") {
		t.Fatal("topic page still marks a committed transaction open")
	}
}
