package kafka

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strandmq/strand/internal/broker"
)

// opsOf sorts kadm's decoded operations for comparison.
func opsOf(ops []kadm.ACLOperation) []kadm.ACLOperation {
	return slices.Sorted(slices.Values(ops))
}

// TestAuthorizedOperations (KIP-430) with kadm: alice, granted Read and
// Write on a topic, Describe and IdempotentWrite on the cluster and Read
// on groups under "g", sees exactly those operations — and the ones they
// imply (Describe) — in Metadata (topic and, v8–v10, cluster),
// DescribeCluster, DescribeGroups and ConsumerGroupDescribe; a super user
// sees every operation each resource type supports; a request that does
// not ask gets Kafka's omitted value; and without an authorizer every
// supported operation is reported.
func TestAuthorizedOperations(t *testing.T) {
	t.Parallel()
	ts := secureServer(t, broker.Config{DisableAutoCreateTopics: true}, nil)
	createTopic(t, ts.b, "ops.a", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := scramClient(t, ts.addr, "admin")
	adm := kadm.NewClient(admin)
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("ops.a").Operations(kadm.OpRead, kadm.OpWrite),
		kadm.NewACLs().Allow("User:alice").AllowHosts("*").Clusters().Operations(kadm.OpDescribe, kadm.OpIdempotentWrite),
		kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead),
	} {
		if res, err := adm.CreateACLs(ctx, b); err != nil || res[0].Err != nil {
			t.Fatalf("create ACLs: %v %+v", err, res)
		}
	}
	alice := scramClient(t, ts.addr, "alice")
	aliceAdm := kadm.NewClient(alice)
	allTopic := []kadm.ACLOperation{kadm.OpRead, kadm.OpWrite, kadm.OpCreate, kadm.OpDelete, kadm.OpAlter, kadm.OpDescribe, kadm.OpDescribeConfigs, kadm.OpAlterConfigs}
	allCluster := []kadm.ACLOperation{kadm.OpCreate, kadm.OpAlter, kadm.OpDescribe, kadm.OpClusterAction, kadm.OpDescribeConfigs, kadm.OpAlterConfigs, kadm.OpIdempotentWrite}
	allGroup := []kadm.ACLOperation{kadm.OpRead, kadm.OpDelete, kadm.OpDescribe, kadm.OpDescribeConfigs, kadm.OpAlterConfigs}

	// Metadata, topic operations.
	topicOps := func(a *kadm.Client) []kadm.ACLOperation {
		t.Helper()
		m, err := a.Metadata(kadm.WithAuthorizedOps(ctx), "ops.a")
		if err != nil {
			t.Fatal(err)
		}
		return opsOf(m.Topics["ops.a"].AuthorizedOperations)
	}
	if got, want := topicOps(aliceAdm), opsOf([]kadm.ACLOperation{kadm.OpRead, kadm.OpWrite, kadm.OpDescribe}); !slices.Equal(got, want) {
		t.Errorf("alice's topic operations %v, want %v", got, want)
	}
	if got := topicOps(adm); !slices.Equal(got, opsOf(allTopic)) {
		t.Errorf("admin's topic operations %v, want %v", got, opsOf(allTopic))
	}
	// Not asked: omitted.
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ops.a")}}
	resp, err := req.RequestWith(ctx, alice)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].AuthorizedOperations != math.MinInt32 {
		t.Fatalf("Metadata not asking: %v %+v, want the omitted value", err, resp)
	}

	// Cluster operations: DescribeCluster, and Metadata v10.
	clusterOps := func(cl *kgo.Client, include bool) int32 {
		t.Helper()
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = include
		r, err := dc.RequestWith(ctx, cl)
		if err != nil || r.ErrorCode != 0 {
			t.Fatalf("DescribeCluster: %v %+v", err, r)
		}
		return r.ClusterAuthorizedOperations
	}
	wantAlice := opsOf([]kadm.ACLOperation{kadm.OpDescribe, kadm.OpIdempotentWrite})
	if got := opsOf(kadm.DecodeACLOperations(clusterOps(alice, true))); !slices.Equal(got, wantAlice) {
		t.Errorf("alice's cluster operations (DescribeCluster) %v, want %v", got, wantAlice)
	}
	if got := opsOf(kadm.DecodeACLOperations(clusterOps(admin, true))); !slices.Equal(got, opsOf(allCluster)) {
		t.Errorf("admin's cluster operations %v, want %v", got, opsOf(allCluster))
	}
	if got := clusterOps(alice, false); got != math.MinInt32 {
		t.Errorf("DescribeCluster not asking: %d, want the omitted value", got)
	}
	// bob may not describe the cluster: 0, whatever else he may do there.
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").AllowHosts("*").Clusters().Operations(kadm.OpIdempotentWrite)); err != nil || res[0].Err != nil {
		t.Fatalf("ACL for bob: %v %+v", err, res)
	}
	if got := clusterOps(scramClient(t, ts.addr, "bob"), true); got != 0 {
		t.Errorf("bob's cluster operations without Describe: %v, want 0", kadm.DecodeACLOperations(got))
	}

	// DescribeTopicPartitions always carries them; a topic alice may not
	// describe answers 29 with the omitted value.
	createTopic(t, ts.b, "ops.hidden", 1, nil)
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 100
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "ops.a"}, {Topic: "ops.hidden"}}
	dr, err := dtp.RequestWith(ctx, alice)
	if err != nil || len(dr.Topics) != 2 {
		t.Fatalf("DescribeTopicPartitions: %v %+v", err, dr)
	}
	for _, tp := range dr.Topics {
		switch *tp.Topic {
		case "ops.a":
			if got, want := opsOf(kadm.DecodeACLOperations(tp.AuthorizedOperations)), opsOf([]kadm.ACLOperation{kadm.OpRead, kadm.OpWrite, kadm.OpDescribe}); !slices.Equal(got, want) {
				t.Errorf("DescribeTopicPartitions ops.a: %v, want %v", got, want)
			}
		case "ops.hidden":
			if tp.ErrorCode != 29 || tp.AuthorizedOperations != math.MinInt32 {
				t.Errorf("DescribeTopicPartitions ops.hidden: error %d, operations %d; want 29 and the omitted value", tp.ErrorCode, tp.AuthorizedOperations)
			}
		}
	}
	// kadm asks for the cluster's operations too; a client held to Kafka
	// 2.3's versions speaks Metadata v8, where they are answered.
	old := kadm.NewClient(scramClient(t, ts.addr, "alice", kgo.MaxVersions(kversion.V2_3_0())))
	if m, err := old.BrokerMetadata(kadm.WithAuthorizedOps(ctx)); err != nil || !slices.Equal(opsOf(m.AuthorizedOperations), wantAlice) {
		t.Errorf("alice's cluster operations (Metadata v8): %v %v, want %v", err, m.AuthorizedOperations, wantAlice)
	}

	// DescribeGroups up to v5 (Kafka 3.9's): an unknown group is Dead with
	// no error, so it is described, with operations. (v6 answers
	// GROUP_ID_NOT_FOUND for it, without operations, as Kafka 4.)
	v5 := kgo.MaxVersions(kversion.V3_9_0())
	gs, err := kadm.NewClient(scramClient(t, ts.addr, "alice", v5)).DescribeGroups(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := opsOf(gs["g1"].AuthorizedOperations), opsOf([]kadm.ACLOperation{kadm.OpRead, kadm.OpDescribe}); !slices.Equal(got, want) {
		t.Errorf("alice's group operations (DescribeGroups) %v, want %v", got, want)
	}
	if gs, err := kadm.NewClient(scramClient(t, ts.addr, "admin", v5)).DescribeGroups(ctx, "g1"); err != nil ||
		!slices.Equal(opsOf(gs["g1"].AuthorizedOperations), opsOf(allGroup)) {
		t.Errorf("admin's group operations: %v %v, want %v", err, gs["g1"].AuthorizedOperations, opsOf(allGroup))
	}

	// ConsumerGroupDescribe: a KIP-848 group with one member.
	member := scramClient(t, ts.addr, "admin", kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("ops.a"), kgo.ServerSideBalancer(),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryTimeout(30*time.Second))
	var d kadm.DescribedConsumerGroup
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		member.PollFetches(pctx)
		pcancel()
		ds, err := aliceAdm.DescribeConsumerGroups(ctx, "g848")
		if err == nil && ds["g848"].Err == nil && len(ds["g848"].Members) == 1 {
			d = ds["g848"]
			break
		}
	}
	if len(d.Members) != 1 {
		t.Fatal("the KIP-848 group never had its member")
	}
	if got, want := opsOf(d.AuthorizedOperations), opsOf([]kadm.ACLOperation{kadm.OpRead, kadm.OpDescribe}); !slices.Equal(got, want) {
		t.Errorf("alice's group operations (ConsumerGroupDescribe) %v, want %v", got, want)
	}

	// No authorizer: every supported operation.
	open := startServer(t, broker.Config{}, Config{})
	createTopic(t, open.b, "ops.a", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(open.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got := topicOps(kadm.NewClient(cl)); !slices.Equal(got, opsOf(allTopic)) {
		t.Errorf("without an authorizer: topic operations %v, want %v", got, opsOf(allTopic))
	}
	if got := opsOf(kadm.DecodeACLOperations(clusterOps(cl, true))); !slices.Equal(got, opsOf(allCluster)) {
		t.Errorf("without an authorizer: cluster operations %v, want %v", got, opsOf(allCluster))
	}
}
