package broker

import (
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// syncLog is a log sink tests read after the fact.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestManyPartitionsStartStop: a broker with many partitions (200 here;
// STRAND_PARTITIONS=6000 for the measurement) closes and reopens
// with every record, and reports both durations with the partition count.
func TestManyPartitionsStartStop(t *testing.T) {
	n := 200
	if v, err := strconv.Atoi(os.Getenv("STRAND_PARTITIONS")); err == nil && v > 0 {
		n = v
	}
	dir := t.TempDir()
	var logs syncLog
	withLogs := func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }
	b := open(t, vfs.Default, dir, withLogs)
	const perTopic = 100
	for i := 0; i < n; i += perTopic {
		mustCreate(t, b, TopicSpec{Name: "t" + strconv.Itoa(i/perTopic), Partitions: int32(min(perTopic, n-i))})
	}
	for i := range n {
		tp, _ := b.Topic("t" + strconv.Itoa(i/perTopic))
		p, _ := tp.Partition(PartitionID(i % perTopic))
		if _, err := p.Append(t.Context(), encode(t, 1, record.DefaultBatchOptions()), AcksLeader); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Since(start)
	start = time.Now()
	b = open(t, vfs.Default, dir, withLogs)
	opened := time.Since(start)
	defer b.Close()
	t.Logf("%d partitions: close %v, open %v", n, closed.Round(time.Millisecond), opened.Round(time.Millisecond))
	total, parts := 0, 0
	for _, tp := range b.Topics() {
		for _, p := range tp.partitions {
			total += int(p.Log().LogEndOffset())
			parts++
		}
	}
	if total != n {
		t.Fatalf("%d records after the restart, want %d", total, n)
	}
	out := logs.String()
	for _, want := range []string{"broker: closed partitions", "broker: opened partitions", "partitions=" + strconv.Itoa(parts)} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestLogFileCap: with --log-max-open-files at 24, a broker with 40
// partitions of several segments each (120+ files) never holds more than
// the cap of log descriptors while every partition is written and read
// from its first offset, and after a restart under the same cap every
// batch reads back byte for byte (the segments opened lazily again).
func TestLogFileCap(t *testing.T) {
	const parts, batches, capN = 40, 6, 24
	// Two more than the cap: the background flusher may hold one reopened
	// file for its fsync at the moment of a check (the cap is soft by the
	// operations in flight, vfs.FDCache).
	const slack = 2
	dir := t.TempDir()
	withCap := func(c *Config) { c.MaxOpenLogFiles = capN }
	b := open(t, vfs.Default, dir, withCap)
	mustCreate(t, b, TopicSpec{Name: "many", Partitions: parts,
		Configs: map[string]string{ConfigSegmentBytes: "200"}}) // a segment per batch or so
	check := func(when string) {
		t.Helper()
		if n := b.files.Open(); n > capN+slack {
			t.Fatalf("%s: %d log descriptors open, cap %d", when, n, capN)
		}
	}
	tp, _ := b.Topic("many")
	var want [parts][][]byte
	for round := range batches {
		for i := range parts {
			p, _ := tp.Partition(PartitionID(i))
			batch := encode(t, 1+(i+round)%3, record.DefaultBatchOptions())
			if _, err := p.Append(t.Context(), batch, AcksLeader); err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], batch)
			check("writing")
		}
	}
	readAll := func(when string) {
		t.Helper()
		for i := range parts {
			p, _ := tp.Partition(PartitionID(i))
			var got [][]byte
			for from := record.Offset(0); from < p.Log().HighWatermark(); {
				res, err := p.Read(from, 1) // one batch a read
				if err != nil {
					t.Fatalf("%s: partition %d from %d: %v", when, i, from, err)
				}
				h, err := record.ParseHeader(res.Batches)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, res.Batches[:h.Size()])
				from = h.NextOffset()
				check(when)
			}
			if len(got) != len(want[i]) {
				t.Fatalf("%s: partition %d has %d batches, want %d", when, i, len(got), len(want[i]))
			}
			for j := range got {
				// From the CRC on, a batch is stored as produced.
				if !bytes.Equal(got[j][17:], want[i][j][17:]) {
					t.Fatalf("%s: partition %d batch %d differs", when, i, j)
				}
			}
		}
	}
	readAll("reading")
	if reopens, closes := b.files.Stats(); reopens == 0 || closes == 0 {
		t.Fatalf("reopens %d, closes %d: the cap never closed a file", reopens, closes)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.files.Open() != 0 {
		t.Fatalf("%d log descriptors counted after Close", b.files.Open())
	}
	b = open(t, vfs.Default, dir, withCap)
	defer b.Close()
	check("after the restart")
	tp, _ = b.Topic("many")
	readAll("reading after the restart")
}
