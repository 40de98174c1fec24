package strand

import (
	"context"
	"crypto/tls"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/testcert"
)

// TestTLSListener: with Config.TLS the Kafka listener speaks TLS: a franz-go
// client that trusts the CA produces and consumes; under mutual TLS one
// without a client certificate is refused, and so is a plaintext client,
// while the broker keeps serving.
func TestTLSListener(t *testing.T) {
	t.Parallel()
	certs := testcert.MustSet(t, "app")
	ca, server, client := certs.CA, certs.Server, certs.Client
	b, err := Start(context.Background(), Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), TLS: &tls.Config{
		Certificates: []tls.Certificate{server.TLS},
		ClientCAs:    ca.Pool(),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	try := func(cfg *tls.Config) error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		opts := []kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("secure"), kgo.AllowAutoTopicCreation()}
		if cfg != nil {
			opts = append(opts, kgo.DialTLSConfig(cfg))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("over tls")}).FirstErr()
	}
	if err := try(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS}}); err != nil {
		t.Fatalf("mutual TLS client: %v", err)
	}
	if err := try(&tls.Config{RootCAs: ca.Pool()}); err == nil {
		t.Fatal("a client without a certificate produced under mutual TLS")
	}
	if err := try(nil); err == nil {
		t.Fatal("a plaintext client produced to the TLS listener")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("secure"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{client.TLS}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	fs := cons.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "over tls" {
		t.Fatalf("consumed %v: want exactly the TLS client's record", recs)
	}
}
