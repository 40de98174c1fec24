//go:build linux

package vfs

import (
	"os"
	"unsafe"

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

// Resident is the share of the pages of the file at path in [off, off+n)
// that are in the page cache (mincore on a read-only mapping): what the
// hints above are measured by.
func Resident(path string, off, n int64) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	page := int64(os.Getpagesize())
	n += off % page
	off -= off % page // mmap wants a page-aligned offset
	m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(m)
	vec := make([]byte, (n+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, e
	}
	in := 0
	for _, v := range vec {
		in += int(v & 1)
	}
	return float64(in) / float64(len(vec)), nil
}
