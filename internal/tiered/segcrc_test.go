package tiered

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/record"
	"github.com/strandmq/strand/internal/tiered/storetest"
)

// Folding two CRCs gives the CRC of the joined bytes, at every length,
// including empty halves and lengths past 2^k boundaries.
func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 8, 4095, 4096, 65536, 131073, 299_999, 300_000} {
		a, b := data[:cut], data[cut:]
		got := crc32cCombine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b)))
		if want := crc32.Checksum(data, castagnoli); got != want {
			t.Fatalf("cut at %d: combined %08x, want %08x", cut, got, want)
		}
	}
}

// segment encodes batches of n records of size bytes each, at
// consecutive offsets and a leader epoch, as a log segment holds them.
func segment(t testing.TB, rng *rand.Rand, shapes [][2]int) []byte {
	t.Helper()
	var seg []byte
	off := record.Offset(1000)
	for _, sh := range shapes {
		recs := make([]record.Record, sh[0])
		for i := range recs {
			v := make([]byte, sh[1])
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			recs[i] = record.Record{Offset: off + record.Offset(i), Timestamp: 1_700_000_000_000 + int64(i), Value: v}
		}
		var err error
		seg, err = record.AppendBatch(seg, off, recs, record.BatchOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LeaderEpoch: 7})
		if err != nil {
			t.Fatal(err)
		}
		off += record.Offset(len(recs))
	}
	return seg
}

// A segment's CRC-32C taken from its batches' own CRCs is the CRC-32C of
// its bytes, for small (hashed) and large (folded) batches mixed, and a
// segment that ends inside a batch or holds no batches is not taken
// from them.
func TestSegmentCRC32C(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seg := segment(t, rng, [][2]int{{1, 100}, {256, 1024}, {3, 10}, {20, 1000}, {64, 4096}, {1, 1}})
	got, ok := segmentCRC32C(seg)
	if want := crc32.Checksum(seg, castagnoli); !ok || got != want {
		t.Fatalf("from batches: %08x (ok %v), want the bytes' %08x", got, ok, want)
	}
	if _, ok := segmentCRC32C(seg[:len(seg)-1]); ok {
		t.Fatal("a segment ending inside its last batch was summed from its batches")
	}
	if _, ok := segmentCRC32C(bytes.Repeat([]byte("not a batch "), 100)); ok {
		t.Fatal("bytes that are no batches were summed as batches")
	}
}

// A batch whose bytes changed on disk after its CRC was written makes
// the batches' sum wrong; the store refuses it and PutFile uploads the
// bytes as they are under their own sum. A segment whose batches are
// intact but whose body is damaged on the way fails, to be retried.
func TestPutFileBatchesDisagree(t *testing.T) {
	s := storetest.Start(t)
	st, err := NewS3(S3Config{Endpoint: s.URL, Bucket: s.Bucket, Region: s.Region, AccessKey: s.AccessKey, SecretKey: s.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	seg := segment(t, rng, [][2]int{{64, 1024}, {64, 1024}, {2, 50}})
	ctx := context.Background()

	f := tempFile(t, seg)
	s.Corrupt(storetest.IsPut("intact.log"))
	if err := st.PutFile(ctx, "p/intact.log", f, int64(len(seg))); err == nil || !strings.Contains(err.Error(), "BadDigest") {
		t.Fatalf("intact batches damaged on the way: got %v, want the store's BadDigest", err)
	}

	rotted := bytes.Clone(seg)
	second := 12 + int(binary.BigEndian.Uint32(seg[batchLengthAt:]))
	rotted[second+1000] ^= 0x55 // inside the second batch's records, under its CRC
	if _, ok := segmentCRC32C(rotted); !ok {
		t.Fatal("the rotted segment no longer parses as batches")
	}
	f = tempFile(t, rotted)
	if err := st.PutFile(ctx, "p/rotted.log", f, int64(len(rotted))); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, "p/rotted.log", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, rotted) {
		t.Fatalf("stored %d bytes, want the file's %d as they are", len(got), len(rotted))
	}
}

// The checksum of a 64 MiB segment of 256-record 1 KB batches (the
// produce benchmark's), from its batches and from its bytes.
func BenchmarkSegmentCRC32C(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	one := segment(b, rng, [][2]int{{256, 1024}})
	seg := bytes.Repeat(one, 64<<20/len(one))
	b.Run("batches", func(b *testing.B) {
		b.SetBytes(int64(len(seg)))
		for b.Loop() {
			segmentCRC32C(seg)
		}
	})
	b.Run("bytes", func(b *testing.B) {
		b.SetBytes(int64(len(seg)))
		for b.Loop() {
			crc32.Checksum(seg, castagnoli)
		}
	})
}
