//go:build unix

package kafka

import "syscall"

// diskSpace is the total and available bytes of the file system holding
// dir, or -1, -1 when it cannot be read.
func diskSpace(dir string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}
