package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
// back round-robin through a cache of 16 never hold more than 17
// descriptors (counted by the cache and by the kernel: the cap, and one
// dirty file's descriptor waiting for its background close), and every file
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
			if got := openFDs(t) - before; got > capN+1 {
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
	if c.Open() > capN+1 {
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
	dir := t.TempDir()
	const files, writes = 16, 200
	for _, f := range hammerFiles(t, c.Wrap(OS{}), dir, files, writes, 0) {
		f.Close()
	}
	checkFileLengths(t, dir, files, writes)
}

// hammerFiles opens files files in dir through fs and runs a writer and
// a reader on each at once: writes one-byte appends (with a Sync every
// syncEvery, if not 0) against reads and Size calls. It fails the test on
// any error and returns the files, still open.
func hammerFiles(t *testing.T, fs FS, dir string, files, writes, syncEvery int) []File {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, files*2)
	fh := make([]File, files)
	for i := range files {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fh[i] = f
		wg.Add(2)
		go func() {
			defer wg.Done()
			for w := range writes {
				if _, err := f.Write([]byte("x")); err != nil {
					errs <- err
					return
				}
				if syncEvery > 0 && w%syncEvery == syncEvery-1 {
					if err := f.Sync(); err != nil {
						errs <- err
						return
					}
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
	return fh
}

// checkFileLengths fails the test unless each of the files files in dir
// holds writes bytes.
func checkFileLengths(t *testing.T, dir string, files, writes int) {
	t.Helper()
	for i := range files {
		got, err := ReadFile(OS{}, filepath.Join(dir, fmt.Sprint(i)))
		if err != nil || len(got) != writes {
			t.Fatalf("file %d: %d bytes, %v; want %d", i, len(got), err, writes)
		}
	}
}

// newCrashDir returns a MemFS with a durable directory /d.
func newCrashDir(t *testing.T) *MemFS {
	t.Helper()
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	return m
}

// openWritten opens /d/name through fs and writes data to it, unsynced.
func openWritten(t *testing.T, fs FS, name, data string) File {
	t.Helper()
	f, err := fs.OpenFile("/d/"+name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFDCacheClosesDirtyInBackground: with a cap of 16 (and so one
// descriptor over it for background closes), a dirty file evicted by another file's open is
// fsynced off the caller's path — the open returns while that fsync is
// still blocked — and the fsync's failure is returned by the file's next
// Sync, once; a second dirty eviction while the first is pending fsyncs
// inline; the descriptor count never passes 17; and writes synced by
// a Sync after the failure survive a crash.
func TestFDCacheClosesDirtyInBackground(t *testing.T) {
	m := newCrashDir(t)
	boom := errors.New("injected fsync failure")
	started, release := make(chan struct{}), make(chan struct{})
	var stuck atomic.Bool
	var once sync.Once
	m.InjectError(func(op Op, path string) error {
		if op != OpSync || path != "/d/a" {
			return nil
		}
		fail := false
		once.Do(func() {
			close(started)
			select {
			case <-release:
			case <-time.After(time.Minute): // only if the fsync blocks the open below
				stuck.Store(true)
			}
			fail = true
		})
		if fail {
			return boom
		}
		return nil
	})
	c := NewFDCache(16)
	fs := c.Wrap(m)
	a := openWritten(t, fs, "a", "a1")
	files := []File{a}
	for i := range 16 { // the 16th open passes the cap: a goes
		files = append(files, openWritten(t, fs, fmt.Sprint("f", i), "x"))
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	<-started
	if stuck.Load() {
		t.Fatal("the evicted file's fsync ran on the evicting open's path")
	}
	if c.Open() != 17 || c.pending.Load() != 1 {
		t.Fatalf("%d open, %d pending; want 17 with a's descriptor pending", c.Open(), c.pending.Load())
	}
	// The pending slot is taken: the next dirty victim (f0) is fsynced
	// inline, so it is durable as soon as the open returns.
	files = append(files, openWritten(t, fs, "g", "y"))
	if c.Open() > 17 {
		t.Fatalf("%d open, cap 16 and one pending", c.Open())
	}
	if got, err := ReadFile(m.CrashClone(CrashOptions{}), "/d/f0"); err != nil || string(got) != "x" {
		t.Fatalf("after a crash f0 holds %q, %v: evicted past the pending bound without its fsync", got, err)
	}
	close(release)
	if err := a.Sync(); !errors.Is(err, boom) {
		t.Fatalf("a.Sync after its background fsync failed: %v, want the failure", err)
	}
	if err := a.Sync(); err != nil {
		t.Fatalf("a second Sync: %v", err)
	}
	if got, err := ReadFile(m.CrashClone(CrashOptions{}), "/d/a"); err != nil || string(got) != "a1" {
		t.Fatalf("after a crash a holds %q, %v: its Sync after the failure did not make it durable", got, err)
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if c.Open() != 0 || c.pending.Load() != 0 {
		t.Fatalf("%d open, %d pending after every file closed", c.Open(), c.pending.Load())
	}
}

// TestFDCacheCloseReportsBackgroundFailure: a background fsync's failure
// that no Sync collected is returned by Close, which waits for it.
func TestFDCacheCloseReportsBackgroundFailure(t *testing.T) {
	m := newCrashDir(t)
	boom := errors.New("injected fsync failure")
	m.InjectError(ErrorOnce(OpSync, "/d/a", boom))
	c := NewFDCache(16)
	fs := c.Wrap(m)
	a := openWritten(t, fs, "a", "a1")
	var files []File
	for i := range 16 {
		files = append(files, openWritten(t, fs, fmt.Sprint("f", i), "x"))
	}
	if err := a.Close(); !errors.Is(err, boom) {
		t.Fatalf("a.Close after its background fsync failed: %v, want the failure", err)
	}
	for _, f := range files {
		f.Close()
	}
	if c.Open() != 0 {
		t.Fatalf("%d open after every file closed", c.Open())
	}
}

// TestFDCacheBackgroundSyncDurable: files evicted dirty and closed in the
// background are durable once their owner's Sync returns, which needs no
// reopen when the background fsync covered every write.
func TestFDCacheBackgroundSyncDurable(t *testing.T) {
	m := newCrashDir(t)
	c := NewFDCache(32)
	fs := c.Wrap(m)
	const files = 200
	var fh []File
	for i := range files {
		fh = append(fh, openWritten(t, fs, fmt.Sprint(i), fmt.Sprint("data ", i)))
		if c.Open() > 32+2 {
			t.Fatalf("%d open, cap 32 and 2 pending", c.Open())
		}
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	for _, f := range fh {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	crashed := m.CrashClone(CrashOptions{})
	for i := range files {
		if got, err := ReadFile(crashed, fmt.Sprint("/d/", i)); err != nil || string(got) != fmt.Sprint("data ", i) {
			t.Fatalf("after a crash file %d holds %q, %v", i, got, err)
		}
	}
	if c.pending.Load() != 0 || c.Open() > 32 {
		t.Fatalf("%d open, %d pending after every file was synced", c.Open(), c.pending.Load())
	}
	if reopens, _ := c.Stats(); reopens != 0 {
		t.Fatalf("%d reopens: Sync opened files the cache had closed with nothing to sync", reopens)
	}
	for _, f := range fh {
		f.Close()
	}
}

// TestFDCacheBackgroundNoLeak: on the OS, dirty files cycled through a cap
// of 32 never hold more than 34 descriptors (as the kernel counts them:
// 2 may wait for a background close), and once every file is synced and closed
// none is left.
func TestFDCacheBackgroundNoLeak(t *testing.T) {
	const files, capN, rounds = 200, 32, 3
	c := NewFDCache(capN)
	fs := c.Wrap(OS{})
	dir := t.TempDir()
	before := openFDs(t)
	var fh []File
	for i := range files {
		f, err := fs.OpenFile(filepath.Join(dir, fmt.Sprint(i)), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fh = append(fh, f)
	}
	for r := range rounds {
		for i, f := range fh {
			if _, err := f.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if got := openFDs(t) - before; got > capN+capN/16 {
				t.Fatalf("round %d file %d: %d more descriptors than before, cap %d", r, i, got, capN)
			}
		}
	}
	for _, f := range fh {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if c.pending.Load() != 0 || c.Open() > capN {
		t.Fatalf("after Sync of every file: %d open, %d pending, cap %d", c.Open(), c.pending.Load(), capN)
	}
	for i, f := range fh {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadFile(OS{}, filepath.Join(dir, fmt.Sprint(i))); err != nil || len(got) != rounds {
			t.Fatalf("file %d: %q, %v", i, got, err)
		}
	}
	if c.Open() != 0 {
		t.Fatalf("%d descriptors counted after every file closed", c.Open())
	}
	if got := openFDs(t) - before; got > 0 {
		t.Fatalf("%d descriptors leaked", got)
	}
}

// TestFDCacheConcurrentBackground: writers that sync, readers and closers
// on more files than a cap of 16 (so dirty evictions go to the background
// closers), under -race; every write is read back and nothing stays open.
func TestFDCacheConcurrentBackground(t *testing.T) {
	c := NewFDCache(16)
	dir := t.TempDir()
	const files, writes = 48, 100
	fh := hammerFiles(t, c.Wrap(OS{}), dir, files, writes, 10)
	var cwg sync.WaitGroup
	for i, f := range fh {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			if err := f.Close(); err != nil {
				t.Errorf("file %d: %v", i, err)
			}
		}()
	}
	cwg.Wait()
	if c.Open() != 0 || c.pending.Load() != 0 {
		t.Fatalf("%d open, %d pending after every file closed", c.Open(), c.pending.Load())
	}
	checkFileLengths(t, dir, files, writes)
}
