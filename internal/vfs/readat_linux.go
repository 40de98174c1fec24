//go:build linux

package vfs

import (
	"math/bits"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readAt is os.File.ReadAt that first tries the page cache alone, as a raw
// system call: preadv2 with RWF_NOWAIT, which copies what is cached and
// returns at once (EAGAIN, or a short count) where a read would wait for
// the disk. A Go system call that is still running at sysmon's next look
// (20 µs and up) while other goroutines wait has its P handed to another
// thread, which the caller must win back when it returns: thread wake-ups
// and context switches for a call that never blocked — it was copying (a
// 256 KiB batch takes longer than that). Replication made it show: a
// leader reads back every batch once for each follower, and at RF 3 the
// Go scheduler had 15-19% of a cluster's samples (runtime.sysmon,
// runtime.mcall, finish_task_switch). What is not cached is read the usual
// way, so a read that waits for the disk still lets its P go.
func readAt(f *os.File, p []byte, off int64) (int, error) {
	if len(p) < noWaitMin || noWaitOff.Load() {
		return f.ReadAt(p, off)
	}
	n := 0
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { n = preadNoWait(fd, p, off) })
	}
	if n == len(p) {
		return n, nil
	}
	m, err := f.ReadAt(p[n:], off+int64(n))
	return n + m, err
}

// noWaitMin is the smallest read worth the extra system call when the
// bytes are not cached: below it the Go system call rarely lasts long
// enough to lose its P.
const noWaitMin = 16 << 10

// noWaitOff is set once the kernel refuses RWF_NOWAIT (before Linux 4.14,
// or a file system without it): every read then takes the usual path.
var noWaitOff atomic.Bool

// preadNoWait returns how many bytes of p at off the page cache gave.
func preadNoWait(fd uintptr, p []byte, off int64) int {
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	lo, hi := uintptr(off), uintptr(uint64(off)>>(bits.UintSize-1)>>1) // hi: 0 on 64-bit
	n, _, errno := syscall.RawSyscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
	switch errno {
	case 0:
		return int(n)
	case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS:
		noWaitOff.Store(true)
	}
	return 0 // EAGAIN: not cached; anything else the usual read reports
}
