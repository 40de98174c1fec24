//go:build linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// osCacheHint issues the hint on f's descriptor. It goes through
// SyscallConn rather than Fd, which would switch a pollable descriptor to
// blocking mode. Errors are dropped: see Writeback, DropCache and
// Preallocate.
func osCacheHint(f *os.File, h hint, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		switch h {
		case hintDrop:
			_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
		case hintWriteback:
			_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
		case hintAllocate:
			_ = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, off, n)
		}
	})
}
