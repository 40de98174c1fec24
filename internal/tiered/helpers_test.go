package tiered

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered/storetest"
	"github.com/strandmq/strand/internal/vfs"
)

// startS3 starts an S3-compatible server (storetest: gofakes3, or
// the external store CI runs) and returns a client on a fresh bucket in it.
func startS3(t testing.TB) *S3 {
	t.Helper()
	st := storetest.Start(t)
	s, err := NewS3(S3Config{Endpoint: st.URL, Bucket: st.Bucket, Region: st.Region, AccessKey: st.AccessKey, SecretKey: st.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func newTier(t testing.TB, s Store) *Tier {
	t.Helper()
	tr, err := New(Config{Store: s, Prefix: "test/", Backoff: time.Millisecond, ChunkBytes: 4096, CacheBytes: 64 << 10,
		UploadBytesPerSecond: 1 << 40,
		OrphanGrace:          time.Nanosecond, Now: func() time.Time { return time.Now().Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// openLog opens a log with small segments in a temporary directory.
func openLog(t testing.TB, dir string) *partlog.Log {
	t.Helper()
	l, err := partlog.Open(vfs.Default, dir, partlog.Config{SegmentBytes: 1024, IndexIntervalBytes: 128,
		RetentionTime: -1, RetentionBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func value(o int) string { return fmt.Sprintf("value-%06d-%s", o, strings.Repeat("x", 40)) }

// fill appends n one-record batches, record i holding value(first+i).
func fill(t testing.TB, l *partlog.Log, n int) {
	t.Helper()
	for range n {
		o := int(l.LogEndOffset())
		b, err := record.Encode(0, []record.Record{{Timestamp: time.Now().UnixMilli(), Value: []byte(value(o))}},
			record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(b); err != nil {
			t.Fatal(err)
		}
	}
}

// readBoth reads every record from offset 0 the way a broker serves a
// fetch: from the store below the local log start, from the log above.
func readBoth(t testing.TB, p *Partition, l *partlog.Log) []record.Record {
	t.Helper()
	var out []record.Record
	from := record.Offset(0)
	for from < l.HighWatermark() {
		var data []byte
		var err error
		if from < l.LogStartOffset() {
			data, err = p.Read(context.Background(), from, 1000)
		} else {
			data, err = l.Read(from, 1000)
		}
		if err != nil {
			t.Fatalf("read at %d: %v", from, err)
		}
		if len(data) == 0 {
			t.Fatalf("empty read at %d", from)
		}
		for len(data) > 0 {
			h, err := record.Check(data)
			if err != nil {
				t.Fatalf("bad batch at %d: %v", from, err)
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
	return out
}

// faulty wraps a store and fails the operations fail says to.
type faulty struct {
	Store
	fail atomic.Pointer[func(op, key string) bool]
}

func (f *faulty) check(op, key string) error {
	if fn := f.fail.Load(); fn != nil && (*fn)(op, key) {
		return fmt.Errorf("injected: %s %s: 503 SlowDown", op, key)
	}
	return nil
}

func (f *faulty) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	if err := f.check("put", key); err != nil {
		return err
	}
	return f.Store.Put(ctx, key, body, size)
}

func (f *faulty) setFail(fn func(op, key string) bool) { f.fail.Store(&fn) }

func keys(t testing.TB, s Store, prefix string) []string {
	t.Helper()
	objs, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	return out
}

func tempDir(t testing.TB) string { return filepath.Join(t.TempDir(), "p0") }
