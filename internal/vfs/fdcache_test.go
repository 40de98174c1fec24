package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// openFDs counts this process's open descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(es)
}

// TestFDCacheBoundsDescriptors: 300 append-mode files written and read
// back round-robin through a cache of 16 never hold more than 16
// descriptors (counted by the cache and by the kernel), and every file
// reads back exactly what was written, across the closes and reopens.
func TestFDCacheBoundsDescriptors(t *testing.T) {
	const files, capN, rounds = 300, 16, 4
	c := NewFDCache(capN)
	fs := c.Wrap(OS{})
	dir := t.TempDir()
	before := openFDs(t)
	var fh []File
	want := make([][]byte, files)
	for i := range files {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fh = append(fh, f)
		if c.Open() > capN {
			t.Fatalf("%d descriptors open after opening %d files, cap %d", c.Open(), i+1, capN)
		}
	}
	for r := range rounds {
		for i, f := range fh {
			line := fmt.Appendf(nil, "file %d round %d\n", i, r)
			if _, err := f.Write(line); err != nil {
				t.Fatal(err)
			}
			want[i] = append(want[i], line...)
			if got := openFDs(t) - before; got > capN {
				t.Fatalf("round %d file %d: the process holds %d more descriptors than before, cap %d", r, i, got, capN)
			}
		}
		for i, f := range fh {
			got := make([]byte, len(want[i]))
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatalf("file %d: %v", i, err)
			}
			if !bytes.Equal(got, want[i]) {
				t.Fatalf("file %d reads %q, want %q", i, got, want[i])
			}
			if size, err := f.Size(); err != nil || size != int64(len(want[i])) {
				t.Fatalf("file %d: size %d, %v; want %d", i, size, err, len(want[i]))
			}
		}
	}
	if c.Open() > capN {
		t.Fatalf("%d descriptors open, cap %d", c.Open(), capN)
	}
	reopens, closes := c.Stats()
	if reopens == 0 || closes == 0 {
		t.Fatalf("reopens %d, closes %d: the cache never cycled a descriptor", reopens, closes)
	}
	for _, f := range fh {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if c.Open() != 0 {
		t.Fatalf("%d descriptors counted after every file closed", c.Open())
	}
	if got := openFDs(t) - before; got > 0 {
		t.Fatalf("%d descriptors leaked", got)
	}
	if err := fh[0].Close(); err == nil {
		t.Fatal("a second Close succeeded")
	}
}

// TestFDCacheKeepsPositionalFiles: a file read sequentially (Read), or
// opened without O_APPEND, depends on its descriptor's offset and is
// never closed behind its owner, even past the cap.
func TestFDCacheKeepsPositionalFiles(t *testing.T) {
	c := NewFDCache(2)
	fs := c.Wrap(OS{})
	dir := t.TempDir()
	seq, err := fs.OpenFile(filepath.Join(dir, "seq"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seq.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	// Read needs the offset; ReadAt does not move it.
	rd, err := fs.OpenFile(filepath.Join(dir, "seq"), os.O_RDONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := io.ReadFull(rd, buf); err != nil || string(buf) != "abc" {
		t.Fatalf("read %q, %v", buf, err)
	}
	plain, err := fs.OpenFile(filepath.Join(dir, "plain"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Write([]byte("12")); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // churn far past the cap
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint("churn", i)), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if _, err := io.ReadFull(rd, buf); err != nil || string(buf) != "def" {
		t.Fatalf("second read %q, %v: the sequential file lost its offset", buf, err)
	}
	if _, err := plain.Write([]byte("34")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(OS{}, filepath.Join(dir, "plain"))
	if err != nil || string(got) != "1234" {
		t.Fatalf("plain file holds %q, %v: its offset was lost", got, err)
	}
	for _, f := range []File{seq, rd, plain} {
		f.Close()
	}
}

// TestFDCacheSyncsDirtyBeforeClosing: on MemFS, which keeps only synced
// bytes through a crash, writes to a file the cache had to close (no
// clean one being left) survive the crash without their owner's Sync;
// and an fsync failing at that close is returned by the owner's next Sync.
func TestFDCacheSyncsDirtyBeforeClosing(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	c := NewFDCache(1)
	fs := c.Wrap(m)
	a, err := fs.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("kept")); err != nil {
		t.Fatal(err)
	}
	b, err := fs.OpenFile("/d/b", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644) // closes a, dirty
	if err != nil {
		t.Fatal(err)
	}
	if c.Open() != 1 {
		t.Fatalf("%d open, cap 1", c.Open())
	}
	crashed := m.CrashClone(CrashOptions{})
	if got, err := ReadFile(crashed, "/d/a"); err != nil || string(got) != "kept" {
		t.Fatalf("after a crash a holds %q, %v: closed without its fsync", got, err)
	}

	boom := errors.New("injected fsync failure")
	m.InjectError(ErrorOnce(OpSync, "/d/b", boom))
	if _, err := b.Write([]byte("lost?")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadAt(make([]byte, 4), 0); err != nil { // reopens a, closes dirty b
		t.Fatal(err)
	}
	if err := b.Sync(); !errors.Is(err, boom) {
		t.Fatalf("b.Sync after its fsync failed at close: %v, want the failure", err)
	}
	if err := b.Sync(); err != nil {
		t.Fatalf("a second Sync: %v", err)
	}
	a.Close()
	b.Close()
}

// TestFDCacheConcurrent: readers and writers on more files than the cap,
// under -race, with the cache closing descriptors between their calls.
func TestFDCacheConcurrent(t *testing.T) {
	c := NewFDCache(4)
	fs := c.Wrap(OS{})
	dir := t.TempDir()
	const files, writes = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, files*2)
	for i := range files {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range writes {
				if _, err := f.Write([]byte("x")); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			b := make([]byte, 1)
			for range writes {
				if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
					errs <- err
					return
				}
				if _, err := f.Size(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range files {
		got, err := ReadFile(OS{}, filepath.Join(dir, fmt.Sprint(i)))
		if err != nil || len(got) != writes {
			t.Fatalf("file %d: %d bytes, %v; want %d", i, len(got), err, writes)
		}
	}
}
