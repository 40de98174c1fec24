package strand

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strandmq/strand/internal/wire"
)

// principalBytes is RequestPrincipal as a Kafka broker's
// DefaultKafkaPrincipalBuilder serializes User:name (version 0).
func principalBytes(name string) []byte {
	d := kmsg.NewDefaultPrincipalData()
	d.Type, d.Name = "User", name
	return d.AppendTo(nil)
}

// envelopeCluster is a 3-node cluster with SASL users admin (a super
// user), alice and carol, and an authorizer; alice may Describe every
// topic but delete none, carol has no ACL. superCarol, when set, makes
// carol a super user on that node only.
type envelopeCluster struct {
	*testCluster
	superCarol int32
}

func startEnvelopeCluster(t *testing.T) *envelopeCluster {
	t.Helper()
	ec := &envelopeCluster{}
	admin := kgo.SASL(scram.Auth{User: "admin", Pass: "adminpw"}.AsSha512Mechanism())
	ec.testCluster = startClusterWith(t, 3, nil, func(cfg *Config) {
		cfg.SASLUsers = map[string]string{"admin": "adminpw", "alice": "alicepw", "carol": "carolpw"}
		cfg.Authorizer, cfg.SuperUsers = true, []string{"User:admin"}
		if cfg.NodeID == ec.superCarol {
			cfg.SuperUsers = append(cfg.SuperUsers, "User:carol")
		}
	}, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(ec.client(1)).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").
		Topics("*").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	if err != nil || res[0].Err != nil {
		t.Fatalf("grant alice Describe: %v %+v", err, res)
	}
	return ec
}

// exists reports whether node id's metadata lists topic.
func (ec *envelopeCluster) exists(id int32, topic string) bool {
	code := ec.metadata(id, []string{topic}).Topics[0].ErrorCode
	if code != 0 && code != kerr.UnknownTopicOrPartition.Code {
		ec.t.Fatalf("metadata of %s on node %d: %v", topic, id, kerr.ErrorForCode(code))
	}
	return code == 0
}

// controller returns the controller's node id and internal listener.
func (ec *envelopeCluster) controller() (int32, string) {
	ec.t.Helper()
	id, addr, err := ec.nodes[1].b.ControllerEndpoint()
	if err != nil {
		ec.t.Fatal(err)
	}
	return int32(id), addr
}

// sendEnvelope sends the controller's internal listener, with no
// credentials, an Envelope wrapping DeleteTopics of topic with principal
// as its RequestPrincipal, and returns the Envelope's error and the
// inner response (nil when the Envelope failed).
func (ec *envelopeCluster) sendEnvelope(ctx context.Context, topic string, principal []byte) (int16, *kmsg.DeleteTopicsResponse) {
	ec.t.Helper()
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr(topic)
	del.Topics, del.TimeoutMillis = append(del.Topics, dt), 10000
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = wire.AppendRequest(nil, del, 7, "attacker")[4:]
	env.RequestPrincipal = principal
	env.ClientHostAddress = []byte{127, 0, 0, 1}
	for {
		_, addr := ec.controller()
		conn, err := wire.Dialer{}.Dial(ctx, addr, "attacker")
		if err != nil {
			ec.t.Fatal(err)
		}
		resp, err := conn.RoundTrip(env, time.Now().Add(20*time.Second))
		conn.Close()
		if err != nil {
			ec.t.Fatalf("Envelope to %s: %v", addr, err)
		}
		er := resp.(*kmsg.EnvelopeResponse)
		switch {
		case er.ErrorCode == kerr.NotController.Code && ctx.Err() == nil:
			time.Sleep(100 * time.Millisecond) // the controller moved; ask again
			continue
		case er.ErrorCode != 0:
			return er.ErrorCode, nil
		}
		if len(er.ResponseData) < 4 {
			ec.t.Fatalf("Envelope's inner response is %d bytes", len(er.ResponseData))
		}
		inner, err := wire.ReadResponse(del, er.ResponseData[4:])
		if err != nil {
			ec.t.Fatal(err)
		}
		return 0, inner.(*kmsg.DeleteTopicsResponse)
	}
}

// TestClusterEnvelopeAuthorizesItsPrincipal: the request inside an
// Envelope sent straight to the controller's internal listener, with no
// credentials, is authorized as the principal the Envelope carries (as
// Kafka's EnvelopeUtils and KafkaApis do): none (or one that does not
// decode) is PRINCIPAL_DESERIALIZATION_FAILURE, User:alice, who may not
// delete, gets TOPIC_AUTHORIZATION_FAILED, and in both cases the topic
// stays; User:admin, a super user, deletes it. The same DeleteTopics sent
// bare to the internal listener is not served at all.
func TestClusterEnvelopeAuthorizesItsPrincipal(t *testing.T) {
	t.Parallel()
	ec := startEnvelopeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(ec.client(1)).CreateTopic(ctx, 1, 3, nil, "victim"); err != nil {
		t.Fatal(err)
	}
	ctl, _ := ec.controller()
	for _, tc := range []struct {
		name      string
		principal []byte
	}{
		{"no RequestPrincipal", nil},
		{"a RequestPrincipal that does not decode", []byte("User:admin")},
	} {
		if code, _ := ec.sendEnvelope(ctx, "victim", tc.principal); code != kerr.PrincipalDeserializationFailure.Code {
			t.Errorf("%s: Envelope error %v, want PRINCIPAL_DESERIALIZATION_FAILURE", tc.name, kerr.ErrorForCode(code))
		}
	}
	if !ec.exists(ctl, "victim") {
		t.Fatal("an Envelope without a principal deleted the topic")
	}

	// Bare, without an Envelope: the internal listener serves only what
	// nodes send each other, so the connection closes unanswered.
	_, addr := ec.controller()
	conn, err := wire.Dialer{}.Dial(ctx, addr, "attacker")
	if err != nil {
		t.Fatal(err)
	}
	bare := kmsg.NewPtrDeleteTopicsRequest()
	bare.SetVersion(6)
	bare.Topics, bare.TimeoutMillis = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("victim")}}, 10000
	if resp, err := conn.RoundTrip(bare, time.Now().Add(20*time.Second)); err == nil {
		t.Errorf("a bare DeleteTopics on the internal listener was answered: %+v", resp)
	}
	conn.Close()
	if !ec.exists(ctl, "victim") {
		t.Fatal("a bare DeleteTopics on the internal listener, without credentials, deleted the topic")
	}

	code, resp := ec.sendEnvelope(ctx, "victim", principalBytes("alice"))
	if code != 0 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("Envelope as User:alice: envelope error %v, inner %+v; want the inner response TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code), resp)
	}
	if !ec.exists(ctl, "victim") {
		t.Fatal("an Envelope as User:alice, who may not delete it, deleted the topic")
	}

	code, resp = ec.sendEnvelope(ctx, "victim", principalBytes("admin"))
	if code != 0 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("Envelope as User:admin: envelope error %v, inner %+v; want the topic deleted", kerr.ErrorForCode(code), resp)
	}
	if ec.exists(ctl, "victim") {
		t.Fatal("the controller answered admin's delete but still lists the topic")
	}
}

// TestClusterForwardedDeleteAuthorized: DeleteTopics through a node that
// is not the controller, end to end. alice, without Delete, is refused
// (by that node, before it forwards); admin's delete is forwarded and
// done. carol is a super user on the forwarding node only: that node lets
// her request through and forwards it, and the controller, where she has
// no ACL, refuses it — the topic stays.
func TestClusterForwardedDeleteAuthorized(t *testing.T) {
	t.Parallel()
	ec := startEnvelopeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(ec.client(1))
	for _, topic := range []string{"fwd.alice", "fwd.carol"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	ctl, _ := ec.controller()
	other := ctl%3 + 1
	// deleteVia sends DeleteTopics for topic to node id itself (kadm
	// would send it to the controller, which Metadata names).
	deleteVia := func(id int32, user, topic string) error {
		t.Helper()
		// Not ec.client: its options already log in as admin.
		cl, err := kgo.NewClient(kgo.SeedBrokers(ec.addrs[id]), kgo.SASL(scram.Auth{User: user, Pass: user + "pw"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrDeleteTopicsRequest()
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(topic)
		req.Topics, req.TimeoutMillis = append(req.Topics, dt), 10000
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		if err != nil {
			t.Fatalf("DeleteTopics %s as %s through node %d: %v", topic, user, id, err)
		}
		return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err := deleteVia(other, "alice", "fwd.alice"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's delete through node %d (controller %d): %v, want TOPIC_AUTHORIZATION_FAILED", other, ctl, err)
	}
	if !ec.exists(ctl, "fwd.alice") {
		t.Fatal("alice's refused delete deleted the topic")
	}
	if err := deleteVia(other, "admin", "fwd.alice"); err != nil {
		t.Fatalf("admin's delete through node %d: %v", other, err)
	}
	if ec.exists(other, "fwd.alice") {
		t.Fatalf("node %d answered admin's delete but still lists the topic", other)
	}

	// carol: a super user on node other only (it restarts so).
	if err := ec.nodes[other].Close(); err != nil {
		t.Fatal(err)
	}
	ec.superCarol = other
	if err := ec.start(other); err != nil {
		t.Fatal(err)
	}
	ec.waitLive(1, 2, 3)
	if now, _ := ec.controller(); now != ctl {
		t.Skipf("the controller moved from %d to %d while node %d restarted", ctl, now, other)
	}
	if err := deleteVia(other, "carol", "fwd.carol"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("carol's delete through node %d, where she is a super user (controller %d, where she has no ACL): %v, want TOPIC_AUTHORIZATION_FAILED from the controller",
			other, ctl, err)
	}
	if !ec.exists(ctl, "fwd.carol") {
		t.Fatal(fmt.Sprintf("carol's forwarded delete deleted the topic on controller %d", ctl))
	}
}
