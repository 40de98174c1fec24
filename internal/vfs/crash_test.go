package vfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
)

// newMemDir returns a MemFS with a durable directory /d.
func newMemDir(t *testing.T) *MemFS {
	t.Helper()
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustSync(t *testing.T, f File) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func mustSyncDir(t *testing.T, fs FS, dir string) {
	t.Helper()
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func TestCrashFileContents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, f File)
		want string
	}{
		{"Unsynced", func(t *testing.T, f File) { mustWrite(t, f, "lost") }, ""},
		{"Synced", func(t *testing.T, f File) { mustWrite(t, f, "kept"); mustSync(t, f) }, "kept"},
		{"SyncedThenMore", func(t *testing.T, f File) {
			mustWrite(t, f, "kept")
			mustSync(t, f)
			mustWrite(t, f, "lost")
		}, "kept"},
		{"TruncateUnsynced", func(t *testing.T, f File) {
			mustWrite(t, f, "abcdef")
			mustSync(t, f)
			if err := f.Truncate(2); err != nil {
				t.Fatal(err)
			}
		}, "abcdef"},
		{"TruncateSynced", func(t *testing.T, f File) {
			mustWrite(t, f, "abcdef")
			mustSync(t, f)
			if err := f.Truncate(2); err != nil {
				t.Fatal(err)
			}
			mustSync(t, f)
		}, "ab"},
		// Overwrites of the synced region must not leak into the synced copy
		// (Sync shares the buffer copy-on-write).
		{"ShrinkThenRewrite", func(t *testing.T, f File) {
			mustWrite(t, f, "abcdef")
			mustSync(t, f)
			if err := f.Truncate(2); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(6); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, f, "XYZ") // appends at offset 6
		}, "abcdef"},
		{"AppendAfterShrink", func(t *testing.T, f File) {
			mustWrite(t, f, "abcdef")
			mustSync(t, f)
			mustWrite(t, f, "gh") // may land in spare capacity
			if err := f.Truncate(3); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(0); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, f, "123456789") // handle offset is 8: a hole, then this
		}, "abcdef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMemDir(t)
			f := mustCreate(t, m, "/d/f", "")
			defer f.Close()
			mustSyncDir(t, m, "/d")
			tc.do(t, f)
			current := mustRead(t, m, "/d/f")
			c := m.CrashClone(CrashOptions{})
			if got := mustRead(t, c, "/d/f"); got != tc.want {
				t.Fatalf("after crash %q, want %q", got, tc.want)
			}
			// The old FS is untouched by the crash.
			if got := mustRead(t, m, "/d/f"); got != current {
				t.Fatalf("original changed: %q, want %q", got, current)
			}
		})
	}
}

func TestCrashTornTail(t *testing.T) {
	t.Parallel()
	const synced, unsynced = "SYNCED|", "0123456789abcdef"
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", synced)
	defer f.Close()
	mustSync(t, f)
	mustSyncDir(t, m, "/d")
	mustWrite(t, f, unsynced)

	lengths := map[int]bool{}
	for seed := range uint64(64) {
		c := m.CrashClone(CrashOptions{TearRand: rand.New(rand.NewPCG(seed, 1))})
		got := mustRead(t, c, "/d/f")
		if !strings.HasPrefix(synced+unsynced, got) || len(got) < len(synced) {
			t.Fatalf("seed %d: %q is not synced bytes plus a prefix of the tail", seed, got)
		}
		lengths[len(got)] = true
	}
	if len(lengths) < 4 {
		t.Fatalf("tear lengths barely vary: %v", lengths)
	}
	// The same seed tears the same way.
	crash := func() string {
		return mustRead(t, m.CrashClone(CrashOptions{TearRand: rand.New(rand.NewPCG(7, 7))}), "/d/f")
	}
	if a, b := crash(), crash(); a != b {
		t.Fatalf("same seed, different crashes: %q vs %q", a, b)
	}
}

func TestCrashTornTailOnlyForAppends(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "abcdef")
	defer f.Close()
	mustSync(t, f)
	mustSyncDir(t, m, "/d")
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, f, "XXXXXXXXXXXX") // rewrites the synced region: not an append
	for seed := range uint64(16) {
		c := m.CrashClone(CrashOptions{TearRand: rand.New(rand.NewPCG(seed, 2))})
		if got := mustRead(t, c, "/d/f"); got != "abcdef" {
			t.Fatalf("seed %d: %q", seed, got)
		}
	}
}

func TestCrashDirectoryEntries(t *testing.T) {
	t.Parallel()
	// setup leaves /d/a ("A") and /d/b ("B") synced and durable.
	setup := func(t *testing.T) *MemFS {
		m := newMemDir(t)
		for _, n := range []string{"a", "b"} {
			f := mustCreate(t, m, "/d/"+n, strings.ToUpper(n))
			mustSync(t, f)
			f.Close()
		}
		mustSyncDir(t, m, "/d")
		return m
	}
	for _, tc := range []struct {
		name string
		do   func(t *testing.T, m *MemFS)
		want map[string]string // name in /d → contents; absent names must not exist
	}{
		{"CreateWithoutSyncDir", func(t *testing.T, m *MemFS) {
			f := mustCreate(t, m, "/d/c", "C")
			mustSync(t, f) // data synced, entry not
		}, map[string]string{"a": "A", "b": "B"}},
		{"CreateWithSyncDir", func(t *testing.T, m *MemFS) {
			f := mustCreate(t, m, "/d/c", "C")
			mustSync(t, f)
			mustSyncDir(t, m, "/d")
		}, map[string]string{"a": "A", "b": "B", "c": "C"}},
		{"CreateSyncDirNoSync", func(t *testing.T, m *MemFS) {
			mustCreate(t, m, "/d/c", "C")
			mustSyncDir(t, m, "/d")
		}, map[string]string{"a": "A", "b": "B", "c": ""}},
		{"RenameWithoutSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.Rename("/d/a", "/d/c"); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "A", "b": "B"}},
		{"RenameOverWithoutSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.Rename("/d/a", "/d/b"); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "A", "b": "B"}},
		{"RenameOverWithSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.Rename("/d/a", "/d/b"); err != nil {
				t.Fatal(err)
			}
			mustSyncDir(t, m, "/d")
		}, map[string]string{"b": "A"}},
		{"RemoveWithoutSyncDir", func(t *testing.T, m *MemFS) {
			f, err := m.OpenFile("/d/a", os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			mustWrite(t, f, "unsynced")
			if err := m.Remove("/d/a"); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "A", "b": "B"}},
		{"RemoveWithSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.Remove("/d/a"); err != nil {
				t.Fatal(err)
			}
			mustSyncDir(t, m, "/d")
		}, map[string]string{"b": "B"}},
		{"RemoveAllWithoutSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.RemoveAll("/d"); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "A", "b": "B"}},
		{"RecreateWithoutSyncDir", func(t *testing.T, m *MemFS) {
			if err := m.Remove("/d/a"); err != nil {
				t.Fatal(err)
			}
			f := mustCreate(t, m, "/d/a", "new")
			mustSync(t, f)
		}, map[string]string{"a": "A", "b": "B"}},
		{"TruncateOnOpenUnsynced", func(t *testing.T, m *MemFS) {
			mustCreate(t, m, "/d/a", "") // O_TRUNC of the same inode
			mustSyncDir(t, m, "/d")
		}, map[string]string{"a": "A", "b": "B"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := setup(t)
			tc.do(t, m)
			c := m.CrashClone(CrashOptions{})
			for n, want := range tc.want {
				if got := mustRead(t, c, "/d/"+n); got != want {
					t.Errorf("%s = %q, want %q", n, got, want)
				}
			}
			if got := mustReadDir(t, c, "/d"); len(got) != len(tc.want) {
				t.Errorf("entries %q, want %d of them", got, len(tc.want))
			}
		})
	}
}

func TestCrashCrossDirectoryRename(t *testing.T) {
	t.Parallel()
	m := NewMem()
	for _, d := range []string{"/x", "/y"} {
		if err := m.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := mustCreate(t, m, "/x/f", "F")
	mustSync(t, f)
	mustSyncDir(t, m, "/x")
	if err := m.Rename("/x/f", "/y/f"); err != nil {
		t.Fatal(err)
	}
	mustSyncDir(t, m, "/y")
	// Only the destination is synced: the file is at both names after a crash,
	// as one file.
	c := m.CrashClone(CrashOptions{})
	if got := mustRead(t, c, "/y/f"); got != "F" {
		t.Fatalf("/y/f = %q", got)
	}
	if got := mustRead(t, c, "/x/f"); got != "F" {
		t.Fatalf("/x/f = %q", got)
	}
	mustSyncDir(t, m, "/x")
	c = m.CrashClone(CrashOptions{})
	wantNotExist(t, c, "/x/f")
	if got := mustRead(t, c, "/y/f"); got != "F" {
		t.Fatalf("/y/f = %q", got)
	}
}

func TestCrashMkdirAllIsDurable(t *testing.T) {
	t.Parallel()
	m := NewMem()
	if err := m.MkdirAll("/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	c := m.CrashClone(CrashOptions{})
	if fi, err := c.Stat("/a/b/c"); err != nil || !fi.IsDir() {
		t.Fatalf("stat after crash: %v, %v", fi, err)
	}
}

// TestCrashWriteFileSync fails each step of WriteFileSync in turn and checks
// that after a crash the file holds the old or the new contents, never a mix,
// and the new contents whenever WriteFileSync returned nil.
func TestCrashWriteFileSync(t *testing.T) {
	t.Parallel()
	const old, updated = "old contents", "new contents, longer"
	for _, op := range []Op{0, OpCreate, OpWrite, OpSync, OpRename, OpSyncDir} {
		t.Run(op.String(), func(t *testing.T) {
			t.Parallel()
			m := newMemDir(t)
			if err := WriteFileSync(m, "/d", "/d/meta", []byte(old)); err != nil {
				t.Fatal(err)
			}
			if op != 0 {
				m.InjectError(ErrorOnce(op, "", PartialWrite(syscall.EIO, -1)))
			}
			err := WriteFileSync(m, "/d", "/d/meta", []byte(updated))
			if (err != nil) != (op != 0) {
				t.Fatalf("WriteFileSync: %v", err)
			}
			for seed := range uint64(8) {
				c := m.CrashClone(CrashOptions{TearRand: rand.New(rand.NewPCG(seed, 3))})
				got := mustRead(t, c, "/d/meta")
				switch {
				case err == nil && got != updated:
					t.Fatalf("acknowledged write lost: %q", got)
				case got != old && got != updated:
					t.Fatalf("torn metadata: %q", got)
				}
			}
		})
	}
}

func TestCrashCloneIsIndependent(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "base")
	defer f.Close()
	mustSync(t, f)
	mustSyncDir(t, m, "/d")
	c := m.CrashClone(CrashOptions{})

	// Later work on the original, through an old handle, does not reach the clone.
	mustWrite(t, f, "+more")
	mustSync(t, f)
	mustCreate(t, m, "/d/g", "g").Close()
	mustSyncDir(t, m, "/d")
	if got := mustRead(t, c, "/d/f"); got != "base" {
		t.Fatalf("clone sees %q", got)
	}
	wantNotExist(t, c, "/d/g")

	// And work on the clone does not reach the original.
	cf, err := c.OpenFile("/d/f", os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, cf, "+clone")
	if err := cf.Truncate(1); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, m, "/d/f"); got != "base+more" {
		t.Fatalf("original sees %q", got)
	}

	// A clone of a clone works.
	mustSync(t, cf)
	if got := mustRead(t, c.CrashClone(CrashOptions{}), "/d/f"); got != "b" {
		t.Fatalf("second-generation clone %q", got)
	}
}

func TestCrashInPlace(t *testing.T) {
	t.Parallel()
	m := newMemDir(t)
	f := mustCreate(t, m, "/d/f", "kept")
	defer f.Close()
	mustSync(t, f)
	mustSyncDir(t, m, "/d")
	mustWrite(t, f, "lost")
	m.Crash(CrashOptions{})
	if got := mustRead(t, m, "/d/f"); got != "kept" {
		t.Fatalf("after crash %q", got)
	}
	// The dead process's handle writes into the void.
	mustWrite(t, f, "ghost")
	mustSync(t, f)
	if got := mustRead(t, m, "/d/f"); got != "kept" {
		t.Fatalf("old handle reached the new disk: %q", got)
	}
}

func TestMemPaths(t *testing.T) {
	t.Parallel()
	m := NewMem()
	mustWriteFile(t, m, "a", "x")
	for _, name := range []string{"a", "/a", "./a", "/b/../a", "//a"} {
		if got := mustRead(t, m, name); got != "x" {
			t.Errorf("%s: %q", name, got)
		}
	}
	if _, err := Open(m, "/"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("open root: %v", err)
	}
	if err := m.SyncDir("/a"); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("SyncDir of a file: %v", err)
	}
	if err := m.MkdirAll("/d/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Rename("/d", "/d/sub/x"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("rename into itself: %v", err)
	}
}

// TestCrashSyncModel checks MemFS's copy-on-write Sync against a naive model
// that copies on every Sync, over random writes, truncates, syncs and crashes.
func TestCrashSyncModel(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 4))
		m := newMemDir(t)
		f, err := m.OpenFile("/d/f", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		mustSyncDir(t, m, "/d")
		var current, synced []byte
		for step := range 300 {
			switch rng.IntN(4) {
			case 0, 1:
				b := make([]byte, rng.IntN(40))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				mustWrite(t, f, string(b))
				current = append(current, b...)
			case 2:
				size := rng.IntN(len(current) + 20)
				if err := f.Truncate(int64(size)); err != nil {
					t.Fatal(err)
				}
				if size <= len(current) {
					current = current[:size:size]
				} else {
					current = append(current, make([]byte, size-len(current))...)
				}
			case 3:
				mustSync(t, f)
				synced = bytes.Clone(current)
			}
			if got := mustRead(t, m, "/d/f"); got != string(current) {
				t.Fatalf("seed %d step %d: current differs", seed, step)
			}
			if got := mustRead(t, m.CrashClone(CrashOptions{}), "/d/f"); got != string(synced) {
				t.Fatalf("seed %d step %d: synced differs", seed, step)
			}
		}
		f.Close()
	}
}
