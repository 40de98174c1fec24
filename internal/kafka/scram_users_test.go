package kafka

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strandmq/strand/internal/broker"
)

// TestScramUsersOverTheAPI: a super user creates a SCRAM user with kadm
// (AlterUserScramCredentials); the user then authenticates with
// SCRAM-SHA-256, SCRAM-SHA-512 (after a second upsertion) and PLAIN, and
// DescribeUserScramCredentials lists its mechanisms and iterations only;
// the data directory holds no password; Kafka's error rules answer bad
// requests; a non-super user may not alter users; deleting the user closes
// its live connection and stops it logging in.
func TestScramUsersOverTheAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := secureServer(t, broker.Config{Dir: dir}, nil)
	createTopic(t, ts.b, "carols", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := scramClient(t, ts.addr, "admin")
	adm := kadm.NewClient(admin)
	const password = "carol-s3cret-passw0rd"
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password}})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("create carol: %v %+v", err, res)
	}
	login := func(opts ...kgo.Opt) error {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(ts.addr), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		_, err = cl.Request(ctx, kmsg.NewPtrApiVersionsRequest())
		if err == nil {
			_, err = cl.Request(ctx, kmsg.NewPtrMetadataRequest())
		}
		return err
	}
	if err := login(kgo.SASL(scram.Auth{User: "carol", Pass: password}.AsSha256Mechanism())); err != nil {
		t.Fatalf("carol over SCRAM-SHA-256: %v", err)
	}
	if err := login(kgo.SASL(scram.Auth{User: "carol", Pass: "wrong"}.AsSha256Mechanism())); err == nil {
		t.Fatal("carol logged in with a wrong password")
	}
	if err := login(kgo.SASL(plain.Auth{User: "carol", Pass: password}.AsMechanism())); err != nil {
		t.Fatalf("carol over PLAIN: %v", err)
	}
	if err := login(kgo.SASL(plain.Auth{User: "carol", Pass: "wrong"}.AsMechanism())); err == nil {
		t.Fatal("carol logged in over PLAIN with a wrong password")
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: password}}); err != nil {
		t.Fatal(err)
	}
	if err := login(kgo.SASL(scram.Auth{User: "carol", Pass: password}.AsSha512Mechanism())); err != nil {
		t.Fatalf("carol over SCRAM-SHA-512: %v", err)
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["carol"]; d.Err != nil || len(d.CredInfos) != 2 || d.CredInfos[0].Iterations+d.CredInfos[1].Iterations != 4096+8192 {
		t.Fatalf("describe: %+v", described)
	}
	if d, err := adm.DescribeUserSCRAMs(ctx, "nobody"); err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe an unknown user: %v %+v", err, d)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(meta), password) || !strings.Contains(string(meta), "carol") {
		t.Fatalf("meta.json holds a password, or no credential:\n%s", meta)
	}

	// Kafka's rules, over the raw API.
	alter := func(req *kmsg.AlterUserSCRAMCredentialsRequest) int16 {
		resp, err := admin.Broker(0).Request(ctx, req) // no retries of the broker's answer
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode
	}
	upsert := func(name string, mech int8, iter int32, salt int) *kmsg.AlterUserSCRAMCredentialsRequest {
		r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: name, Mechanism: mech, Iterations: iter, Salt: make([]byte, salt), SaltedPassword: make([]byte, 32)}}
		return r
	}
	for _, c := range []struct {
		what string
		req  *kmsg.AlterUserSCRAMCredentialsRequest
		want *kerr.Error
	}{
		{"iterations below 4096", upsert("dave", 1, 100, 16), kerr.UnacceptableCredential},
		{"iterations above 16384", upsert("dave", 1, 20000, 16), kerr.UnacceptableCredential},
		{"a short salt", upsert("dave", 1, 4096, 4), kerr.UnacceptableCredential},
		{"an empty name", upsert("", 1, 4096, 16), kerr.UnacceptableCredential},
		{"an unknown mechanism", upsert("dave", 9, 4096, 16), kerr.UnsupportedSaslMechanism},
		{"deleting a missing credential", &kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "dave", Mechanism: 1}}}, kerr.ResourceNotFound},
		{"a user deleted and upserted", &kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "carol", Mechanism: 1}},
			Upsertions: upsert("carol", 1, 4096, 16).Upsertions}, kerr.DuplicateResource},
	} {
		if got := alter(c.req); got != c.want.Code {
			t.Errorf("%s: error %d, want %s", c.what, got, c.want.Message)
		}
	}
	if _, ok := ts.b.ScramCredential("dave", "SCRAM-SHA-256"); ok {
		t.Error("a refused upsertion stored a credential")
	}
	alice := kadm.NewClient(scramClient(t, ts.addr, "alice"))
	if res, err := alice.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice2", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "x"}}); err == nil && !errors.Is(res["alice2"].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alice altered a user: %+v", res)
	}

	// A live session of carol ends when carol is deleted.
	carol, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.SASL(scram.Auth{User: "carol", Pass: password}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer carol.Close()
	if _, err := carol.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil { // learns broker 0
		t.Fatal(err)
	}
	if _, err := carol.Broker(0).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil { // opens its connection
		t.Fatal(err)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha256}, {User: "carol", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("delete carol: %v %+v", err, res)
	}
	// Her open connection is gone: the next request has to reconnect,
	// and a new login fails. Had it stayed open, the request would pass.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	if _, err := carol.Broker(0).Request(rctx, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("carol's open connection still serves her after her deletion")
	}
	if err := login(kgo.SASL(scram.Auth{User: "carol", Pass: password}.AsSha512Mechanism())); err == nil {
		t.Error("a deleted user logged in")
	}
}
