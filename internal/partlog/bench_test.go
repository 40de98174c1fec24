package partlog

import (
	"crypto/rand"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// benchBatch is 100 records of 1 KiB incompressible values, uncompressed.
func benchBatch(b *testing.B) []byte {
	recs := make([]record.Record, 100)
	for i := range recs {
		v := make([]byte, 1024)
		rand.Read(v)
		recs[i] = record.Record{Offset: record.Offset(i), Timestamp: 1, Value: v}
	}
	out, err := record.Encode(0, recs, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

const benchBytes = 256 << 20 // bytes written per b.N iteration is one batch; the file is reset past this

// BenchmarkAppend measures Append of 100 × 1 KiB batches to a real file,
// beside BenchmarkRawWrite writing the same bytes with os.File.Write.
func BenchmarkAppend(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	dir := filepath.Join(b.TempDir(), "p")
	l, err := Open(vfs.Default, dir, Config{SegmentBytes: benchBytes, RetentionBytes: benchBytes, RetentionTime: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
		if l.Size() > 2*benchBytes {
			b.StopTimer()
			l.ApplyRetention()
			b.StartTimer()
		}
	}
}

func BenchmarkRawWrite(b *testing.B) {
	batch := benchBatch(b)
	b.SetBytes(int64(len(batch)))
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var written int64
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.Write(batch); err != nil {
			b.Fatal(err)
		}
		if written += int64(len(batch)); written > 2*benchBytes {
			b.StopTimer()
			f.Truncate(0)
			written = 0
			b.StartTimer()
		}
	}
}

// BenchmarkRead measures sequential Read with 1 MiB fetches over a 64 MiB log,
// beside BenchmarkRawRead doing 1 MiB ReadAt calls over the same bytes.
func BenchmarkRead(b *testing.B) {
	batch := benchBatch(b)
	dir := filepath.Join(b.TempDir(), "p")
	l, err := Open(vfs.Default, dir, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for l.Size() < 64<<20 {
		if _, err := l.Append(batch); err != nil {
			b.Fatal(err)
		}
	}
	var total int64
	from := record.Offset(0)
	b.ResetTimer()
	for b.Loop() {
		data, err := l.Read(from, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) == 0 {
			from = 0
			continue
		}
		total += int64(len(data))
		h, _ := record.ParseHeader(data[len(data)-len(batch):])
		from = h.NextOffset()
	}
	b.SetBytes(total / int64(max(b.N, 1)))
}

func BenchmarkRawRead(b *testing.B) {
	batch := benchBatch(b)
	p := filepath.Join(b.TempDir(), "raw")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var size int64
	for size < 64<<20 {
		f.Write(batch)
		size += int64(len(batch))
	}
	var total, pos int64
	b.ResetTimer()
	for b.Loop() {
		buf := make([]byte, 1<<20) // Read allocates its result too
		n, _ := f.ReadAt(buf, pos)
		if n == 0 {
			pos = 0
			continue
		}
		total += int64(n)
		pos += int64(n)
	}
	b.SetBytes(total / int64(max(b.N, 1)))
}

// BenchmarkAppendFsyncEach is flush.messages=1 on a real disk: 8 goroutines
// append one-record batches and each append returns only once it is
// fsynced, so the figure is acknowledged durable appends per second (ns/op
// is per append across all goroutines). Group commit shares one fsync among
// the appends waiting for it.
func BenchmarkAppendFsyncEach(b *testing.B) {
	v := make([]byte, 1024)
	rand.Read(v)
	batch, err := record.Encode(0, []record.Record{{Timestamp: 1, Value: v}}, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
	if err != nil {
		b.Fatal(err)
	}
	l, err := Open(vfs.Default, filepath.Join(b.TempDir(), "p"), Config{FlushMessages: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	b.SetParallelism(4) // 4 × GOMAXPROCS appenders
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		own := append([]byte(nil), batch...) // Append rewrites the base offset in place
		for pb.Next() {
			if _, err := l.Append(own); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
