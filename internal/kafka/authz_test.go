package kafka

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strandmq/strand/internal/acl"
	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/sasl"
)

// secureServer is a SASL listener with an authorizer: "admin" is a super
// user, "alice" and "bob" are not.
func secureServer(t *testing.T, bcfg broker.Config, logs *lockedBuffer) *testServer {
	t.Helper()
	users, err := sasl.New(map[string]string{"admin": "adminpw", "alice": "alicepw", "bob": "bobpw"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{SASL: users, Authorizer: acl.New(acl.Config{SuperUsers: []acl.Principal{"User:admin"}})}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return startServer(t, bcfg, cfg)
}

// scramClient is a franz-go client authenticated as user (password
// user+"pw") with SCRAM-SHA-512.
func scramClient(t *testing.T, addr, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(scram.Auth{User: user, Pass: user + "pw"}.AsSha512Mechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestACLFranzGoDeniedThenAllowed: a real franz-go client over
// SASL/SCRAM is refused a produce with TOPIC_AUTHORIZATION_FAILED (and the
// denial is logged with principal, host, operation and resource); after a
// super user creates a prefixed Write ACL with kadm it produces, and only
// under that prefix; a Deny for it wins over the Allow; kadm describes and
// deletes the ACLs (the round trip of D-T1).
func TestACLFranzGoDeniedThenAllowed(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	ts := secureServer(t, broker.Config{DisableAutoCreateTopics: true}, &logs)
	createTopic(t, ts.b, "orders.eu", 1, nil)
	createTopic(t, ts.b, "payments", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(scramClient(t, ts.addr, "admin"))
	alice := scramClient(t, ts.addr, "alice")
	produce := func(topic string) error {
		return alice.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}

	if err := produce("orders.eu"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if s := logs.String(); !strings.Contains(s, "authorization denied") || !strings.Contains(s, "principal=User:alice") ||
		!strings.Contains(s, "host=127.0.0.1") || !strings.Contains(s, "operation=") || !strings.Contains(s, "resource=orders.eu") {
		t.Errorf("denial not logged with principal, host, operation and resource:\n%s", s)
	}

	allow := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders.").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite, kadm.OpDescribe)
	res, err := adm.CreateACLs(ctx, allow)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL: %v", r.Err)
		}
	}
	if err := produce("orders.eu"); err != nil {
		t.Errorf("produce under the allowed prefix: %v", err)
	}
	if err := produce("payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce outside the prefix: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// alice may not manage ACLs: Cluster:Alter.
	if res, err := kadm.NewClient(alice).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("payments").Operations(kadm.OpWrite)); err == nil && res[0].Err == nil {
		t.Error("alice created an ACL")
	} else if err == nil && !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice's CreateAcls: %v, want CLUSTER_AUTHORIZATION_FAILED", res[0].Err)
	}

	deny := kadm.NewACLs().Deny("User:alice").DenyHosts("*").Topics("orders.eu").Operations(kadm.OpWrite)
	if _, err := adm.CreateACLs(ctx, deny); err != nil {
		t.Fatal(err)
	}
	if err := produce("orders.eu"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce with a Deny beside the Allow: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().Deny().Operations(kadm.OpAny).AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		n += len(d.Described)
	}
	if n != 3 {
		t.Errorf("described %d ACLs, want 3: %+v", n, described)
	}
	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().Deny().Operations(kadm.OpAny).AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for _, d := range deleted {
		n += len(d.Deleted)
	}
	if n != 3 {
		t.Errorf("deleted %d ACLs, want 3", n)
	}
	if ts.s.cfg.Authorizer.Set().Len() != 0 {
		t.Errorf("%d ACLs left", ts.s.cfg.Authorizer.Set().Len())
	}
}
