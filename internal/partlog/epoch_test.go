package partlog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// TestEndOffsetForEpochKafkaRules: OffsetForLeaderEpoch answers exactly as
// Kafka's LeaderEpochFileCache.endOffsetFor, including the §2.8 vector:
// C's cache {(1,0),(3,2)} at end 4 answers epoch 2 with (1, 2).
func TestEndOffsetForEpochKafkaRules(t *testing.T) {
	c := epochCache{entries: []epochEntry{{1, 0}, {3, 2}, {5, 10}}}
	const end = 14
	for _, tc := range []struct {
		ask       record.Epoch
		epoch     record.Epoch
		endOffset record.Offset
	}{
		{record.NoEpoch, record.NoEpoch, record.NoOffset}, // undefined
		{5, 5, end},                          // the latest ends at the log end
		{6, record.NoEpoch, record.NoOffset}, // above the latest: unknown
		{3, 3, 10},                           // a known epoch ends where the next starts
		{4, 3, 10},                           // between: the largest known below
		{2, 1, 2},                            // the double-failover vector
		{0, 0, 0},                            // older than the first entry: asked epoch, first start
	} {
		if e, o := c.endOffsetFor(tc.ask, end); e != tc.epoch || o != tc.endOffset {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.ask, e, o, tc.epoch, tc.endOffset)
		}
	}
	var empty epochCache
	if e, o := empty.endOffsetFor(1, end); e != record.NoEpoch || o != record.NoOffset {
		t.Errorf("empty cache: (%d, %d)", e, o)
	}
	older := epochCache{entries: []epochEntry{{4, 7}}}
	if e, o := older.endOffsetFor(2, end); e != 2 || o != 7 {
		t.Errorf("epoch older than a cache starting at (4,7): (%d, %d), want (2, 7)", e, o)
	}
}

// TestEpochCacheRebuiltFromHeaders: an unreadable leader-epoch checkpoint
// is rebuilt from the epochs batch headers carry (with a WARN naming it),
// not left empty — an empty cache would answer OffsetForLeaderEpoch with
// "unknown" and send a follower back to its high watermark.
func TestEpochCacheRebuiltFromHeaders(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(fs, dir, Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			epoch record.Epoch
			n     int
		}{{1, 2}, {3, 3}, {4, 1}} {
			if err := l.AssignEpoch(step.epoch); err != nil {
				t.Fatal(err)
			}
			for i := range step.n {
				mustAppend(t, l, batch(t, 1, fmt.Sprintf("e%d-%d", step.epoch, i)))
			}
		}
		want := fmt.Sprint(l.epochs.entries)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileSync(fs, dir, filepath.Join(dir, epochFile), []byte("garbage\n")); err != nil {
			t.Fatal(err)
		}
		var logs logSink
		l = mustOpen(t, fs, dir, Config{Logger: logs.logger()})
		if got := fmt.Sprint(l.epochs.entries); got != want {
			t.Fatalf("rebuilt epoch cache %s, want %s", got, want)
		}
		if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 5 {
			t.Fatalf("EndOffsetForEpoch(3) = (%d, %d), want (3, 5)", e, o)
		}
		if !strings.Contains(logs.String(), epochFile) {
			t.Fatalf("no WARN naming %s:\n%s", epochFile, logs.String())
		}
		b, _ := vfs.ReadFile(fs, filepath.Join(dir, epochFile))
		if strings.Contains(string(b), "garbage") {
			t.Fatal("the rebuilt cache was not stored")
		}
	})
}

// TestTruncateToEndDropsEmptyEpoch: a node elected leader assigns an epoch
// at its log end; if it loses leadership before writing anything in it,
// the follower's truncation to its own end must still drop that epoch
// (Kafka's truncateTo does), or its next fetch names it as the last
// fetched epoch, is told it diverges, truncates nowhere — forever. This
// is what the replication simulation found.
func TestTruncateToEndDropsEmptyEpoch(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		l := mustOpen(t, fs, dir, Config{})
		defer l.Close()
		if err := l.AssignEpoch(1); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, batch(t, 1, "e1"))
		if err := l.AssignEpoch(4); err != nil { // elected, then deposed before any append
			t.Fatal(err)
		}
		if got := l.LatestEpoch(); got != 4 {
			t.Fatalf("latest epoch %d, want 4", got)
		}
		if err := l.TruncateTo(l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		if got := l.LatestEpoch(); got != 1 {
			t.Fatalf("after truncating to the end the latest epoch is %d, want 1", got)
		}
		if e, o := l.EndOffsetForEpoch(1); e != 1 || o != l.LogEndOffset() {
			t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (1, %d)", e, o, l.LogEndOffset())
		}
	})
}
