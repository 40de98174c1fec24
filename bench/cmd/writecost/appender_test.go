package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// openDirectOrPlain opens name with O_DIRECT where the file system takes
// it (ext4 does; tmpfs refuses with EINVAL), else without, so that the
// staging logic is tested everywhere and the alignment rules where they
// hold.
func openDirectOrPlain(t *testing.T, name string, block int, falloc int64) *directAppender {
	t.Helper()
	d, err := openDirect(name, block, falloc)
	if errors.Is(err, syscall.EINVAL) {
		t.Logf("no O_DIRECT in %s; testing the staging without it", filepath.Dir(name))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		d = newDirect(f, block)
		d.falloc = falloc
		return d
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDirectMatchesBuffered appends the same batches (sizes from 1 byte to
// past the staging buffer, most not block multiples) with the buffered
// write path and the O_DIRECT one, the latter both one pwrite per batch
// (mode direct) and several batches staged per pwrite (mode coalesce), and
// checks that the files are byte-identical, and that after every flush
// the O_DIRECT file holds exactly the bytes appended so far followed by
// zeros to the block's end: the tail block is re-written, never left
// stale or shifted.
func TestDirectMatchesBuffered(t *testing.T) {
	const block = 4096
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	var batches [][]byte
	for range 200 {
		var n int
		switch rng.IntN(5) {
		case 0:
			n = 1 + rng.IntN(10)
		case 1:
			n = block * (1 + rng.IntN(3)) // a block multiple
		case 2:
			n = 1<<20 + rng.IntN(3*block) // past the initial staging buffer
		default:
			n = 1 + rng.IntN(300_000)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32()) | 1 // no zero bytes, so padding shows
		}
		batches = append(batches, b)
	}

	bufName := filepath.Join(dir, "buffered.log")
	buf, err := openBuffered(bufName, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := buf.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(bufName)
	if err != nil {
		t.Fatal(err)
	}

	// Buffered with the file allocated ahead (KEEP_SIZE): O_APPEND must
	// still append at the logical end, and the file must not grow.
	pre, err := openBuffered(filepath.Join(dir, "prealloc.log"), 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		if err := pre.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := pre.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "prealloc.log")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("prealloc: file of %d bytes (%v) differs from the buffered one", len(got), err)
	}

	for _, v := range []struct {
		coalesce bool
		falloc   int64
	}{{false, 0}, {true, 0}, {false, 3 << 20}, {true, 1 << 20}} {
		coalesce := v.coalesce
		name := filepath.Join(dir, fmt.Sprintf("direct-%v-%d.log", v.coalesce, v.falloc))
		d := openDirectOrPlain(t, name, block, v.falloc)
		var appended int64
		for i, b := range batches {
			if coalesce {
				d.Stage(b)
				appended += int64(len(b))
				if rng.IntN(3) > 0 && i != len(batches)-1 {
					continue // leave it staged, as a writer with more queued
				}
				err = d.Flush()
			} else {
				appended += int64(len(b))
				err = d.Append(b)
			}
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			if d.Size() != appended {
				t.Fatalf("batch %d: size %d, appended %d", i, d.Size(), appended)
			}
			if i%17 == 0 || i == len(batches)-1 {
				checkOnDisk(t, name, want[:appended], block, v.falloc > 0)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("coalesce=%v: file of %d bytes differs from the buffered one of %d", coalesce, len(got), len(want))
		}
	}
}

// checkOnDisk reads the file as it is between appends (not yet truncated)
// and checks it is prefix then zeros to a block boundary (or, allocated
// ahead, to wherever the allocation ends).
func checkOnDisk(t *testing.T, name string, prefix []byte, block int, ahead bool) {
	t.Helper()
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	wantLen := (len(prefix) + block - 1) / block * block
	if len(got) != wantLen && !(ahead && len(got) > wantLen) {
		t.Fatalf("on disk %d bytes, want %d (%d appended, padded to a block)", len(got), wantLen, len(prefix))
	}
	if !bytes.Equal(got[:len(prefix)], prefix) {
		t.Fatalf("on disk: the %d bytes appended differ", len(prefix))
	}
	for i, c := range got[len(prefix):] {
		if c != 0 {
			t.Fatalf("on disk: padding byte %d is %d, want 0", len(prefix)+i, c)
		}
	}
}

func TestAlignedBuf(t *testing.T) {
	for _, n := range []int{1, 4096, 1 << 20} {
		b := alignedBuf(n, 4096)
		if len(b) != n || uintptrOfSlice(b)%4096 != 0 {
			t.Fatalf("alignedBuf(%d): len %d, address %% 4096 = %d", n, len(b), uintptrOfSlice(b)%4096)
		}
	}
}
