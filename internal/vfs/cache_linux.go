//go:build linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// osCacheHint issues the hint on f's descriptor. It goes through
// SyscallConn rather than Fd, which would switch a pollable descriptor to
// blocking mode. Errors are dropped: see Writeback and DropCache.
func osCacheHint(f *os.File, drop bool, off, n int64) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if drop {
			_ = unix.Fadvise(int(fd), off, n, unix.FADV_DONTNEED)
		} else {
			_ = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
		}
	})
}
