//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// Lock takes a non-blocking flock(2) on name (created if missing) and writes
// owner into it. The kernel releases the lock when the process dies, so a
// crashed broker never leaves a stale lock behind.
func (OS) Lock(name, owner string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: name, Holder: strings.TrimSpace(string(b[:n]))}
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(owner+"\n"), 0)
	}
	return f, nil
}
