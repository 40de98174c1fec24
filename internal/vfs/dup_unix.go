//go:build unix

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// dupFile duplicates f's descriptor (close-on-exec, as Go opens files).
// It goes through SyscallConn rather than Fd, which would switch a
// pollable descriptor to blocking mode.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nfd := -1
	var derr error
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, &os.PathError{Op: "dup", Path: f.Name(), Err: derr}
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}
