package vfs

import (
	"errors"
	"fmt"
	"io"
)

// ErrLocked is returned by Lock when another holder has the lock.
var ErrLocked = errors.New("vfs: locked by another process")

// LockedError says who holds a lock Lock could not take.
type LockedError struct {
	Path string
	// Holder is what the holder wrote into the lock file (its pid), or "".
	Holder string
}

func (e *LockedError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("%s is locked by another process", e.Path)
	}
	return fmt.Sprintf("%s is locked by another process (pid %s)", e.Path, e.Holder)
}

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Locker is implemented by file systems that can take an exclusive,
// advisory lock on a file, held until the returned Closer is closed or the
// holding process dies. owner is written into the lock file, so a refused
// locker can name the holder.
type Locker interface {
	Lock(name, owner string) (io.Closer, error)
}

// Lock takes fs's lock on name if fs supports locking; otherwise it returns
// a no-op Closer.
func Lock(fs FS, name, owner string) (io.Closer, error) {
	if l, ok := fs.(Locker); ok {
		return l.Lock(name, owner)
	}
	return nopCloser{}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
