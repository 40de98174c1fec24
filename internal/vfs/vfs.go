// Package vfs owns the file-system boundary that Strand's storage writes through.
//
// Two implementations exist: OS, the real operating system, and MemFS, an in-memory
// file system that can crash (keeping only what was synced, optionally tearing the
// last unsynced write) and inject I/O errors (ENOSPC, EIO on write or fsync). Every
// storage test runs on both, so recovery code is exercised against crashes that a
// real disk makes rare.
//
// Durability model (shared by both implementations, and by POSIX):
//
//   - File.Sync makes the file's contents durable.
//   - Creating, renaming or removing a directory entry is durable only after
//     FS.SyncDir on the parent directory.
//
// vfs must never know about Kafka, records or offsets: it moves bytes.
package vfs

import (
	"io"
	"os"
)

// File is an open file. Implementations are safe for concurrent ReadAt calls;
// writes and Truncate must be serialised by the caller (partlog has one writer).
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes everything written so far durable.
	Sync() error
	// Truncate changes the file's size. It is durable only after Sync.
	Truncate(size int64) error
	// Size returns the current size of the file, including unsynced writes.
	Size() (int64, error)
	// Name returns the path the file was opened with.
	Name() string
}

// FS is a file system. Paths use the host separator; MemFS treats them as
// slash-cleaned strings.
type FS interface {
	// OpenFile opens name with os.O_* flags (O_RDONLY, O_RDWR, O_CREATE, O_EXCL,
	// O_TRUNC, O_APPEND are honoured).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir returns the names of the entries in dir, sorted.
	ReadDir(dir string) ([]string, error)
	// Stat reports whether name exists and its size. A missing file returns an
	// error satisfying errors.Is(err, os.ErrNotExist).
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes creations, renames and removals in dir durable.
	SyncDir(dir string) error
	// RemoveAll removes path and everything below it.
	RemoveAll(path string) error
}

// Open opens name read-only.
func Open(fs FS, name string) (File, error) { return fs.OpenFile(name, os.O_RDONLY, 0) }

// Create creates or truncates name for reading and writing.
func Create(fs FS, name string) (File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// WriteFileSync writes data to name via a temporary file, syncs it, renames it
// into place and syncs the directory: after it returns, name holds either its old
// contents or data, across any crash.
func WriteFileSync(fs FS, dir, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := Create(fs, tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(dir)
}

// ReadFile reads the whole of name.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := Open(fs, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF && int64(n) == size {
		err = nil
	}
	return buf[:n], err
}
