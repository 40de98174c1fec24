package vfs

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
)

// Op names a MemFS operation that an Injector can fail.
type Op int

// The operations an Injector sees. The path passed with each is the
// slash-cleaned absolute path MemFS uses internally (see MemFS).
const (
	// OpWrite is File.Write. See PartialWrite for torn writes.
	OpWrite Op = iota + 1
	// OpSync is File.Sync. A failed Sync leaves the data unsynced.
	OpSync
	// OpSyncDir is FS.SyncDir. A failed SyncDir leaves the entries undurable.
	OpSyncDir
	// OpCreate is FS.OpenFile with os.O_CREATE in the flags, whether or not
	// the file already exists.
	OpCreate
	// OpOpen is FS.OpenFile without os.O_CREATE.
	OpOpen
	// OpRename is FS.Rename; the path is the old name.
	OpRename
	// OpRemove is FS.Remove and FS.RemoveAll.
	OpRemove
	// OpTruncate is File.Truncate.
	OpTruncate
	// OpRead is File.Read and File.ReadAt.
	OpRead
	// OpMkdirAll is FS.MkdirAll.
	OpMkdirAll
	// OpReadDir is FS.ReadDir.
	OpReadDir
	// OpStat is FS.Stat (not File.Size, which cannot be injected).
	OpStat
)

var opNames = [...]string{
	OpWrite:    "write",
	OpSync:     "sync",
	OpSyncDir:  "syncdir",
	OpCreate:   "create",
	OpOpen:     "open",
	OpRename:   "rename",
	OpRemove:   "remove",
	OpTruncate: "truncate",
	OpRead:     "read",
	OpMkdirAll: "mkdirall",
	OpReadDir:  "readdir",
	OpStat:     "stat",
}

func (o Op) String() string {
	if o > 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Injector decides, before each MemFS operation, whether it fails: it returns
// nil to let the operation proceed, or the error to fail it with. A failed
// operation has no effect (except a PartialWrite) and returns the error
// wrapped as the OS would wrap it (*os.PathError, or *os.LinkError for
// Rename), so errors.Is(err, syscall.ENOSPC) works. Injectors are called
// concurrently and without MemFS locks held; they must be safe for that and may
// call back into the MemFS.
type Injector func(op Op, path string) error

// ErrorOnce fails the first op whose path ends in pathSuffix with err, and
// lets everything else (including later matching ops) proceed.
func ErrorOnce(op Op, pathSuffix string, err error) Injector {
	var fired atomic.Bool
	return func(o Op, path string) error {
		if o != op || !strings.HasSuffix(path, pathSuffix) {
			return nil
		}
		if fired.CompareAndSwap(false, true) {
			return err
		}
		return nil
	}
}

// ErrorAfter lets the first n ops of kind op (on any path) succeed and fails
// every later one with err, like a disk that fills up and stays full.
func ErrorAfter(op Op, n int, err error) Injector {
	var seen atomic.Int64
	return func(o Op, _ string) error {
		if o != op {
			return nil
		}
		if seen.Add(1) > int64(n) {
			return err
		}
		return nil
	}
}

// PartialWrite marks err, returned by an Injector for OpWrite, as a torn write:
// the Write first stores the first n bytes of its buffer (clamped to the
// buffer; n < 0 means half of it, rounded down) and then returns (stored, err).
// An injected OpWrite error that is not a PartialWrite stores nothing and
// returns (0, err). For any other Op the marking is ignored.
func PartialWrite(err error, n int) error {
	return &partialWriteError{err: err, n: n}
}

type partialWriteError struct {
	err error
	n   int
}

func (e *partialWriteError) Error() string { return e.err.Error() }
func (e *partialWriteError) Unwrap() error { return e.err }

// splitInjected returns the error to report for an injected failure and, for a
// write of size len, how many bytes to store first.
func splitInjected(err error, size int) (stored int, report error) {
	var pw *partialWriteError
	if !errors.As(err, &pw) {
		return 0, err
	}
	stored = pw.n
	if stored < 0 {
		stored = size / 2
	}
	return min(stored, size), pw.err
}
