package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/broker"
	"github.com/strandmq/strand/internal/vfs"
)

// TestDiskFailuresAreStorageErrors: a full disk and a failed fsync reach
// the producer as KAFKA_STORAGE_ERROR with the reason in ErrorMessage; the
// server stays up, the full disk's partition takes appends again once space
// is back, and after a failed fsync only that partition refuses appends
// (until a restart recovers it) while the others carry on.
func TestDiskFailuresAreStorageErrors(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	ts := startServer(t, broker.Config{FS: fs, Dir: "/data"}, Config{})
	createTopic(t, ts.b, "full", 1, nil)
	createTopic(t, ts.b, "synced", 2, map[string]string{broker.ConfigFlushMessages: "1"})
	c := dial(t, ts.addr)
	produce := func(topic string, partition int32) (int16, string) {
		t.Helper()
		pp := producePartition(t, c.do(produceReq(topic, partition, batch(t, 1, -1, -1, -1)), 9))
		msg := ""
		if pp.ErrorMessage != nil {
			msg = *pp.ErrorMessage
		}
		return pp.ErrorCode, msg
	}

	fs.InjectError(vfs.ErrorOnce(vfs.OpWrite, "full-0/00000000000000000000.log", vfs.PartialWrite(syscall.ENOSPC, -1)))
	if code, msg := produce("full", 0); code != kerr.KafkaStorageError.Code || !strings.Contains(msg, "no space left on device") {
		t.Fatalf("produce on a full disk: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, _ := produce("full", 0); code != 0 {
		t.Fatalf("produce once space is back: %v", kerr.ErrorForCode(code))
	}

	fs.InjectError(vfs.ErrorOnce(vfs.OpSync, "synced-0/00000000000000000000.log", syscall.EIO))
	if code, msg := produce("synced", 0); code != kerr.KafkaStorageError.Code || !strings.Contains(msg, "input/output error") {
		t.Fatalf("produce whose fsync fails: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, msg := produce("synced", 0); code != kerr.KafkaStorageError.Code || !strings.Contains(msg, "reopen to recover") {
		t.Fatalf("produce after a failed fsync: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, _ := produce("synced", 1); code != 0 {
		t.Fatalf("the other partition after a failed fsync: %v", kerr.ErrorForCode(code))
	}
	// Shutting down reports the failed partition (its tail could not be
	// synced); the cleanup's second Close is a no-op.
	if err := ts.s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ts.b.Close(); err == nil || !strings.Contains(err.Error(), "synced-0") {
		t.Fatalf("close after a failed fsync: %v", err)
	}
}

// TestDamagedPartitionOffline: a sealed segment cut mid-batch after a
// clean stop takes that partition offline: produce, fetch and ListOffsets
// answer KAFKA_STORAGE_ERROR naming the file, the other partition serves,
// and the damaged files stay as they are.
func TestDamagedPartitionOffline(t *testing.T) {
	t.Parallel()
	dir := twoSealedPartitions(t)
	seg := filepath.Join(dir, "t-0", "00000000000000000000.log")
	fi, err := os.Stat(seg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, fi.Size()-30); err != nil {
		t.Fatal(err)
	}

	ts := startServer(t, broker.Config{Dir: dir}, Config{})
	c := dial(t, ts.addr)
	pp := producePartition(t, c.do(produceReq("t", 0, batch(t, 1, -1, -1, -1)), 9))
	if pp.ErrorCode != kerr.KafkaStorageError.Code || pp.ErrorMessage == nil || !strings.Contains(*pp.ErrorMessage, "00000000000000000000.log") {
		t.Fatalf("produce to the damaged partition: %v %v", kerr.ErrorForCode(pp.ErrorCode), pp.ErrorMessage)
	}
	tp, _ := ts.b.Topic("t")
	if fp := fetchPartition(t, c.do(fetchReq("t", tp.ID, map[int32]int64{0: 0}), 12)); fp.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from the damaged partition: %v", kerr.ErrorForCode(fp.ErrorCode))
	}
	if pp := producePartition(t, c.do(produceReq("t", 1, batch(t, 1, -1, -1, -1)), 9)); pp.ErrorCode != 0 || pp.BaseOffset != 120 {
		t.Fatalf("the healthy partition: %v at %d", kerr.ErrorForCode(pp.ErrorCode), pp.BaseOffset)
	}
	if fi2, _ := os.Stat(seg); fi2.Size() != fi.Size()-30 {
		t.Fatalf("damaged segment changed size: %d", fi2.Size())
	}
	if off := ts.b.OfflinePartitions(); len(off) != 1 || off[0].Name != "t-0" || !off[0].Damaged {
		t.Fatalf("offline partitions: %+v", off)
	}
}

// TestScrubbedCorruptionServedAsStorageError: bytes flipped inside a
// sealed segment pass every header check and would be served; the scrub
// finds them, the partition answers KAFKA_STORAGE_ERROR from then on (the
// other keeps serving), and fifty failing fetches log one line, not fifty.
func TestScrubbedCorruptionServedAsStorageError(t *testing.T) {
	t.Parallel()
	dir := twoSealedPartitions(t)
	seg := filepath.Join(dir, "t-0", "00000000000000000000.log")
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 16 { // inside the last batch's records: its header stays valid
		data[len(data)-20+i] ^= 0xff
	}
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}

	var logs lockedBuffer
	ts := startServer(t, broker.Config{Dir: dir}, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if off := ts.b.OfflinePartitions(); len(off) != 0 {
		t.Fatalf("offline before the scrub: %+v", off)
	}
	rep, err := ts.b.Scrub(context.Background())
	if err != nil || len(rep.Damaged) != 1 || rep.Damaged[0] != "t-0" {
		t.Fatalf("scrub: %+v, %v", rep, err)
	}
	tp, _ := ts.b.Topic("t")
	c := dial(t, ts.addr)
	for range 50 {
		if fp := fetchPartition(t, c.do(fetchReq("t", tp.ID, map[int32]int64{0: 0}), 12)); fp.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("fetch from the corrupt partition: %v", kerr.ErrorForCode(fp.ErrorCode))
		}
	}
	if pp := producePartition(t, c.do(produceReq("t", 1, batch(t, 1, -1, -1, -1)), 9)); pp.ErrorCode != 0 {
		t.Fatalf("the healthy partition: %v", kerr.ErrorForCode(pp.ErrorCode))
	}
	if n := strings.Count(logs.String(), "fetch failed"); n != 1 {
		t.Fatalf("%d log lines for 50 failing fetches, want 1:\n%s", n, logs.String())
	}
}

// TestFlushEachAcks1SurvivesPowerCut: on a flush.messages=1 topic, a
// record acknowledged at acks=1 over the wire is on disk: cut the power
// (a crash copy of the disk) right after the last acknowledgement, start a
// broker on what survived, and a consumer reads every acknowledged record.
func TestFlushEachAcks1SurvivesPowerCut(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	ts := startServer(t, broker.Config{FS: fs, Dir: "/d"}, Config{})
	createTopic(t, ts.b, "durable", 1, map[string]string{broker.ConfigFlushMessages: "1"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.DefaultProduceTopic("durable"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("r%02d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fs.CrashClone(vfs.CrashOptions{})

	after := startServer(t, broker.Config{FS: crashed, Dir: "/d"}, Config{})
	cons, err := kgo.NewClient(kgo.SeedBrokers(after.addr), kgo.ConsumeTopics("durable"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < n && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != n {
		t.Fatalf("after the power cut a consumer reads %d of %d acknowledged records: %v", len(got), n, got)
	}
	for i, v := range got {
		if want := fmt.Sprintf("r%02d", i); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}
}

// TestProduceTimeoutHonoured: an acks=-1 produce whose fsync hangs is
// answered REQUEST_TIMED_OUT at its TimeoutMillis (the connection stays
// usable); the batch stays written and becomes visible once the disk
// answers, even though no one waits for it any more.
func TestProduceTimeoutHonoured(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	ts := startServer(t, broker.Config{FS: fs, Dir: "/data"}, Config{})
	createTopic(t, ts.b, "synced", 1, map[string]string{broker.ConfigFlushMessages: "1"})
	c := dial(t, ts.addr)
	free := holdFirstLogSync(t, fs)
	req := produceReq("synced", 0, batch(t, 1, -1, -1, -1))
	req.TimeoutMillis = 300
	if pp := producePartition(t, c.do(req, 9)); pp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("produce whose fsync hangs past TimeoutMillis: %v", kerr.ErrorForCode(pp.ErrorCode))
	}
	c.do(kmsg.NewPtrApiVersionsRequest(), 3) // the connection still answers
	p, _ := ts.b.Partition("synced", 0)
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before the fsync completed", hw)
	}
	free()
	waitFor(t, "the timed-out batch to become visible", func() bool { return p.HighWatermark() == 1 })
}

// holdFirstLogSync makes the first fsync of a segment file on fs wait
// until the returned func is called (also at the test's end, before the
// server's Close, which would wait on the held fsync).
func holdFirstLogSync(t *testing.T, fs *vfs.MemFS) (free func()) {
	release := make(chan struct{})
	var once sync.Once
	free = func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	var held atomic.Bool
	fs.InjectError(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.HasSuffix(path, ".log") && held.CompareAndSwap(false, true) {
			<-release
		}
		return nil
	})
	return free
}

// twoSealedPartitions fills both partitions of topic "t" (2 KiB segments,
// so each has sealed ones) over the wire, stops the broker cleanly and
// returns its data directory.
func twoSealedPartitions(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	first := startServer(t, broker.Config{Dir: dir}, Config{})
	createTopic(t, first.b, "t", 2, map[string]string{broker.ConfigSegmentBytes: "2048"})
	c := dial(t, first.addr)
	for range 40 {
		for p := range int32(2) {
			if pp := producePartition(t, c.do(produceReq("t", p, batch(t, 3, -1, -1, -1)), 9)); pp.ErrorCode != 0 {
				t.Fatal(kerr.ErrorForCode(pp.ErrorCode))
			}
		}
	}
	c.conn.Close()
	if err := errors.Join(first.s.Close(), first.b.Close()); err != nil {
		t.Fatal(err)
	}
	return dir
}
