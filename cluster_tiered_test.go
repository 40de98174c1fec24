package strand

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// startTieredCluster is three nodes sharing one S3-compatible store
// (storetest: gofakes3, or the external store CI runs), uploading every 100 ms.
func startTieredCluster(t *testing.T) *testCluster {
	t.Helper()
	st := storetest.Start(t)
	return startClusterWith(t, 3, nil, func(cfg *Config) {
		cfg.TieredStorage = &TieredStorageConfig{Endpoint: st.URL, Bucket: st.Bucket, AccessKey: st.AccessKey, SecretKey: st.SecretKey,
			Prefix: "cluster/", UploadInterval: 100 * time.Millisecond}
		cfg.RetentionCheckInterval = 100 * time.Millisecond
	})
}

// listOffsetOn asks node id's ListOffsets (v9) for partition 0 of topic at
// timestamp sentinel ts; -4 is the earliest local offset (KIP-1005).
func (c *testCluster) listOffsetOn(ctx context.Context, id int32, topic string, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 9, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.node(id))
	if err != nil {
		return 0, err
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, kerr.ErrorForCode(p.ErrorCode)
}

// localLogFiles returns the base offsets and total size of the .log files
// node id holds of topic's partition 0.
func (c *testCluster) localLogFiles(id int32, topic string) ([]int64, int64) {
	c.t.Helper()
	ents, err := os.ReadDir(filepath.Join(c.dirs[id], topic+"-0"))
	if err != nil {
		c.t.Fatal(err)
	}
	var bases []int64
	var size int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // local retention deleted it since ReadDir (uploads run meanwhile)
		}
		if err != nil {
			c.t.Fatal(err)
		}
		bases, size = append(bases, base), size+info.Size()
	}
	return bases, size
}

// rawProduce sends one batch straight to node id and returns the base
// offset it was answered with.
func (c *testCluster) rawProduce(ctx context.Context, id int32, topic string, batch []byte) (int64, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, c.metadata(id, []string{topic}).Topics[0].TopicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.node(id))
	if err != nil {
		return 0, err
	}
	p := resp.Topics[0].Partitions[0]
	return p.BaseOffset, kerr.ErrorForCode(p.ErrorCode)
}

// KIP-405's replica path on a three-node cluster: a tiered partition led
// by node 1, whose old segments are only in the store, gains a replica on
// node 2, which has never held it. Node 2 starts its log at node 1's local
// log start (OFFSET_MOVED_TO_TIERED_STORAGE, then the manifest and the
// uploaded producer snapshot), so it copies only the local tail; as a
// follower it serves a consumer's fetch at offset 0 from the store
// (KIP-392); after the partition moves to node 2 alone, a consumer reads
// every record from 0 through it, and an idempotent producer's retry of a
// batch that only the store holds is answered as the duplicate it is, at
// its original offset, not written again.
func TestTieredReplicaJoinsFromLocalTail(t *testing.T) {
	c := startTieredCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "tt", -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{1}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for k, v := range map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "1", "segment.bytes": "8192"} {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsgStr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(ctx, c.client(2)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create tt on node 1: %v %+v", err, resp)
	}
	c.waitISR(2, "tt", []int32{1}, 10*time.Second)

	// An idempotent producer's first batch, sent by hand so that it can
	// be sent again later exactly as a client's retry would.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, c.client(1))
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %+v", err, ir)
	}
	var recs []record.Record
	for i := range 5 {
		recs = append(recs, record.Record{Offset: record.Offset(i), Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprintf("idem-%d", i))})
	}
	idem, err := record.Encode(0, recs, record.BatchOptions{ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, BaseSequence: 0})
	if err != nil {
		t.Fatal(err)
	}
	if at, err := c.rawProduce(ctx, 1, "tt", idem); err != nil || at != 0 {
		t.Fatalf("idempotent batch: offset %d, %v", at, err)
	}
	want := []string{"idem-0", "idem-1", "idem-2", "idem-3", "idem-4"}
	want = append(want, produceAll(ctx, t, c.client(3), "tt", fmt.Sprintf("tiered-%0300d-", 0), 600)...)

	var leaderLocal int64
	for deadline := time.Now().Add(30 * time.Second); leaderLocal < 300; time.Sleep(100 * time.Millisecond) {
		if leaderLocal, err = c.listOffsetOn(ctx, 1, "tt", -4); err != nil || time.Now().After(deadline) {
			t.Fatalf("node 1's local log start never passed 300: %d, %v", leaderLocal, err)
		}
	}
	_, leaderBytes := c.localLogFiles(1, "tt")

	c.reassign(ctx, 1, "tt", []int32{1, 2})
	bases, copied := c.localLogFiles(2, "tt")
	if len(bases) == 0 || bases[0] < leaderLocal {
		t.Fatalf("node 2 holds segments %v: want none below node 1's local log start %d", bases, leaderLocal)
	}
	t.Logf("node 2 joined with %d bytes in segments %v (node 1 held %d bytes locally from %d)", copied, bases, leaderBytes, leaderLocal)

	// KIP-392: a consumer's fetch of offset 0 from the follower, which
	// does not hold it, is served from the store.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch = 12, -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "tt", c.metadata(2, []string{"tt"}).Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	var first []kgo.Record
	for deadline := time.Now().Add(20 * time.Second); len(first) == 0; time.Sleep(100 * time.Millisecond) {
		fr, err := fetch.RequestWith(ctx, c.node(2))
		if err == nil && len(fr.Topics) == 1 && fr.Topics[0].Partitions[0].ErrorCode == 0 {
			first = decodeRecords(t, fr.Topics[0].Partitions[0].RecordBatches)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower never served offset 0 from the store: %v %+v", err, fr)
		}
	}
	if first[0].Offset != 0 || string(first[0].Value) != "idem-0" {
		t.Fatalf("the follower's remote read of offset 0: offset %d value %q", first[0].Offset, first[0].Value)
	}

	c.reassign(ctx, 1, "tt", []int32{2})
	var end int64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		// Node 2 learns it leads a moment after the controller says so.
		if end, err = c.listOffsetOn(ctx, 2, "tt", -1); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || end != int64(len(want)) {
		t.Fatalf("node 2's log end %d (%v), want %d", end, err, len(want))
	}
	if at, err := c.rawProduce(ctx, 2, "tt", idem); err != nil || at != 0 {
		t.Fatalf("the retried idempotent batch on the new leader: offset %d, %v; want the duplicate's offset 0", at, err)
	}
	if again, err := c.listOffsetOn(ctx, 2, "tt", -1); err != nil || again != end {
		t.Fatalf("after the retry the log ends at %d (%v), want %d: the batch was written twice", again, err, end)
	}
	consumeAll(ctx, t, c, 2, "tt", want)
}

// decodeRecords returns the records of a fetch answer's batches.
func decodeRecords(t *testing.T, batches []byte) []kgo.Record {
	t.Helper()
	var out []kgo.Record
	for len(batches) > 0 {
		h, err := record.ParseHeader(batches)
		if err != nil || h.Size() > len(batches) {
			break
		}
		b, err := record.Decode(batches[:h.Size()])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			out = append(out, kgo.Record{Offset: int64(r.Offset), Value: r.Value})
		}
		batches = batches[h.Size():]
	}
	return out
}
