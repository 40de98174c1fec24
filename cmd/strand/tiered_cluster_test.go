package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// The cluster test of tiered storage (KIP-405's fencing): three
// `strand serve` processes share one S3-protocol store behind a proxy.
// The leader's upload of a segment is caught in flight — its objects are
// in the store, the proxy holds the manifest PUT that would record them —
// and the leader is SIGKILLed. Another replica is elected and uploads
// under its epoch; then the held PUT reaches the store after all, as a
// request already on the wire would, and the old leader comes back. The
// newest manifest is the new leader's and tells one history: segments in
// offset order without overlap, leader epochs never going back, nothing of
// the deposed leader's late manifest in it. Every acknowledged record reads
// from offset 0 once, at its offset, byte for byte, and after the orphan
// pass the bucket holds only the objects the manifest names.
func TestClusterTieredLeaderKilledMidUpload(t *testing.T) {
	st := storetest.Start(t)
	s3 := storeClient(t, st)
	creds := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(creds, []byte("aws_access_key_id = "+st.AccessKey+"\naws_secret_access_key = "+st.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const prefix, topic = "kc/", "tk"
	c := newProcCluster(t, "--tier-endpoint", st.URL, "--tier-bucket", st.Bucket, "--tier-credentials-file", creds,
		"--tier-prefix", prefix, "--tier-upload-interval", "100ms", "--tier-orphan-grace", "1ms",
		"--retention-check-interval", "100ms")
	defer func() {
		if t.Failed() {
			for n := 1; n <= 3; n++ {
				if p := c.procs[n]; p != nil {
					t.Logf("--- node %d:\n%s", n, p.logs.String())
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := []int{1, 2, 3}
	ok(t, c.addrs[1], "", "topic", "create", topic, "--partitions", "1", "--replication-factor", "3",
		"--config", "min.insync.replicas=2", "--config", "remote.storage.enable=true",
		"--config", "local.retention.bytes=1", "--config", "segment.bytes=8192")
	c.waitInSync(ctx, t, topic, 30*time.Second)
	first := c.partitionState(ctx, t, all, topic)
	old := int(first.Leader)

	acked := map[string]int64{}
	produceTiered(ctx, t, c.brokers(0), topic, "a", 80, acked)
	awaitManifest(t, s3, prefix, "two segments uploaded", func(m *tiered.Manifest) bool { return len(m.Segments) >= 2 })

	// The next segment upload's manifest PUT is held: the segment's
	// objects are complete, the manifest naming them is in flight.
	held := st.Hold(storetest.IsPut("/manifest/"))
	defer held.Release()
	produceTiered(ctx, t, c.brokers(0), topic, "b", 60, acked)
	select {
	case <-held.Arrived():
	case <-time.After(30 * time.Second):
		t.Fatal("no manifest PUT came in 30 s after more segments were sealed")
	}
	var late tiered.Manifest
	if err := json.Unmarshal(held.Payload(), &late); err != nil || late.Epoch != record.Epoch(first.LeaderEpoch) || len(late.Segments) == 0 {
		t.Fatalf("held manifest PUT %s: epoch %d (want the leader's %d), %d segments, %v", held.Path, late.Epoch, first.LeaderEpoch, len(late.Segments), err)
	}
	lateSeg := late.Segments[len(late.Segments)-1]
	if err := c.procs[old].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.procs[old].wait(t, 30*time.Second)
	var live []int
	for _, n := range all {
		if n != old {
			live = append(live, n)
		}
	}
	next := c.awaitNewLeader(ctx, t, live, topic, old, 30*time.Second)
	t.Logf("node %d (epoch %d) killed with segment %d-%d's manifest in flight; node %d leads at epoch %d",
		old, first.LeaderEpoch, lateSeg.Base, lateSeg.Next, next.Leader, next.LeaderEpoch)

	// The new leader uploads under its epoch from where the manifest ends.
	firstC := produceTiered(ctx, t, c.brokers(old), topic, "c", 80, acked)
	awaitManifest(t, s3, prefix, "the new leader's uploads", func(m *tiered.Manifest) bool {
		return m.Epoch >= record.Epoch(next.LeaderEpoch) && m.End > record.Offset(firstC)
	})

	// The deposed leader's manifest reaches the store after all.
	held.Release()
	select {
	case <-held.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the held manifest PUT never reached the store")
	}
	if held.Status != 200 {
		t.Fatalf("the store answered the late manifest PUT %d", held.Status)
	}
	if m, _, _ := bucketState(t, s3, prefix); m.Epoch < record.Epoch(next.LeaderEpoch) || slices.ContainsFunc(m.Segments, func(s tiered.Segment) bool { return s.ID == lateSeg.ID }) {
		t.Fatalf("the deposed leader's late manifest shadows the new leader's: newest at epoch %d, segments %+v", m.Epoch, m.Segments)
	}

	c.procs[old] = c.launch(t, old)
	c.procs[old].awaitServing(t)
	c.waitInSync(ctx, t, topic, 60*time.Second)
	firstD := produceTiered(ctx, t, c.brokers(0), topic, "d", 60, acked)
	m := awaitManifest(t, s3, prefix, "uploads after the old leader's return", func(m *tiered.Manifest) bool {
		return m.End > record.Offset(firstD)
	})

	// One history.
	if m.Epoch < record.Epoch(next.LeaderEpoch) {
		t.Fatalf("newest manifest at epoch %d, below the new leader's %d", m.Epoch, next.LeaderEpoch)
	}
	checkHistory(t, m, record.Epoch(first.LeaderEpoch), record.Offset(firstC))
	for _, s := range m.Segments {
		if s.ID == lateSeg.ID {
			t.Fatalf("the newest manifest names segment %s of the deposed leader's late manifest", s.ID)
		}
	}

	// Every acknowledged record from offset 0, once and byte for byte,
	// by a consumer bootstrapped from every node and by one that knows
	// only the node that came back (the leader serves both).
	for _, via := range []string{c.brokers(0), c.addrs[old]} {
		final := finalLog(ctx, t, via, topic)
		checkAcked(t, final, acked)
		if len(final) != len(acked) {
			t.Fatalf("%d records from offset 0 through %s, %d acknowledged", len(final), via, len(acked))
		}
	}

	// The orphan pass (every 30th upload pass, 3 s here) leaves only what
	// the newest manifest names.
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		m, orphans, manifests := bucketState(t, s3, prefix)
		if len(orphans) == 0 && manifests <= 3 {
			t.Logf("after the orphan pass: %d segments, %d objects, %d manifests; manifest at epoch %d ends at %d",
				len(m.Segments), 4*len(m.Segments), manifests, m.Epoch, m.End)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphans remain 45 s after the kill: %v (%d manifests)", orphans, manifests)
		}
	}
}

// produceTiered produces n acks=all records of about 300 bytes, each
// value prefix-i plus padding, and records each one's offset in acked
// under the value; it returns the first record's offset.
func produceTiered(ctx context.Context, t *testing.T, brokers, topic, prefix string, n int, acked map[string]int64) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // the segments fill as the values' size says
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Ten records (3 KB) a batch, so that 8 KB segments roll.
	for from := 0; from < n; from += 10 {
		var recs []*kgo.Record
		for i := from; i < min(from+10, n); i++ {
			recs = append(recs, &kgo.Record{Value: []byte(tieredClusterValue(prefix, i))})
		}
		for _, r := range cl.ProduceSync(pctx, recs...) {
			if r.Err != nil {
				t.Fatalf("produce %.10s: %v", r.Record.Value, r.Err)
			}
			acked[string(r.Record.Value)] = r.Record.Offset
		}
	}
	return acked[tieredClusterValue(prefix, 0)]
}

func tieredClusterValue(prefix string, i int) string {
	return fmt.Sprintf("%s-%d|%0290d", prefix, i, i)
}

// awaitManifest polls the newest manifest under prefix until done accepts it.
func awaitManifest(t *testing.T, s3 *tiered.S3, prefix, what string, done func(*tiered.Manifest) bool) *tiered.Manifest {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if m, _, _ := bucketState(t, s3, prefix); m != nil && done(m) {
			return m
		}
		if time.Now().After(deadline) {
			m, _, _ := bucketState(t, s3, prefix)
			t.Fatalf("%s: not in 30 s; newest manifest %+v", what, m)
		}
	}
}

// bucketState reads the newest manifest under prefix (nil when none) and
// returns it with the segment objects it does not name and the number of
// manifests.
func bucketState(t *testing.T, s3 *tiered.S3, prefix string) (*tiered.Manifest, []string, int) {
	t.Helper()
	objs, err := s3.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var newest string
	manifests := 0
	for _, o := range objs {
		if strings.Contains(o.Key, "/manifest/") {
			newest, manifests = o.Key, manifests+1
		}
	}
	if newest == "" {
		return nil, nil, 0
	}
	raw, err := s3.Get(context.Background(), newest, 0, -1)
	if err != nil {
		return nil, nil, manifests // deleted between the list and the read
	}
	var m tiered.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, s := range m.Segments {
		named[s.ID] = true
	}
	var orphans []string
	for _, o := range objs {
		if !strings.Contains(o.Key, "/segments/") {
			continue
		}
		name := o.Key[strings.LastIndex(o.Key, "/")+1:]
		id := strings.SplitN(strings.SplitN(name, "-", 2)[1], ".", 2)[0]
		if !named[id] {
			orphans = append(orphans, name)
		}
	}
	return &m, orphans, manifests
}

// checkHistory checks that m tells one history: segments in offset order
// without overlap or gap, leader-epoch entries never going back, and the
// deposed leader's epoch old nowhere at or after newFrom, the first
// offset the new leader wrote.
func checkHistory(t *testing.T, m *tiered.Manifest, old record.Epoch, newFrom record.Offset) {
	t.Helper()
	var epochs []tiered.EpochStart
	for i, s := range m.Segments {
		if s.Start >= s.Next || (i > 0 && s.Start != m.Segments[i-1].Next) {
			t.Fatalf("segment %d serves [%d, %d) after one ending at %d: overlap or gap\n%+v", i, s.Start, s.Next, m.Segments[max(i-1, 0)].Next, m.Segments)
		}
		epochs = append(epochs, s.Epochs...)
	}
	if !slices.IsSortedFunc(epochs, func(a, b tiered.EpochStart) int {
		if a.Epoch != b.Epoch {
			return int(a.Epoch - b.Epoch)
		}
		return int(a.Start - b.Start)
	}) {
		t.Fatalf("leader epochs go back in the manifest: %+v", epochs)
	}
	for _, e := range epochs {
		if e.Epoch <= old && e.Start >= newFrom {
			t.Fatalf("epoch %d (the deposed leader's or older) starts at %d, after the new leader's first offset %d", e.Epoch, e.Start, newFrom)
		}
	}
	if m.End <= newFrom {
		t.Fatalf("the manifest ends at %d, before the new leader's data at %d", m.End, newFrom)
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
