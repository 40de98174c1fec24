package vfs

import (
	"os"
	"slices"
)

// Default is the file system Strand uses outside tests.
var Default FS = OS{}

// OS is the real file system, backed by package os. The zero value is ready to
// use and carries no state. Errors are those of package os, unwrapped, so
// errors.Is(err, os.ErrNotExist) and friends work as usual.
type OS struct{}

var _ FS = OS{}

// OpenFile opens name with os.OpenFile.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// Remove deletes a file or an empty directory.
func (OS) Remove(name string) error { return os.Remove(name) }

// Rename atomically replaces newname with oldname.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// MkdirAll creates dir and any missing parents.
func (OS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

// RemoveAll removes path and everything below it; a missing path is not an error.
func (OS) RemoveAll(path string) error { return os.RemoveAll(path) }

// Stat describes name.
func (OS) Stat(name string) (os.FileInfo, error) { return os.Stat(name) }

// ReadDir returns the names of the entries in dir, sorted.
func (OS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	// os.ReadDir already sorts; sorting again keeps the contract explicit
	// should that ever change, and costs nothing on sorted input.
	slices.Sort(names)
	return names, nil
}

// SyncDir opens dir and fsyncs it, making entry creations, renames and
// removals in it durable.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// osFile is a File backed by an *os.File. It wraps rather than embeds the
// *os.File so that the File method set is exactly what callers can rely on;
// AsOSFile is the explicit escape hatch to the descriptor.
type osFile struct {
	f *os.File
}

func (f *osFile) Read(p []byte) (int, error)              { return f.f.Read(p) }
func (f *osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f *osFile) Write(p []byte) (int, error)             { return f.f.Write(p) }
func (f *osFile) Close() error                            { return f.f.Close() }
func (f *osFile) Sync() error                             { return f.f.Sync() }
func (f *osFile) Truncate(size int64) error               { return f.f.Truncate(size) }
func (f *osFile) Name() string                            { return f.f.Name() }

// Size returns the file's current size via fstat.
func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// OSFile returns the underlying *os.File, for paths such as sendfile that need
// the real descriptor. Callers must not close it; close the File instead.
func (f *osFile) OSFile() *os.File { return f.f }

// AsOSFile returns the *os.File behind f, if f is backed by one (a File from
// OS, or any wrapper that exposes an OSFile() *os.File method). It reports
// false for MemFS files, so a zero-copy path must keep a portable fallback.
func AsOSFile(f File) (*os.File, bool) {
	of, ok := f.(interface{ OSFile() *os.File })
	if !ok {
		return nil, false
	}
	osf := of.OSFile()
	return osf, osf != nil
}
