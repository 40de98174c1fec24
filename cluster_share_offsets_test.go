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
)

// TestClusterShareOffsetsReset: AlterShareGroupOffsets and
// DeleteShareGroupOffsets on a cluster reach every share-partition, led by
// any node, and no leader keeps serving the window it held before: a share
// group consumes three partitions led by different nodes; with no members
// it is reset to offset 0 through its coordinator (which leads only some of
// the partitions), and a new member is delivered every record again; then
// its offsets are deleted, and the next member starts again by
// share.auto.offset.reset (earliest here), every record once more.
func TestClusterShareOffsetsReset(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const group, topic, perPartition = "sr-workers", "sr", 10
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	adm := kadm.NewClient(c.client(1, seeds))
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, c.client(2, seeds)); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %+v", err, resp)
	}
	prod := c.client(1, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		for i := range perPartition {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// consume accepts every record a new member is delivered until each
	// offset of each partition was seen, and fails on a record delivered
	// twice.
	consume := func(phase string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // a stale window delivers nothing: fail sooner
		defer cancel()
		cl := c.client(3, seeds, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		seen := map[[2]int64]bool{}
		for len(seen) < 3*perPartition {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%s: %d of %d records delivered", phase, len(seen), 3*perPartition)
			}
			var rs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				k := [2]int64{int64(r.Partition), r.Offset}
				if seen[k] {
					t.Errorf("%s: %s-%d offset %d delivered twice", phase, topic, r.Partition, r.Offset)
				}
				seen[k] = true
				rs = append(rs, r)
			})
			cl.MarkAcks(kgo.AckAccept, rs...)
			if err := cl.FlushAcks(ctx); err != nil {
				t.Fatalf("%s: %v", phase, err)
			}
		}
	}
	consume("first")

	leaders := c.leaders(1, topic)
	fc := adm.FindGroupCoordinators(ctx, group)[group]
	if fc.Err != nil {
		t.Fatal(fc.Err)
	}
	coord, leads := fc.NodeID, 0
	for _, l := range leaders {
		if l == coord {
			leads++
		}
	}
	t.Logf("partition leaders %v, the group's coordinator %d", leaders, coord)
	if leads == len(leaders) {
		t.Logf("node %d leads every partition: the test proves less", coord)
	}
	// The members' leave reaches the coordinator asynchronously: retry
	// while it still counts one.
	offsets := kadm.Offsets{}
	for p := range int32(3) {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 0})
	}
	for {
		r, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.NonEmptyGroup) || ctx.Err() != nil {
			t.Fatalf("alter share group offsets: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	consume("after the reset to 0")

	for {
		r, err := adm.DeleteShareGroupOffsets(ctx, group, topic)
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.NonEmptyGroup) || ctx.Err() != nil {
			t.Fatalf("delete share group offsets: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	consume("after the delete")
}

// TestClusterShareDeleteGroup: DeleteGroups of an empty share group on a
// cluster deletes its state wherever its share-partitions are, not only
// those of the partitions the answering node (the group's coordinator)
// leads: a share group (share.auto.offset.reset=earliest, a group config
// DeleteGroups keeps) accepts every record of three partitions led by
// different nodes; after the group is deleted, a new member of a group of
// the same name is delivered every record again, from each partition's
// start, not from the old group's positions.
func TestClusterShareDeleteGroup(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const group, topic, perPartition = "sd-workers", "sd", 10
	seeds := kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3])
	adm := kadm.NewClient(c.client(1, seeds))
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	setGroupConfigs(t, ctx, c, c.client(2, seeds), group, map[string]string{"share.auto.offset.reset": "earliest"})
	prod := c.client(1, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		for i := range perPartition {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	consume := func(phase string, within time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, within) // old positions deliver nothing: fail sooner
		defer cancel()
		cl := c.client(3, seeds, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(100*time.Millisecond))
		defer cl.Close()
		seen := map[[2]int64]bool{}
		for len(seen) < 3*perPartition {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				missing := map[int32]int{}
				for p := range int64(3) {
					for o := range int64(perPartition) {
						if !seen[[2]int64{p, o}] {
							missing[int32(p)]++
						}
					}
				}
				t.Fatalf("%s: %d of %d records delivered; missing per partition %v (leaders %v)", phase, len(seen), 3*perPartition, missing, c.leaders(1, topic))
			}
			var rs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				seen[[2]int64{int64(r.Partition), r.Offset}] = true
				rs = append(rs, r)
			})
			cl.MarkAcks(kgo.AckAccept, rs...)
			if err := cl.FlushAcks(ctx); err != nil {
				t.Fatalf("%s: %v", phase, err)
			}
		}
	}
	consume("first", time.Minute) // with the share coordinators' first start
	fc := adm.FindGroupCoordinators(ctx, group)[group]
	if fc.Err != nil {
		t.Fatal(fc.Err)
	}
	if ls := c.leaders(1, topic); ls[0] == fc.NodeID && ls[1] == fc.NodeID && ls[2] == fc.NodeID {
		t.Logf("node %d coordinates the group and leads every partition: the test proves less", fc.NodeID)
	}
	for {
		r, err := adm.DeleteGroup(ctx, group)
		if err == nil {
			err = r.Err
		}
		if err == nil {
			break
		}
		if !errors.Is(err, kerr.NonEmptyGroup) || ctx.Err() != nil { // the member's leave reaches the coordinator asynchronously
			t.Fatalf("delete group: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	consume("after the group was deleted", 30*time.Second)
}
