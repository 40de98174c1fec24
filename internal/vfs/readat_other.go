//go:build !linux

package vfs

import "os"

// readAt is os.File.ReadAt (see readat_linux.go for Linux's).
func readAt(f *os.File, p []byte, off int64) (int, error) { return f.ReadAt(p, off) }
