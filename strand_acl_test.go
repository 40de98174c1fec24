package strand

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/testcert"
)

// TestACLMutualTLSPersisted: under mutual TLS with an authorizer, the
// principal is the client certificate's subject mapped by
// ssl.principal.mapping.rules (CN=app → User:app); app is denied until the
// super user (CN=admin → User:admin) grants it Write with kadm, and the
// grant survives a restart of the broker on the same data directory
// (meta.json).
func TestACLMutualTLSPersisted(t *testing.T) {
	t.Parallel()
	certs := testcert.MustSet(t, "app")
	admin, err := certs.CA.Client("admin")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := func() *Broker {
		b, err := Start(context.Background(), Config{Dir: dir, Logger: slog.New(slog.DiscardHandler),
			TLS:        &tls.Config{Certificates: []tls.Certificate{certs.Server.TLS}, ClientCAs: certs.CA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert},
			Authorizer: true, SuperUsers: []string{"User:admin"}, PrincipalMappingRules: `RULE:^CN=(.*?)$/$1/,DEFAULT`,
			DisableAutoCreateTopics: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(b *Broker, cert tls.Certificate) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("secure"), kgo.RequestRetries(0),
			kgo.DialTLSConfig(&tls.Config{RootCAs: certs.CA.Pool(), Certificates: []tls.Certificate{cert}}))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	b := start()
	adm := kadm.NewClient(client(b, admin.TLS))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secure"); err != nil {
		t.Fatal(err)
	}
	app := client(b, certs.Client.TLS)
	if err := app.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("app without an ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:app").AllowHosts("*").Topics("secure").Operations(kadm.OpWrite))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %v", err, res)
	}
	if err := app.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("app with Write: %v", err)
	}
	app.Close()
	adm.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = start()
	defer b.Close()
	app = client(b, certs.Client.TLS)
	defer app.Close()
	if err := app.ProduceSync(ctx, &kgo.Record{Value: []byte("after restart")}).FirstErr(); err != nil {
		t.Fatalf("app after a restart: %v (the ACL was not persisted)", err)
	}
}
