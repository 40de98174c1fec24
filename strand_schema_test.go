package strand_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/strandmq/strand"
)

// TestSchemaRegistryListener drives the embedded registry with franz-go's
// pkg/sr client: schemas are kept in _schemas, which clients cannot write,
// and a restart serves them again with ids going on from there.
func TestSchemaRegistryListener(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func() (*strand.Broker, *sr.Client) {
		b, err := strand.Start(ctx, strand.Config{Dir: dir, SchemaRegistryAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr()))
		if err != nil {
			t.Fatal(err)
		}
		return b, cl
	}
	b, cl := start()
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	s, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: v1})
	if err != nil || s.ID != 1 {
		t.Fatalf("create: %+v %v", s, err)
	}

	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	err = kc.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte(`{"keytype":"NOOP","magic":0}`)}).FirstErr()
	kc.Close()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("a client's produce to _schemas: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, cl = start()
	defer b.Close()
	got, err := cl.SchemaByID(ctx, 1)
	if err != nil || got.Schema != v1 {
		t.Fatalf("after restart: %+v %v", got, err)
	}
	s2, err := cl.CreateSchema(ctx, "names-value", sr.Schema{Schema: `{"type":"string"}`})
	if err != nil || s2.ID != 2 {
		t.Fatalf("create after restart: %+v %v", s2, err)
	}
}
