package strand_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// startObjectStore serves an S3-compatible store (gofakes3) over HTTP on a
// loopback port with one bucket, and returns the tiered-storage config for
// it.
func startObjectStore(t *testing.T) *strand.TieredStorageConfig {
	t.Helper()
	st := storetest.Start(t)
	return &strand.TieredStorageConfig{Endpoint: st.URL, Bucket: st.Bucket, AccessKey: st.AccessKey, SecretKey: st.SecretKey,
		Prefix: "test/", UploadInterval: time.Hour}
}

func startTiered(t *testing.T, dir string, store *strand.TieredStorageConfig) (*strand.Broker, *kgo.Client) {
	t.Helper()
	b, err := strand.Start(context.Background(), strand.Config{Dir: dir, TieredStorage: store, RetentionCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	return b, cl
}

// createTieredTopic creates topic with remote storage, 8 KiB segments and
// one byte of local retention, so every sealed segment goes remote, and
// the configs given as name, value pairs.
func createTieredTopic(t *testing.T, cl *kgo.Client, topic string, partitions int32, configs ...string) {
	t.Helper()
	cfg := map[string]*string{
		"remote.storage.enable": kadm.StringPtr("true"),
		"local.retention.bytes": kadm.StringPtr("1"),
		"segment.bytes":         kadm.StringPtr("8192"),
	}
	for i := 0; i+1 < len(configs); i += 2 {
		cfg[configs[i]] = kadm.StringPtr(configs[i+1])
	}
	resp, err := kadm.NewClient(cl).CreateTopic(context.Background(), partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
}

// listOffset asks ListOffsets (v9, KIP-1005) for one timestamp sentinel.
func listOffset(t *testing.T, cl *kgo.Client, topic string, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %d: %v", ts, err)
	}
	return p.Offset
}

// consumeFromZero reads n records of the topic's partition 0 from offset 0.
func consumeFromZero(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	return consumeFrom(t, addr, topic, 0, n)
}

// consumeFrom reads n records of the topic's partition 0 from offset from.
func consumeFrom(t *testing.T, addr, topic string, from int64, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func tieredValue(i int) string { return fmt.Sprintf("record-%05d-%0100d", i, i) }

// A topic with local.retention.bytes far below its size: the sealed
// segments go to the store, local disk keeps the tail, and a consumer that
// starts at offset 0 reads every record at its original offset, across a
// broker restart too.
func TestTieredConsumeFromZeroAfterLocalDeletion(t *testing.T) {
	store := startObjectStore(t)
	dir := filepath.Join(t.TempDir(), "data")
	b, cl := startTiered(t, dir, store)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	const topic, n = "tiered", 600
	createTieredTopic(t, cl, topic, 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range n {
		r := &kgo.Record{Topic: topic, Value: []byte(tieredValue(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if got := listOffset(t, cl, topic, -5); got != -1 {
		t.Fatalf("latest tiered offset %d before any upload, want -1", got)
	}
	b.TierPass(false)
	b.ApplyRetention()
	localStart, tiered := listOffset(t, cl, topic, -4), listOffset(t, cl, topic, -5)
	if got := listOffset(t, cl, topic, -6); got != tiered+1 {
		t.Fatalf("earliest pending upload (KIP-1023) %d, want %d: right after the latest tiered offset", got, tiered+1)
	}
	if start := listOffset(t, cl, topic, -2); start != 0 {
		t.Fatalf("earliest offset %d, want 0 (the remote log start)", start)
	}
	if localStart <= 0 || localStart != tiered+1 {
		t.Fatalf("earliest local offset %d, latest tiered %d: want local data to start right after the tiered end", localStart, tiered)
	}
	check := func(recs []*kgo.Record) {
		t.Helper()
		for i, r := range recs[:n] {
			if r.Offset != int64(i) || string(r.Value) != tieredValue(i) {
				t.Fatalf("record %d: offset %d value %.20q", i, r.Offset, r.Value)
			}
		}
	}
	check(consumeFromZero(t, b.Addr(), topic, n))
	// ListOffsets by time finds records in either tier.
	for _, i := range []int{0, 10, int(tiered), int(localStart), n - 1} {
		res, err := adm.ListOffsetsAfterMilli(ctx, base.Add(time.Duration(i)*time.Second).UnixMilli()-500, topic)
		if err != nil {
			t.Fatal(err)
		}
		if lo, _ := res.Lookup(topic, 0); lo.Err != nil || lo.Offset != int64(i) {
			t.Fatalf("offset for the timestamp of record %d: %d (%v)", i, lo.Offset, lo.Err)
		}
	}

	// Restart: the manifest is found again, nothing is uploaded twice, and
	// reads from 0 still work.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, cl = startTiered(t, dir, store)
	defer func() {
		cl.Close()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	// Until the broker has read the manifest (its first pass, at start)
	// the earliest offset is OFFSET_NOT_AVAILABLE; after it, the remote one.
	b.TierPass(true)
	if got := listOffset(t, cl, topic, -5); got != tiered {
		t.Fatalf("latest tiered offset %d after restart, want %d (nothing new sealed)", got, tiered)
	}
	if got := listOffset(t, cl, topic, -2); got != 0 {
		t.Fatalf("earliest offset %d after restart, want 0", got)
	}
	check(consumeFromZero(t, b.Addr(), topic, n))

	// Total retention reaches the store: with retention.bytes at half the
	// data, the oldest remote segments go and the log start moves.
	rs, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "retention.bytes", Value: kadm.StringPtr("40000")},
		{Name: "local.retention.bytes", Value: kadm.StringPtr("1")},
	}, topic)
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	b.TierPass(false)
	start := listOffset(t, cl, topic, -2)
	if start <= 0 || start >= localStart {
		t.Fatalf("log start %d after total retention, want inside the remote range (0, %d)", start, localStart)
	}
	recs := consumeFrom(t, b.Addr(), topic, start, n-int(start))
	if recs[0].Offset != start || string(recs[0].Value) != tieredValue(int(start)) {
		t.Fatalf("first record after retention: offset %d", recs[0].Offset)
	}
}

// Kafka's checks on the tiered-storage topic configs.
func TestTieredTopicConfigChecks(t *testing.T) {
	store := startObjectStore(t)
	b, cl := startTiered(t, t.TempDir(), store)
	defer func() {
		cl.Close()
		b.Close()
	}()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	create := func(name string, cfg map[string]*string) error {
		resp, err := adm.CreateTopic(ctx, 1, 1, cfg, name)
		if err != nil {
			return err
		}
		return resp.Err
	}
	on := kadm.StringPtr("true")
	refused := []struct {
		name string
		cfg  map[string]*string
	}{
		{"compacted", map[string]*string{"remote.storage.enable": on, "cleanup.policy": kadm.StringPtr("compact")}},
		{"local-bytes-over-total", map[string]*string{"remote.storage.enable": on, "retention.bytes": kadm.StringPtr("1000"), "local.retention.bytes": kadm.StringPtr("2000")}},
		{"local-ms-unlimited", map[string]*string{"remote.storage.enable": on, "retention.ms": kadm.StringPtr("1000"), "local.retention.ms": kadm.StringPtr("-1")}},
		{"local-ms-over-total", map[string]*string{"remote.storage.enable": on, "retention.ms": kadm.StringPtr("1000"), "local.retention.ms": kadm.StringPtr("1001")}},
	}
	for _, c := range refused {
		if err := create(c.name, c.cfg); !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: %v, want INVALID_CONFIG", c.name, err)
		}
	}
	if err := create("ok", map[string]*string{"remote.storage.enable": on, "retention.ms": kadm.StringPtr("1000"), "local.retention.ms": kadm.StringPtr("-2")}); err != nil {
		t.Fatalf("local.retention.ms=-2 (same as total): %v", err)
	}
	alter := func(cfgs ...kadm.AlterConfig) error {
		rs, err := adm.AlterTopicConfigs(ctx, cfgs, "ok")
		if err != nil {
			return err
		}
		return rs[0].Err
	}
	off := kadm.StringPtr("false")
	if err := alter(kadm.AlterConfig{Name: "remote.storage.enable", Value: off}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("turning remote storage off silently: %v, want INVALID_CONFIG", err)
	}
	if err := alter(kadm.AlterConfig{Name: "remote.storage.enable", Value: off},
		kadm.AlterConfig{Name: "remote.log.delete.on.disable", Value: on}); err != nil {
		t.Fatalf("turning remote storage off with remote.log.delete.on.disable: %v", err)
	}

	// A broker without an object store refuses the topic.
	plain, pcl := startTiered(t, t.TempDir(), nil)
	defer func() {
		pcl.Close()
		plain.Close()
	}()
	resp, err := kadm.NewClient(pcl).CreateTopic(ctx, 1, 1, map[string]*string{"remote.storage.enable": on}, "nostore")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("remote storage without a store: %v, want INVALID_CONFIG", err)
	}
}

// The broker stops after a window of segments' objects are in the store
// but before a manifest names them (the manifest writes fail): after a
// restart the segments are recorded once each, in order, the orphans go,
// and every record reads back from offset 0.
func TestTieredRestartMidUpload(t *testing.T) {
	st := storetest.Start(t) // the store behind a proxy that refuses what the test says
	// Windows of two segments: the first is recorded, the second's
	// manifest write is refused.
	store := &strand.TieredStorageConfig{Endpoint: st.URL, Bucket: st.Bucket, AccessKey: st.AccessKey, SecretKey: st.SecretKey,
		UploadInterval: time.Hour, OrphanGrace: time.Nanosecond, UploadConcurrency: 2}
	dir := filepath.Join(t.TempDir(), "data")
	b, cl := startTiered(t, dir, store)
	ctx := context.Background()
	const topic, n = "midupload", 300
	createTieredTopic(t, cl, topic, 1)
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var manifestPuts atomic.Int32
	refuse := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifest/") && manifestPuts.Add(1) > 2
	}
	st.Refuse(refuse)
	b.TierPass(false) // the claim and a window are recorded; the next window's objects are not
	b.ApplyRetention()
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	st.Refuse(nil)

	s3 := storeClient(t, st)
	before := segmentObjects(t, s3)
	recorded := len(newestManifest(t, s3).Segments)

	b, cl = startTiered(t, dir, store)
	defer func() {
		cl.Close()
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	b.TierPass(true)
	b.ApplyRetention()
	m := newestManifest(t, s3)
	if len(m.Segments) < 3 {
		t.Fatalf("manifest holds %d segments", len(m.Segments))
	}
	seen := map[int64]bool{}
	for i, s := range m.Segments {
		if seen[int64(s.Base)] || (i > 0 && s.Base != m.Segments[i-1].Next) {
			t.Fatalf("segment %d at %d is recorded twice or out of order", i, s.Base)
		}
		seen[int64(s.Base)] = true
	}
	after := segmentObjects(t, s3)
	// Four objects a segment: .log, .index, .timeindex and .snapshot.
	if after != 4*len(m.Segments) {
		t.Fatalf("%d segment objects for %d segments (%d before the restart): orphans remain", after, len(m.Segments), before)
	}
	if recorded != 2 || before <= 4*recorded || before%4 != 0 {
		t.Fatalf("%d segment objects before the restart for %d recorded segments, want two recorded and the next window's orphans", before, recorded)
	}
	if got := listOffset(t, cl, topic, -4); got <= int64(m.Segments[0].Next) {
		t.Fatalf("local log start %d: local retention did not act after the upload", got)
	}
	recs := consumeFromZero(t, b.Addr(), topic, n)
	for i, r := range recs[:n] {
		if r.Offset != int64(i) || string(r.Value) != tieredValue(i) {
			t.Fatalf("record %d: offset %d", i, r.Offset)
		}
	}

	// Restarted while the store refuses everything: the broker serves,
	// but the earliest offset is not available (retriable) rather than
	// the local start, so no consumer resets past the remote data.
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	all := func(*http.Request) bool { return true }
	st.Refuse(all)
	b, cl = startTiered(t, dir, store)
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp2, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp2.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetNotAvailable.Code {
		t.Fatalf("earliest offset with the store down: error %v, want OFFSET_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	st.Refuse(nil)
	b.TierPass(false)
	if got := listOffset(t, cl, topic, -2); got != 0 {
		t.Fatalf("earliest offset %d once the store answers, want 0", got)
	}
}

func segmentObjects(t *testing.T, s *tiered.S3) int {
	t.Helper()
	objs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if strings.Contains(o.Key, "/segments/") {
			n++
		}
	}
	return n
}

func newestManifest(t *testing.T, s *tiered.S3) *tiered.Manifest {
	t.Helper()
	objs, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, o := range objs {
		if strings.Contains(o.Key, "/manifest/") {
			last = o.Key
		}
	}
	raw, err := s.Get(context.Background(), last, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var m tiered.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// A read_committed consumer reading from offset 0 after the segments that
// hold an aborted transaction went remote does not see its records: the
// broker keeps the aborted transactions as long as the remote tier holds
// them, across the segment rolls that follow the local deletion.
func TestTieredReadCommittedSkipsAbortedRemoteRecords(t *testing.T) {
	store := startObjectStore(t)
	b, cl := startTiered(t, t.TempDir(), store)
	defer func() {
		cl.Close()
		b.Close()
	}()
	ctx := context.Background()
	const topic = "tiered-txn"
	createTieredTopic(t, cl, topic, 1)
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("tiered-txn"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("aborted-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	produceN := func(from, n int) {
		for i := from; i < from+n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(tieredValue(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produceN(0, 300)
	b.TierPass(false)
	b.ApplyRetention()
	produceN(300, 300) // more rolls, now with the aborted batch only remote
	b.TierPass(false)
	b.ApplyRetention()
	if local := listOffset(t, cl, topic, -4); local <= 6 {
		t.Fatalf("local log start %d: the aborted transaction is still local", local)
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < 600 {
		fs := rc.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("read %d of 600 committed records", len(got))
		}
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	for i, v := range got {
		if v != tieredValue(i) {
			t.Fatalf("committed record %d is %.20q: an aborted record was served", i, v)
		}
	}
}

// storeClient is a client of st's bucket, through its proxy, for a test's
// own checks (list the bucket, read a manifest).
func storeClient(t testing.TB, st *storetest.Server) *tiered.S3 {
	t.Helper()
	c, err := tiered.NewS3(tiered.S3Config{Endpoint: st.URL, Bucket: st.Bucket, Region: st.Region, AccessKey: st.AccessKey, SecretKey: st.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}
