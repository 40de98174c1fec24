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
)

// TestClusterACLsAndUsersReplicated: on a 3-node cluster with SASL and an
// authorizer, an ACL created through node 1 and a SCRAM user created
// through node 2 are in the replicated metadata: every node enforces the
// ACL (alice, denied before, may describe and write the topic through node
// 3) and accepts the user; deleting the ACL through node 3 denies her
// again everywhere.
func TestClusterACLsAndUsersReplicated(t *testing.T) {
	t.Parallel()
	admin := kgo.SASL(scram.Auth{User: "admin", Pass: "adminpw"}.AsSha512Mechanism())
	c := startClusterWith(t, 3, nil, func(cfg *Config) {
		cfg.SASLUsers = map[string]string{"admin": "adminpw", "alice": "alicepw"}
		cfg.Authorizer, cfg.SuperUsers = true, []string{"User:admin"}
	}, admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(c.client(1)).CreateTopic(ctx, 1, 3, nil, "ledger"); err != nil {
		t.Fatal(err)
	}
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alicepw"}.AsSha512Mechanism())
	// describe asks node id itself, as alice, whether she may describe
	// the topic.
	describe := func(id int32) int16 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[id]), alice)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ledger")}}
		resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
		}
	}
	for id := int32(1); id <= 3; id++ {
		if code := describe(id); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("node %d before the ACL: error %d, want TOPIC_AUTHORIZATION_FAILED", id, code)
		}
	}
	res, err := kadm.NewClient(c.client(1)).CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("ledger").Operations(kadm.OpWrite))
	if err != nil || res[0].Err != nil {
		t.Fatalf("create ACL through node 1: %v %+v", err, res)
	}
	for id := int32(1); id <= 3; id++ {
		eventually(fmt.Sprintf("node %d never enforced the ACL", id), func() bool { return describe(id) == 0 })
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[3]), alice, kgo.DefaultProduceTopic("ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("entry")}).FirstErr(); err != nil {
		t.Fatalf("alice produce with the replicated ACL: %v", err)
	}

	ups, err := kadm.NewClient(c.client(2)).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carolpw"}})
	if err != nil || ups["carol"].Err != nil {
		t.Fatalf("create carol through node 2: %v %+v", err, ups)
	}
	for id := int32(1); id <= 3; id++ {
		eventually(fmt.Sprintf("carol cannot log in through node %d", id), func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[id]), kgo.SASL(scram.Auth{User: "carol", Pass: "carolpw"}.AsSha256Mechanism()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.SeedBrokers()[0])
			return err == nil
		})
	}

	del, err := kadm.NewClient(c.client(3)).DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("ledger").Operations(kadm.OpAny))
	if err != nil || len(del) == 0 || len(del[0].Deleted) != 1 {
		t.Fatalf("delete the ACL through node 3: %v %+v", err, del)
	}
	for id := int32(1); id <= 3; id++ {
		eventually(fmt.Sprintf("node %d kept enforcing a deleted ACL", id), func() bool { return describe(id) == kerr.TopicAuthorizationFailed.Code })
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("late")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice produce after the ACL's deletion: %v", err)
	}
}
