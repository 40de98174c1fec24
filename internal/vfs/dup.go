package vfs

import (
	"errors"
	"os"
)

// ErrNoDescriptor is Dup's answer for a file with no operating-system
// descriptor behind it (a MemFS file, or a wrapper that hides it): the
// caller keeps a path that reads through File.
var ErrNoDescriptor = errors.New("vfs: the file has no descriptor to duplicate")

// Dup returns a new *os.File on a duplicate of f's descriptor, for paths
// such as sendfile that hand the kernel a descriptor and must not see it
// closed (a descriptor cache's eviction, a segment's deletion) or reused
// before they finish. The duplicate shares the open file but owns its
// descriptor: the caller closes it, and closing f does not affect it. It
// returns ErrNoDescriptor when f has none.
func Dup(f File) (*os.File, error) {
	d, ok := f.(interface{ dup() (*os.File, error) })
	if !ok {
		return nil, ErrNoDescriptor
	}
	return d.dup()
}

func (f *osFile) dup() (*os.File, error) { return dupFile(f.f) }

func (h *cachedFile) dup() (*os.File, error) {
	f, err := h.acquire()
	if err != nil {
		return nil, err
	}
	defer h.release()
	return Dup(f)
}
