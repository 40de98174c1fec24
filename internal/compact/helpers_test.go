package compact

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

func TestMain(m *testing.M) {
	if os.Getenv("STRAND_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.DiscardHandler))
	}
	goleak.VerifyTestMain(m)
}

// tb is what helpers need of *testing.T and *rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// clock is an injectable clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

func newClock() *clock { return &clock{now: time.UnixMilli(1_700_000_000_000)} }

// backends: every storage test runs on the OS and on the in-memory FS.
var backends = []struct {
	name string
	fs   func(t testing.TB) (vfs.FS, string)
}{
	{"os", func(t testing.TB) (vfs.FS, string) { return vfs.Default, filepath.Join(t.TempDir(), "p0") }},
	{"mem", func(t testing.TB) (vfs.FS, string) { return vfs.NewMem(), "/data/p0" }},
}

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

func openLog(t tb, fs vfs.FS, dir string, c *clock, segmentBytes int64) *partlog.Log {
	t.Helper()
	l, err := partlog.Open(fs, dir, partlog.Config{SegmentBytes: segmentBytes, RetentionTime: -1, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// kv is a record to append: a nil value is a tombstone, a nil key keyless.
type kv struct{ key, value []byte }

func rec(k, v string) kv {
	r := kv{key: []byte(k), value: []byte(v)}
	if v == "<nil>" {
		r.value = nil
	}
	return r
}

// appendBatch appends one batch of records at time ts with the given
// producer id (-1: none) and returns its base offset.
func appendBatch(t tb, l *partlog.Log, ts int64, pid int64, seq int32, codec record.Codec, kvs ...kv) record.Offset {
	t.Helper()
	rs := make([]record.Record, len(kvs))
	for i, r := range kvs {
		rs[i] = record.Record{Offset: record.Offset(i), Timestamp: ts, Key: r.key, Value: r.value}
	}
	opts := record.DefaultBatchOptions()
	opts.Codec = codec
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
	}
	b, err := record.Encode(0, rs, opts)
	if err != nil {
		t.Fatal(err)
	}
	o, err := l.Append(b)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// readAll returns every batch header and record from the log start to the
// high watermark.
func readAll(t tb, l *partlog.Log) ([]record.Header, []record.Record) {
	t.Helper()
	var (
		hs []record.Header
		rs []record.Record
	)
	for off := l.LogStartOffset(); off < l.HighWatermark(); {
		b, err := l.Read(off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		sc := record.Batches(b)
		for sc.Next() {
			batch, err := record.Decode(sc.Batch())
			if err != nil {
				t.Fatal(err)
			}
			if batch.NextOffset() <= off {
				continue
			}
			hs = append(hs, batch.Header)
			for _, r := range batch.Records {
				if r.Offset >= off {
					rs = append(rs, r)
				}
			}
			off = batch.NextOffset()
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return hs, rs
}
