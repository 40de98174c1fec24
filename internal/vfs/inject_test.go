package vfs

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

func TestInjectWriteENOSPC(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "ok|")
	defer f.Close()
	m.InjectError(ErrorOnce(OpWrite, "/f", syscall.ENOSPC))
	n, err := f.Write([]byte("refused"))
	if n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write = %d, %v; want 0, ENOSPC", n, err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/d/f" {
		t.Fatalf("error %#v is not a write *os.PathError", err)
	}
	mustWrite(t, f, "after")
	if got := mustRead(t, m, "/d/f"); got != "ok|after" {
		t.Fatalf("contents %q", got)
	}
}

func TestInjectPartialWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stored int
		want   string
	}{
		{"Prefix", 3, "abc"},
		{"Half", -1, "abcd"},
		{"Clamped", 100, "abcdefgh"},
		{"None", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMemDir(t)
			f := mustCreate(t, m, "/d/f", "")
			defer f.Close()
			m.InjectError(ErrorOnce(OpWrite, "", PartialWrite(syscall.ENOSPC, tc.stored)))
			n, err := f.Write([]byte("abcdefgh"))
			if n != len(tc.want) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Write = %d, %v", n, err)
			}
			var pe *os.PathError
			if !errors.As(err, &pe) || pe.Err != syscall.ENOSPC {
				t.Fatalf("reported error %#v should wrap the bare errno", err)
			}
			if got := mustRead(t, m, "/d/f"); got != tc.want {
				t.Fatalf("stored %q, want %q", got, tc.want)
			}
			// The offset advanced past what was stored, like a short write(2).
			mustWrite(t, f, "|")
			if got := mustRead(t, m, "/d/f"); got != tc.want+"|" {
				t.Fatalf("then %q", got)
			}
		})
	}
}

func TestInjectSyncEIO(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "durable|")
	defer f.Close()
	mustSync(t, f)
	mustSyncDir(t, m, "/d")
	mustWrite(t, f, "pending")
	m.InjectError(ErrorOnce(OpSync, "/d/f", syscall.EIO))
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v, want EIO", err)
	}
	if got := mustRead(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "durable|" {
		t.Fatalf("failed sync made data durable: %q", got)
	}
	mustSync(t, f) // the injection fired once; a retry succeeds
	if got := mustRead(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "durable|pending" {
		t.Fatalf("after retry %q", got)
	}
}

func TestInjectErrorAfter(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "")
	defer f.Close()
	m.InjectError(ErrorAfter(OpWrite, 2, syscall.ENOSPC))
	for i, wantErr := range []bool{false, false, true, true} {
		_, err := f.Write([]byte("x"))
		if (err != nil) != wantErr || (err != nil && !errors.Is(err, syscall.ENOSPC)) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := f.Sync(); err != nil { // other ops are unaffected
		t.Fatal(err)
	}
	m.InjectError(nil)
	mustWrite(t, f, "y")
	if got := mustRead(t, m, "/d/f"); got != "xxy" {
		t.Fatalf("contents %q", got)
	}
}

func TestInjectPathSuffix(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	a := mustCreate(t, m, "/d/a.log", "")
	b := mustCreate(t, m, "/d/b.index", "")
	m.InjectError(ErrorOnce(OpWrite, ".index", syscall.EIO))
	mustWrite(t, a, "fine")
	if _, err := b.Write([]byte("x")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("b: %v", err)
	}
	mustWrite(t, b, "fine")
}

// TestInjectEachOp fails one operation of each kind and checks it reports the
// error and has no effect.
func TestInjectEachOp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op     Op
		do     func(m *MemFS, f File) error
		effect func(t *testing.T, m *MemFS)
	}{
		{OpCreate, func(m *MemFS, _ File) error {
			_, err := Create(m, "/d/new")
			return err
		}, func(t *testing.T, m *MemFS) { wantNotExist(t, m, "/d/new") }},
		{OpCreate, func(m *MemFS, _ File) error {
			_, err := Create(m, "/d/f") // existing: O_TRUNC must not happen
			return err
		}, func(t *testing.T, m *MemFS) {
			if got := mustRead(t, m, "/d/f"); got != "data" {
				t.Errorf("contents %q", got)
			}
		}},
		{OpOpen, func(m *MemFS, _ File) error {
			_, err := Open(m, "/d/f")
			return err
		}, nil},
		{OpRename, func(m *MemFS, _ File) error { return m.Rename("/d/f", "/d/g") },
			func(t *testing.T, m *MemFS) { wantNotExist(t, m, "/d/g") }},
		{OpRemove, func(m *MemFS, _ File) error { return m.Remove("/d/f") },
			func(t *testing.T, m *MemFS) { mustRead(t, m, "/d/f") }},
		{OpRemove, func(m *MemFS, _ File) error { return m.RemoveAll("/d/f") },
			func(t *testing.T, m *MemFS) { mustRead(t, m, "/d/f") }},
		{OpTruncate, func(_ *MemFS, f File) error { return f.Truncate(1) },
			func(t *testing.T, m *MemFS) {
				if got := mustRead(t, m, "/d/f"); got != "data" {
					t.Errorf("contents %q", got)
				}
			}},
		{OpRead, func(_ *MemFS, f File) error {
			_, err := f.ReadAt(make([]byte, 1), 0)
			return err
		}, nil},
		{OpRead, func(_ *MemFS, f File) error {
			_, err := f.Read(make([]byte, 1))
			return err
		}, nil},
		{OpSync, func(_ *MemFS, f File) error { return f.Sync() },
			func(t *testing.T, m *MemFS) {
				if got := mustRead(t, m.CrashClone(CrashOptions{}), "/d/f"); got != "" {
					t.Errorf("after crash %q", got)
				}
			}},
		{OpSyncDir, func(m *MemFS, _ File) error {
			if _, err := Create(m, "/d/g"); err != nil {
				return err
			}
			return m.SyncDir("/d")
		}, func(t *testing.T, m *MemFS) { wantNotExist(t, m.CrashClone(CrashOptions{}), "/d/g") }},
		{OpMkdirAll, func(m *MemFS, _ File) error { return m.MkdirAll("/d/sub", 0o755) },
			func(t *testing.T, m *MemFS) { wantNotExist(t, m, "/d/sub") }},
		{OpReadDir, func(m *MemFS, _ File) error {
			_, err := m.ReadDir("/d")
			return err
		}, nil},
		{OpStat, func(m *MemFS, _ File) error {
			_, err := m.Stat("/d/f")
			return err
		}, nil},
	} {
		t.Run(tc.op.String(), func(t *testing.T) {
			t.Parallel()
			m := newMemDir(t)
			f := mustCreate(t, m, "/d/f", "data")
			defer f.Close()
			mustSyncDir(t, m, "/d")
			r, err := m.OpenFile("/d/f", os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			m.InjectError(ErrorOnce(tc.op, "", syscall.EIO))
			if err := tc.do(m, r); !errors.Is(err, syscall.EIO) {
				t.Fatalf("got %v, want EIO", err)
			}
			m.InjectError(nil)
			if tc.effect != nil {
				tc.effect(t, m)
			}
		})
	}
}

func TestOpString(t *testing.T) {
	t.Parallel()
	if OpSyncDir.String() != "syncdir" || Op(99).String() != "Op(99)" || Op(0).String() != "Op(0)" {
		t.Fatal(OpSyncDir.String(), Op(99).String(), Op(0).String())
	}
}
