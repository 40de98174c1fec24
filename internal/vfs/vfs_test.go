package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// backend makes a fresh file system and an existing directory to work in.
type backend struct {
	name string
	make func(t *testing.T) (FS, string)
}

var backends = []backend{
	{"os", func(t *testing.T) (FS, string) { return OS{}, t.TempDir() }},
	{"mem", func(t *testing.T) (FS, string) {
		m := NewMem()
		const dir = "/data"
		if err := m.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return m, dir
	}},
}

// forEachFS runs test on every backend, in parallel.
func forEachFS(t *testing.T, test func(t *testing.T, fs FS, dir string)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fs, dir := b.make(t)
			test(t, fs, dir)
		})
	}
}

func mustCreate(t *testing.T, fs FS, name string, data string) File {
	t.Helper()
	f, err := Create(fs, name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	return f
}

func mustWriteFile(t *testing.T, fs FS, name string, data string) {
	t.Helper()
	f := mustCreate(t, fs, name, data)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, fs FS, name string) string {
	t.Helper()
	b, err := ReadFile(fs, name)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return string(b)
}

func mustReadDir(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	names, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatalf("readdir %s: %v", dir, err)
	}
	return names
}

func wantNotExist(t *testing.T, fs FS, name string) {
	t.Helper()
	if _, err := fs.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat %s: got %v, want ErrNotExist", name, err)
	}
}

func wantSize(t *testing.T, f File, want int64) {
	t.Helper()
	got, err := f.Size()
	if err != nil || got != want {
		t.Fatalf("size: got %d, %v; want %d", got, err, want)
	}
}

// contractTests pin the behaviour every FS must share with the OS.
var contractTests = []struct {
	name string
	test func(t *testing.T, fs FS, dir string)
}{
	{"ReadWrite", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fs, name, "hello, world")
		// Read and Write share the offset, which is now at the end.
		if n, err := f.Read(make([]byte, 4)); n != 0 || err != io.EOF {
			t.Fatalf("read at end: %d, %v", n, err)
		}
		f.Close()
		r, err := Open(fs, name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Name() != name {
			t.Fatalf("name %q, want %q", r.Name(), name)
		}
		buf := make([]byte, 5)
		if n, err := r.Read(buf); n != 5 || err != nil || string(buf) != "hello" {
			t.Fatalf("read: %d %v %q", n, err, buf)
		}
		rest := make([]byte, 100)
		if n, err := r.Read(rest); n != 7 || err != nil || string(rest[:n]) != ", world" {
			t.Fatalf("read rest: %d %v %q", n, err, rest[:n])
		}
		if n, err := r.Read(rest); n != 0 || err != io.EOF {
			t.Fatalf("read at EOF: %d %v", n, err)
		}
		if n, err := r.Read(nil); n != 0 || err != nil {
			t.Fatalf("empty read: %d %v", n, err)
		}
	}},
	{"ReadAt", func(t *testing.T, fs FS, dir string) {
		f := mustCreate(t, fs, filepath.Join(dir, "f"), "hello, world")
		defer f.Close()
		for _, tc := range []struct {
			off     int64
			size    int
			want    string
			wantErr error
		}{
			{0, 5, "hello", nil},
			{7, 5, "world", nil},
			{7, 10, "world", io.EOF},
			{11, 1, "d", nil},
			{12, 1, "", io.EOF},
			{100, 4, "", io.EOF},
			{12, 0, "", nil},
		} {
			buf := make([]byte, tc.size)
			n, err := f.ReadAt(buf, tc.off)
			if string(buf[:n]) != tc.want || err != tc.wantErr {
				t.Errorf("ReadAt(%d, %d) = %q, %v; want %q, %v", tc.size, tc.off, buf[:n], err, tc.want, tc.wantErr)
			}
		}
		if _, err := f.ReadAt(make([]byte, 1), -1); err == nil || err == io.EOF {
			t.Errorf("negative offset: %v", err)
		}
	}},
	{"AccessMode", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		mustWriteFile(t, fs, name, "abc")
		r, err := Open(fs, name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := r.Write([]byte("x")); err == nil {
			t.Error("write to read-only file succeeded")
		}
		w, err := fs.OpenFile(name, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Read(make([]byte, 1)); err == nil || err == io.EOF {
			t.Errorf("read from write-only file: %v", err)
		}
		if got := mustRead(t, fs, name); got != "abc" {
			t.Errorf("contents %q", got)
		}
	}},
	{"Truncate", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fs, name, "0123456789")
		defer f.Close()
		if err := f.Truncate(4); err != nil {
			t.Fatal(err)
		}
		wantSize(t, f, 4)
		if err := f.Truncate(8); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, name); got != "0123\x00\x00\x00\x00" {
			t.Fatalf("after extend: %q", got)
		}
		// Truncate leaves the offset alone: this write lands at 10, leaving a hole.
		if _, err := f.Write([]byte("xy")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, name); got != "0123\x00\x00\x00\x00\x00\x00xy" {
			t.Fatalf("after write: %q", got)
		}
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		wantSize(t, f, 0)
	}},
	{"OpenTrunc", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		mustWriteFile(t, fs, name, "old contents")
		mustWriteFile(t, fs, name, "new")
		if got := mustRead(t, fs, name); got != "new" {
			t.Fatalf("got %q", got)
		}
	}},
	{"Rename", func(t *testing.T, fs FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		mustWriteFile(t, fs, a, "A")
		mustWriteFile(t, fs, b, "B")
		if err := fs.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, b); got != "A" {
			t.Fatalf("b = %q", got)
		}
		wantNotExist(t, fs, a)
		if got := mustReadDir(t, fs, dir); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("readdir %q", got)
		}
		if err := fs.Rename(a, b); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("rename missing: %v", err)
		}
		// Into another directory.
		sub := filepath.Join(dir, "sub")
		if err := fs.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := fs.Rename(b, filepath.Join(sub, "c")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, filepath.Join(sub, "c")); got != "A" {
			t.Fatalf("sub/c = %q", got)
		}
	}},
	{"RenameOpenFile", func(t *testing.T, fs FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		f := mustCreate(t, fs, a, "one")
		defer f.Close()
		if err := fs.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("two")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, b); got != "onetwo" {
			t.Fatalf("b = %q", got)
		}
	}},
	{"Remove", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fs, name, "still here")
		defer f.Close()
		if err := fs.Remove(name); err != nil {
			t.Fatal(err)
		}
		wantNotExist(t, fs, name)
		if err := fs.Remove(name); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("remove missing: %v", err)
		}
		// The open handle still reads, as after unlink(2).
		buf := make([]byte, 10)
		if n, err := f.ReadAt(buf, 0); n != 10 || err != nil || string(buf) != "still here" {
			t.Fatalf("ReadAt after remove: %d %v %q", n, err, buf)
		}
		// A new file under the same name is a different file.
		mustWriteFile(t, fs, name, "new")
		if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "still here" {
			t.Fatalf("old handle sees %q", buf[:n])
		}
		sub := filepath.Join(dir, "sub")
		if err := fs.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWriteFile(t, fs, filepath.Join(sub, "x"), "x")
		if err := fs.Remove(sub); err == nil {
			t.Fatal("removed a non-empty directory")
		}
		if err := fs.Remove(filepath.Join(sub, "x")); err != nil {
			t.Fatal(err)
		}
		if err := fs.Remove(sub); err != nil {
			t.Fatal(err)
		}
		wantNotExist(t, fs, sub)
	}},
	{"RemoveAll", func(t *testing.T, fs FS, dir string) {
		sub := filepath.Join(dir, "sub")
		if err := fs.MkdirAll(filepath.Join(sub, "deeper"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWriteFile(t, fs, filepath.Join(sub, "a"), "a")
		mustWriteFile(t, fs, filepath.Join(sub, "deeper", "b"), "b")
		if err := fs.RemoveAll(sub); err != nil {
			t.Fatal(err)
		}
		wantNotExist(t, fs, sub)
		wantNotExist(t, fs, filepath.Join(sub, "deeper", "b"))
		if err := fs.RemoveAll(sub); err != nil {
			t.Fatalf("RemoveAll missing: %v", err)
		}
	}},
	{"ReadDirSorted", func(t *testing.T, fs FS, dir string) {
		for _, n := range []string{"c", "a", "10", "b", "2"} {
			mustWriteFile(t, fs, filepath.Join(dir, n), n)
		}
		if err := fs.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		want := []string{"10", "2", "a", "b", "c", "sub"}
		if got := mustReadDir(t, fs, dir); !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if got := mustReadDir(t, fs, filepath.Join(dir, "sub")); len(got) != 0 {
			t.Fatalf("empty dir: %q", got)
		}
		if _, err := fs.ReadDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing dir: %v", err)
		}
	}},
	{"Append", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		open := func() File {
			f, err := fs.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		f1, f2 := open(), open()
		for _, w := range []struct {
			f File
			s string
		}{{f1, "ab"}, {f2, "cd"}, {f1, "ef"}} {
			if _, err := w.f.Write([]byte(w.s)); err != nil {
				t.Fatal(err)
			}
		}
		f1.Close()
		f2.Close()
		if got := mustRead(t, fs, name); got != "abcdef" {
			t.Fatalf("got %q", got)
		}
		// After a truncate, an appending handle writes at the new end.
		f, err := fs.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(1); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("z")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, fs, name); got != "az" {
			t.Fatalf("after truncate: %q", got)
		}
	}},
	{"Exclusive", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		flag := os.O_RDWR | os.O_CREATE | os.O_EXCL
		f, err := fs.OpenFile(name, flag, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, err := fs.OpenFile(name, flag, 0o644); !errors.Is(err, os.ErrExist) {
			t.Fatalf("second O_EXCL: %v", err)
		}
	}},
	{"OpenMissing", func(t *testing.T, fs FS, dir string) {
		if _, err := Open(fs, filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("open missing: %v", err)
		}
		if _, err := Create(fs, filepath.Join(dir, "nodir", "f")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("create in missing dir: %v", err)
		}
		var pe *os.PathError
		if _, err := Open(fs, filepath.Join(dir, "nope")); !errors.As(err, &pe) {
			t.Fatalf("not a *PathError: %T", err)
		}
	}},
	{"Stat", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fs, name, "12345")
		defer f.Close()
		fi, err := fs.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != "f" || fi.Size() != 5 || fi.IsDir() || !fi.Mode().IsRegular() {
			t.Fatalf("stat file: %s %d %v %v", fi.Name(), fi.Size(), fi.IsDir(), fi.Mode())
		}
		wantSize(t, f, 5)
		if fi, err = fs.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("stat dir: %v %v", fi, err)
		}
		wantNotExist(t, fs, filepath.Join(dir, "nope"))
	}},
	{"Closed", func(t *testing.T, fs FS, dir string) {
		f := mustCreate(t, fs, filepath.Join(dir, "f"), "x")
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("second close: %v", err)
		}
		if _, err := f.Write([]byte("y")); !errors.Is(err, os.ErrClosed) {
			t.Errorf("write after close: %v", err)
		}
		if _, err := f.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
		if err := f.Sync(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("sync after close: %v", err)
		}
	}},
	{"MkdirAll", func(t *testing.T, fs FS, dir string) {
		deep := filepath.Join(dir, "a", "b", "c")
		for range 2 { // idempotent
			if err := fs.MkdirAll(deep, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mustWriteFile(t, fs, filepath.Join(dir, "file"), "")
		if err := fs.MkdirAll(filepath.Join(dir, "file", "x"), 0o755); err == nil {
			t.Fatal("MkdirAll through a file succeeded")
		}
	}},
	{"SyncDir", func(t *testing.T, fs FS, dir string) {
		mustWriteFile(t, fs, filepath.Join(dir, "f"), "x")
		if err := fs.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		if err := fs.SyncDir(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("SyncDir missing: %v", err)
		}
	}},
	{"WriteFileSync", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "meta")
		for _, data := range []string{"one", "two", ""} {
			if err := WriteFileSync(fs, dir, name, []byte(data)); err != nil {
				t.Fatal(err)
			}
			if got := mustRead(t, fs, name); got != data {
				t.Fatalf("got %q, want %q", got, data)
			}
			if got := mustReadDir(t, fs, dir); !slices.Equal(got, []string{"meta"}) {
				t.Fatalf("leftovers: %q", got)
			}
		}
	}},
	{"LargeWrites", func(t *testing.T, fs FS, dir string) {
		name := filepath.Join(dir, "f")
		f := mustCreate(t, fs, name, "")
		defer f.Close()
		want := make([]byte, 0, 1<<20)
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 1000)
		for i := range 64 {
			chunk[0] = byte(i)
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
			want = append(want, chunk...)
			if i%8 == 0 {
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got, _ := ReadFile(fs, name); !bytes.Equal(got, want) {
			t.Fatal("contents differ")
		}
	}},
}

func TestContract(t *testing.T) {
	t.Parallel()
	for _, tc := range contractTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachFS(t, tc.test)
		})
	}
}

func TestAsOSFile(t *testing.T) {
	t.Parallel()
	f, err := Create(Default, filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	osf, ok := AsOSFile(f)
	if !ok || osf == nil {
		t.Fatal("OS file not unwrapped")
	}
	if _, err := osf.WriteString("via fd"); err != nil {
		t.Fatal(err)
	}
	wantSize(t, f, 6)

	m := NewMem()
	mf, err := Create(m, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := AsOSFile(mf); ok {
		t.Fatal("MemFS file claims an *os.File")
	}
}
