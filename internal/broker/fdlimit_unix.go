//go:build unix

package broker

import "syscall"

// defaultMaxOpenLogFiles is half the process's soft open-file limit (Go
// raises it to the hard limit at start-up), leaving the other half to
// client connections, checkpoints and the rest; 0 (no cap) when the limit
// is unknown or unlimited.
func defaultMaxOpenLogFiles() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return -1
	}
	return max(int(l.Cur/2), 64)
}
