package partlog

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// backend is a file system every storage test runs on.
type backend struct {
	name string
	fs   func(t testing.TB) (vfs.FS, string)
}

var backends = []backend{
	{"os", func(t testing.TB) (vfs.FS, string) { return vfs.Default, filepath.Join(t.TempDir(), "p0") }},
	{"mem", func(t testing.TB) (vfs.FS, string) { return vfs.NewMem(), "/data/p0" }},
}

// forEachFS runs fn once per backend as a parallel subtest.
func forEachFS(t *testing.T, fn func(t *testing.T, fs vfs.FS, dir string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fs, dir := b.fs(t)
			fn(t, fs, dir)
		})
	}
}

// abandon releases a log's files and goroutine the way a killed process
// would: nothing is synced and no clean-shutdown marker is written.
func abandon(l *Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed.Store(true)
	l.stopFlusher()
	l.segs.Lock()
	l.closeSegments()
	l.segs.Unlock()
}

// clock is an injectable clock for retention and segment.ms tests.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// tb is what test helpers need of *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// batch builds a v2 batch holding one record per value, all with timestamp ts.
func batch(t tb, ts int64, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: ts, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)}
	}
	b, err := record.Encode(0, recs, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: -1})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustOpen(t testing.TB, fs vfs.FS, dir string, cfg Config) *Log {
	t.Helper()
	l, err := Open(fs, dir, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func mustAppend(t testing.TB, l *Log, b []byte) record.Offset {
	t.Helper()
	o, err := l.Append(b)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return o
}

// readAll decodes every visible record from offset from onwards.
func readAll(t tb, l *Log, from record.Offset) []record.Record {
	t.Helper()
	var out []record.Record
	for {
		data, err := l.Read(from, 64<<10)
		if err != nil {
			t.Fatalf("read at %d: %v", from, err)
		}
		if len(data) == 0 {
			return out
		}
		for len(data) > 0 {
			h, err := record.Check(data)
			if err != nil {
				t.Fatalf("read returned a bad batch at %d: %v", from, err)
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range b.Records {
				if r.Offset >= from {
					out = append(out, r)
				}
			}
			from = h.NextOffset()
			data = data[h.Size():]
		}
	}
}

func values(rs []record.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

func offsets(rs []record.Record) []record.Offset {
	out := make([]record.Offset, len(rs))
	for i, r := range rs {
		out[i] = r.Offset
	}
	return out
}
