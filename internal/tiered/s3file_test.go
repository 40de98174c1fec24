package tiered

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/tiered/storetest"
)

// tempFile is a segment file holding b, open for reading until the test
// ends.
func tempFile(t *testing.T, b []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A segment uploaded from its file arrives whole, and one whose bytes
// change on the way is refused by the store for its CRC-32C and stored
// only when a retry arrives intact — never the corrupted copy.
func TestPutFileChecksummed(t *testing.T) {
	s := storetest.Start(t)
	st, err := NewS3(S3Config{Endpoint: s.URL, Bucket: s.Bucket, Region: s.Region, AccessKey: s.AccessKey, SecretKey: s.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 3<<20+17) // more than one checksum read, not a multiple of it
	_, _ = rand.Read(want)
	f := tempFile(t, want)
	ctx := context.Background()
	const key = "p/segment.log"

	s.Corrupt(storetest.IsPut(key))
	err = st.PutFile(ctx, key, f, int64(len(want)))
	if err == nil || !strings.Contains(err.Error(), "BadDigest") {
		t.Fatalf("a body corrupted on the way: got %v, want the store's BadDigest", err)
	}
	if _, err := st.Get(ctx, key, 0, -1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after the refused upload the object is there (%v): the corrupted copy was stored", err)
	}
	if err := st.PutFile(ctx, key, f, int64(len(want))); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stored %d bytes, want the file's %d, byte-identical", len(got), len(want))
	}
}

// A segment's checksum is the CRC-32C of its bytes whichever way it is
// read, and a file shorter than the mapping (truncated under it) is an
// error, not a crash of the broker.
func TestFileCRC32C(t *testing.T) {
	data := make([]byte, 5<<20+3)
	_, _ = rand.Read(data)
	f := tempFile(t, data)
	want := crc32.Checksum(data, castagnoli)
	read, err := readCRC32C(f, int64(len(data)))
	if err != nil || read != want {
		t.Fatalf("read: %08x, %v; want %08x", read, err, want)
	}
	for _, fromBatches := range []bool{false, true} { // random bytes are no batches: hashed either way
		mapped, err := mappedCRC32C(f, int64(len(data)), fromBatches)
		if errors.Is(err, errNoMapping) {
			t.Skip("no mapping on this platform")
		}
		if err != nil || mapped != want {
			t.Fatalf("mapped (from batches %v): %08x, %v; want %08x", fromBatches, mapped, err, want)
		}
		if _, err := mappedCRC32C(f, int64(len(data))+1<<20, fromBatches); err == nil {
			t.Fatal("a mapping past the file's end was checksummed without an error")
		}
	}
}
