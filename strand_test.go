package strand_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/strandmq/strand"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// sarama's metrics registry keeps a process-wide ticker (cluster_test.go).
		goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
	)
}

// TestStartProduceFetchClose is the embed API in one breath: start on a free
// port, produce in process, read it back over the wire, close.
func TestStartProduceFetchClose(t *testing.T) {
	ctx := context.Background()
	b, err := strand.Start(ctx, strand.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CreateTopic("embed", 2, map[string]string{"retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	part, off, err := b.Produce("embed", []byte("key"), []byte("value"))
	if err != nil || off != 0 {
		t.Fatalf("produce: %d/%d %v", part, off, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"embed": {part: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	cl.Close()
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Key) != "key" || string(recs[0].Value) != "value" {
		t.Fatalf("fetched %v", recs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStartNeedsDir(t *testing.T) {
	if _, err := strand.Start(context.Background(), strand.Config{}); err == nil {
		t.Fatal("Start without Dir must fail")
	}
}
