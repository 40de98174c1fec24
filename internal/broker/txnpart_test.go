package broker

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/producer"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// txnBatch is a transactional batch of n keyed records from pid.
func txnBatch(t *testing.T, pid producer.ID, seq int32, key, value string) []byte {
	t.Helper()
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = int64(pid), 0, seq, true
	b, err := record.Encode(0, []record.Record{{Key: []byte(key), Value: []byte(value)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// txnAppend appends a transactional batch whose partition its coordinator
// has confirmed (the produce path's verification).
func txnAppend(ctx context.Context, p *Partition, batch []byte, acks Acks) (AppendResult, error) {
	res, c, err := p.AppendVerifiedAsync(batch, acks)
	if err != nil {
		return res, err
	}
	return res, c.Wait(ctx)
}

// readCommitted returns the values a read_committed client keeps from the
// partition, applying the fetch's aborted transactions as Kafka's clients
// do: a producer named by one whose first offset was reached has its
// transactional batches dropped until its abort marker. Control batches
// are not records.
func readCommitted(t *testing.T, p *Partition) []string {
	t.Helper()
	res, aborted, err := p.ReadCommittedInto(nil, p.LogStartOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(aborted, func(a, b producer.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	dropping := map[int64]bool{}
	var out []string
	for sc := record.Batches(res.Batches); sc.Next(); {
		h := sc.Header()
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			dropping[int64(aborted[0].ProducerID)] = true
			aborted = aborted[1:]
		}
		if h.IsControl() {
			if m, err := record.DecodeMarker(sc.Batch()); err == nil && !m.Commit {
				delete(dropping, h.ProducerID)
			}
			continue
		}
		if h.IsTransactional() && dropping[h.ProducerID] {
			continue
		}
		b, err := record.Decode(sc.Batch())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// TestTxnPartitionLifecycle pins the partition side of transactions: an
// open transaction holds the last stable offset at its first offset, a
// commit marker releases it, an abort marker indexes the transaction so
// read_committed readers drop it, a producer inside a transaction cannot
// write outside it, a stale marker is refused, and all of it survives a
// clean restart and a crash (rebuilt from the log).
func TestTxnPartitionLifecycle(t *testing.T) {
	t.Parallel()
	for _, crash := range []bool{false, true} {
		fs := vfs.NewMem()
		b := open(t, fs, "/d")
		mustCreate(t, b, TopicSpec{Name: "t", Partitions: 1, Configs: map[string]string{ConfigFlushMessages: "1"}})
		p, _ := b.Partition("t", 0)
		ctx := context.Background()
		if _, err := p.Append(ctx, encode(t, 1, record.DefaultBatchOptions()), AcksAll); err != nil { // offset 0
			t.Fatal(err)
		}
		const a, c = producer.ID(7), producer.ID(8)
		if _, err := p.Append(ctx, txnBatch(t, a, 0, "k", "a0"), AcksAll); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("transactional batch its coordinator did not confirm: %v", err)
		}
		if _, err := txnAppend(ctx, p, txnBatch(t, a, 0, "k", "a0"), AcksAll); err != nil { // offset 1
			t.Fatal(err)
		}
		if got := p.LastStableOffset(); got != 1 {
			t.Fatalf("LSO with a transaction open at 1 = %d", got)
		}
		if _, err := p.Append(ctx, idempotent(t, a, 1, 1), AcksAll); !errors.Is(err, ErrInvalidTxnState) {
			t.Fatalf("non-transactional batch inside a transaction: %v", err)
		}
		if _, err := txnAppend(ctx, p, txnBatch(t, c, 0, "k", "c0"), AcksAll); err != nil { // offset 2
			t.Fatal(err)
		}
		if err := p.WriteMarker(ctx, a, 0, true, 0); err != nil { // offset 3: commit a
			t.Fatal(err)
		}
		if got := p.LastStableOffset(); got != 2 {
			t.Fatalf("LSO after a's commit with c open at 2 = %d", got)
		}
		if err := p.WriteMarker(ctx, c, 0, false, 0); err != nil { // offset 4: abort c
			t.Fatal(err)
		}
		if got, hw := p.LastStableOffset(), p.HighWatermark(); got != hw || hw != 5 {
			t.Fatalf("LSO %d, HW %d after both ended, want 5 and 5", got, hw)
		}
		if _, err := txnAppend(ctx, p, txnBatch(t, c, 1, "k", "c1"), AcksAll); err != nil { // offset 5: c's next txn, open
			t.Fatal(err)
		}
		check := func(when string, p *Partition) {
			t.Helper()
			if got := p.LastStableOffset(); got != 5 {
				t.Fatalf("%s: LSO = %d, want 5 (c's open transaction)", when, got)
			}
			got := readCommitted(t, p)
			if len(got) != 2 || got[1] != "a0" {
				t.Fatalf("%s: read_committed values %q, want the plain record and a0", when, got)
			}
			res, aborted, _ := p.ReadCommittedInto(nil, 0, 1<<20)
			if len(aborted) != 1 || aborted[0].ProducerID != c || aborted[0].FirstOffset != 2 || aborted[0].LastOffset != 4 {
				t.Fatalf("%s: aborted %+v", when, aborted)
			}
			if res.LastStable != 5 {
				t.Fatalf("%s: read's LSO %d", when, res.LastStable)
			}
			if err := p.WriteMarker(ctx, a, -1, true, 0); !errors.Is(err, producer.ErrInvalidProducerEpoch) {
				t.Fatalf("%s: marker with a stale epoch: %v", when, err)
			}
		}
		check("before restart", p)
		if crash {
			crashed := fs.CrashClone(vfs.CrashOptions{})
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = open(t, crashed, "/d")
		} else {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			b = open(t, fs, "/d")
		}
		p, _ = b.Partition("t", 0)
		check("after restart (crash="+map[bool]string{false: "no", true: "yes"}[crash]+")", p)
		if err := p.WriteMarker(ctx, c, 0, true, 0); err != nil {
			t.Fatal(err)
		}
		if got := readCommitted(t, p); len(got) != 3 || got[2] != "c1" {
			t.Fatalf("after c's second txn commits: %q", got)
		}
		b.Close()
	}
}

// TestCompactionDropsAbortedTransactions: an aborted write of a key never
// supersedes its committed value, compaction removes the aborted records,
// and nothing past the last stable offset is cleaned.
func TestCompactionDropsAbortedTransactions(t *testing.T) {
	t.Parallel()
	b := open(t, vfs.NewMem(), "/d")
	defer b.Close()
	mustCreate(t, b, TopicSpec{Name: "c", Partitions: 1, Configs: map[string]string{
		ConfigCleanupPolicy: "compact", ConfigMinCleanableDirtyRatio: "0.01"}})
	p, _ := b.Partition("c", 0)
	ctx := context.Background()
	put := func(k, v string) {
		t.Helper()
		rb, _ := record.Encode(0, []record.Record{{Key: []byte(k), Value: []byte(v)}}, record.DefaultBatchOptions())
		if _, err := p.Append(ctx, rb, AcksAll); err != nil {
			t.Fatal(err)
		}
	}
	put("k", "committed")
	if _, err := txnAppend(ctx, p, txnBatch(t, 9, 0, "k", "aborted"), AcksAll); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMarker(ctx, 9, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	put("j", "x")
	if _, err := txnAppend(ctx, p, txnBatch(t, 10, 0, "j", "undecided"), AcksAll); err != nil {
		t.Fatal(err)
	}
	if err := p.Roll(); err != nil {
		t.Fatal(err)
	}
	b.CleanLogs()
	// j's transaction is open, so its segment is not cleaned yet: every
	// record is still there.
	if res, _ := p.Read(0, 1<<20); recordsIn(t, res.Batches) != 4 {
		t.Fatalf("cleaned past the LSO: %d records left", recordsIn(t, res.Batches))
	}
	if err := p.WriteMarker(ctx, 10, 0, true, 0); err != nil {
		t.Fatal(err)
	}
	put("z", "z")
	if err := p.Roll(); err != nil {
		t.Fatal(err)
	}
	b.CleanLogs()
	got := readCommitted(t, p)
	want := []string{"committed", "undecided", "z"}
	if len(got) != len(want) {
		t.Fatalf("after compaction read_committed %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after compaction read_committed %q, want %q", got, want)
		}
	}
	res, _ := p.Read(0, 1<<20)
	for sc := record.Batches(res.Batches); sc.Next(); {
		if h := sc.Header(); h.ProducerID == 9 && !h.IsControl() && h.NumRecords > 0 {
			bt, _ := record.Decode(sc.Batch())
			if len(bt.Records) > 0 {
				t.Fatalf("aborted record still in the log at %d", h.BaseOffset)
			}
		}
	}
}

func recordsIn(t *testing.T, batches []byte) int {
	t.Helper()
	n := 0
	for sc := record.Batches(batches); sc.Next(); {
		if h := sc.Header(); !h.IsControl() {
			bt, err := record.Decode(sc.Batch())
			if err != nil {
				t.Fatal(err)
			}
			n += len(bt.Records)
		}
	}
	return n
}

// Compaction removes a transaction marker once its transaction's records
// are all gone and delete.retention.ms has passed since the cleaner found
// it empty (two cleans, as Kafka's cleaner does); a producer's last marker
// stays. A reader that follows Kafka's client rule (drop a producer's
// batches from an aborted transaction's first offset until its abort
// marker) still sees the producer's later committed records: the partition
// no longer names the aborted transaction whose marker went. A restart
// finds no open transaction.
func TestCompactionRemovesEmptiedMarkers(t *testing.T) {
	t.Parallel()
	fs := vfs.NewMem()
	now := time.UnixMilli(1_700_000_000_000)
	clock := func(c *Config) { c.Now = func() time.Time { return now } }
	b := open(t, fs, "/d", clock)
	mustCreate(t, b, TopicSpec{Name: "c", Partitions: 1, Configs: map[string]string{
		ConfigCleanupPolicy: "compact", ConfigMinCleanableDirtyRatio: "0.01", ConfigDeleteRetentionMs: "60000"}})
	p, _ := b.Partition("c", 0)
	ctx := context.Background()
	txn := func(pid producer.ID, seq int32, key, value string, commit bool) {
		t.Helper()
		if _, err := txnAppend(ctx, p, txnBatch(t, pid, seq, key, value), AcksAll); err != nil {
			t.Fatal(err)
		}
		if err := p.WriteMarker(ctx, pid, 0, commit, 0); err != nil {
			t.Fatal(err)
		}
	}
	txn(11, 0, "k", "v1", true)  // superseded by v2: its marker goes
	txn(11, 1, "k", "v2", true)  // superseded by v4, but pid 11's last batch: stays
	txn(12, 0, "k", "v3", false) // aborted: its records and then its marker go
	txn(12, 1, "j", "j12", true) // pid 12's last: stays, and must stay readable
	put := func(k, v string) {
		rb, _ := record.Encode(0, []record.Record{{Key: []byte(k), Value: []byte(v)}}, record.DefaultBatchOptions())
		if _, err := p.Append(ctx, rb, AcksAll); err != nil {
			t.Fatal(err)
		}
	}
	put("k", "v4")
	markers := func() (commits, aborts int) {
		res, err := p.Read(0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for sc := record.Batches(res.Batches); sc.Next(); {
			if h := sc.Header(); h.IsControl() {
				m, err := record.DecodeMarker(sc.Batch())
				if err != nil {
					t.Fatal(err)
				}
				if m.Commit {
					commits++
				} else {
					aborts++
				}
			}
		}
		return commits, aborts
	}
	clean := func() {
		t.Helper()
		put("pad", "x")
		if err := p.Roll(); err != nil {
			t.Fatal(err)
		}
		b.CleanLogs()
	}
	clean()
	if c, a := markers(); c != 3 || a != 1 {
		t.Fatalf("first clean: %d commit and %d abort markers, want 3 and 1 (a marker waits delete.retention.ms)", c, a)
	}
	now = now.Add(61 * time.Second)
	clean()
	if c, a := markers(); c != 2 || a != 0 {
		t.Fatalf("after delete.retention.ms: %d commit and %d abort markers, want 2 and 0", c, a)
	}
	if got := readCommitted(t, p); strings.Join(got, ",") != "j12,v4,x" {
		t.Fatalf("read_committed after cleaning %q, want [j12 v4 x]", got)
	}
	b.Close()
	b = open(t, fs, "/d", clock)
	defer b.Close()
	p, _ = b.Partition("c", 0)
	if p.OpenTransactions() != 0 || p.LastStableOffset() != p.HighWatermark() {
		t.Fatalf("after restart: %d open transactions, LSO %d HW %d", p.OpenTransactions(), p.LastStableOffset(), p.HighWatermark())
	}
	if got := readCommitted(t, p); strings.Join(got, ",") != "j12,v4,x" {
		t.Fatalf("read_committed after restart %q, want [j12 v4 x]", got)
	}
}
