package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/share"
)

// TestShareGroupDeleteAndDescribeGroups: the classic group APIs on a share
// group, as Kafka 4 answers them. DescribeGroups v6 says it is not a
// classic group; DeleteGroups refuses it while it has a member, then
// deletes it with its state and configs: it is no longer listed, and a
// new group of that name starts afresh, even after a restart (every
// record is delivered again).
func TestShareGroupDeleteAndDescribeGroups(t *testing.T) {
	h := newShareBroker(t)
	topic, group := "tasks", "doers"
	createTopic(t, h.b, topic, 2, nil)
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200")
	produceN(t, h.addr, topic, "task", 10)
	var log deliveryLog
	c := startShareConsumer(t, h.addr, group, topic, "d0", &log, acceptAll)
	waitShare(t, "every record accepted", 30*time.Second, func() bool { return len(log.accepted()) == 10 })

	cl, err := kgo.NewClient(kgo.SeedBrokers(h.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version, dreq.Groups = 6, []string{group}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil || *g.ErrorMessage != "Group doers is not a classic group." {
		t.Errorf("DescribeGroups v6 of a share group: code %d message %v", g.ErrorCode, g.ErrorMessage)
	}

	adm := kadm.NewClient(cl)
	del := func() error {
		t.Helper()
		res, err := adm.DeleteGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return res[group].Err
	}
	if err := del(); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Errorf("delete with a member: %v, want NON_EMPTY_GROUP", err)
	}
	c.close() // leaves the group
	if err := del(); err != nil {
		t.Fatalf("delete an empty share group: %v", err)
	}
	if err := del(); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete again: %v, want GROUP_ID_NOT_FOUND", err)
	}
	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[group]; ok {
		t.Errorf("a deleted share group is listed: %v", listed)
	}
	if ps := h.b.Share().Manager.Partitions(group); len(ps) != 0 {
		t.Errorf("a deleted share group keeps state on %v", ps)
	}
	if cfg := h.b.Share().Coordinator.Configs(group); len(cfg) != 0 {
		t.Errorf("a deleted share group keeps configs %v", cfg)
	}

	// The state is gone for good, across a restart too: a new group of
	// the name starts again from the log start.
	h.restart()
	h.configure(group, share.ConfigAutoOffsetReset, "earliest", share.ConfigHeartbeat, "200")
	var again deliveryLog
	c2 := startShareConsumer(t, h.addr, group, topic, "d1", &again, acceptAll)
	defer c2.close()
	waitShare(t, "every record delivered again to the new group", 30*time.Second, func() bool { return len(again.accepted()) == 10 })
}
