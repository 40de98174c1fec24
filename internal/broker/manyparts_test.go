package broker

import (
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
			total += int(p.log.LogEndOffset())
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
