package compact

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/vfs"
)

// BenchmarkClean measures cleaner throughput in MB/s of input log: 16 MiB of
// 1 KiB records, 16 to a batch, in 1 MiB segments, with 10% unique keys (so
// about nine records in ten are superseded). Each iteration cleans a fresh
// copy of the uncleaned log. The lz4 case measures MB/s of compressed input
// (values are random letters: lz4 saves little on them).
func BenchmarkClean(b *testing.B) {
	const (
		records   = 16 << 10
		valueSize = 1 << 10
		perBatch  = 16
		segBytes  = 1 << 20
	)
	build := func(b *testing.B, fs vfs.FS, dir string, codec record.Codec) int64 {
		c := newClock()
		l, err := partlog.Open(fs, dir, partlog.Config{SegmentBytes: segBytes, RetentionTime: -1, Now: c.Now})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		ts := c.Now().UnixMilli()
		for i := 0; i < records; i += perBatch {
			rs := make([]record.Record, perBatch)
			for j := range rs {
				value := make([]byte, valueSize)
				for k := range value {
					value[k] = byte('a' + rng.IntN(26))
				}
				rs[j] = record.Record{Offset: record.Offset(j), Timestamp: ts,
					Key: fmt.Appendf(nil, "key-%06d", rng.IntN(records/10)), Value: value}
			}
			opts := record.DefaultBatchOptions()
			opts.Codec = codec
			batch, err := record.Encode(0, rs, opts)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Roll(); err != nil {
			b.Fatal(err)
		}
		var size int64
		for _, s := range l.SealedSegments() {
			size += s.Size
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		return size
	}
	run := func(b *testing.B, fresh func() (vfs.FS, string)) {
		b.ReportAllocs()
		var kept int64
		for b.Loop() {
			b.StopTimer()
			fs, dir := fresh()
			c := newClock()
			l, err := partlog.Open(fs, dir, partlog.Config{SegmentBytes: segBytes, RetentionTime: -1, Now: c.Now})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			st, err := (&Cleaner{FS: fs, Now: c.Now}).Clean(l, DefaultPolicy())
			if err != nil || !st.Cleaned {
				b.Fatalf("Clean = %+v, %v", st, err)
			}
			b.StopTimer()
			kept = st.RecordsKept
			l.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(kept), "kept-records")
	}
	for _, codec := range []record.Codec{record.CodecNone, record.CodecLZ4} {
		b.Run("mem/"+codec.String(), func(b *testing.B) {
			base := vfs.NewMem()
			b.SetBytes(build(b, base, "/p", codec))
			run(b, func() (vfs.FS, string) { return base.CrashClone(vfs.CrashOptions{}), "/p" })
		})
	}
	b.Run("os/none", func(b *testing.B) {
		src := filepath.Join(b.TempDir(), "src")
		b.SetBytes(build(b, vfs.Default, src, record.CodecNone))
		n := 0
		run(b, func() (vfs.FS, string) {
			n++
			dst := filepath.Join(b.TempDir(), fmt.Sprint("p", n))
			copyDir(b, src, dst)
			return vfs.Default, dst
		})
	})
}

func copyDir(b *testing.B, src, dst string) {
	fs := vfs.Default
	if err := fs.MkdirAll(dst, 0o755); err != nil {
		b.Fatal(err)
	}
	names, err := fs.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		raw, err := vfs.ReadFile(fs, filepath.Join(src, name))
		if err != nil {
			b.Fatal(err)
		}
		f, err := vfs.Create(fs, filepath.Join(dst, name))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(raw); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}
