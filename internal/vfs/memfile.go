package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// memFile is an open MemFS file: a handle onto a node, with its own offset.
type memFile struct {
	name     string // as given to OpenFile; returned by Name
	path     string // cleaned; given to the injector
	fs       *MemFS
	node     *memNode
	readable bool
	writable bool
	append   bool

	closed atomic.Bool
	// mu guards the handle's offset, shared by Read and Write as with an fd.
	// It is taken before the node's mu.
	mu struct {
		sync.Mutex
		offset int64
	}
}

var errNegativeOffset = errors.New("negative offset")

// check fails an operation on a closed handle, or one the open mode forbids.
func (f *memFile) check(op string, allowed bool, denied syscall.Errno) error {
	if f.closed.Load() {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if !allowed {
		return pathErr(op, f.name, denied)
	}
	return nil
}

// Read reads from the handle's offset, returning (0, io.EOF) at end of file.
func (f *memFile) Read(p []byte) (int, error) {
	if f.closed.Load() {
		return 0, pathErr("read", f.name, os.ErrClosed)
	}
	if len(p) == 0 {
		return 0, nil // as os.File: no I/O, so no mode check
	}
	if err := f.check("read", f.readable, syscall.EBADF); err != nil {
		return 0, err
	}
	if err := f.fs.injected(OpRead, f.path); err != nil {
		_, err = splitInjected(err, 0)
		return 0, pathErr("read", f.name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node.readAt(p, f.mu.offset)
	f.mu.offset += int64(n)
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt reads len(p) bytes at off; fewer only at end of file, with io.EOF.
// Like os.File, an empty read succeeds without checking the handle.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathErr("readat", f.name, errNegativeOffset)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.check("read", f.readable, syscall.EBADF); err != nil {
		return 0, err
	}
	if err := f.fs.injected(OpRead, f.path); err != nil {
		_, err = splitInjected(err, 0)
		return 0, pathErr("read", f.name, err)
	}
	n := f.node.readAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Write writes at the handle's offset, or at end of file with O_APPEND. Writing
// past end of file fills the gap with zeros.
func (f *memFile) Write(p []byte) (int, error) {
	if err := f.check("write", f.writable, syscall.EBADF); err != nil {
		return 0, err
	}
	n, err := len(p), error(nil)
	if ierr := f.fs.injected(OpWrite, f.path); ierr != nil {
		n, ierr = splitInjected(ierr, len(p))
		err = pathErr("write", f.name, ierr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.offset = f.node.write(p[:n], f.mu.offset, f.append)
	return n, err
}

// Sync makes the file's current contents its synced contents. It takes the
// tree lock so that a concurrent crash sees each Sync wholly before or after.
func (f *memFile) Sync() error {
	if err := f.check("sync", true, 0); err != nil {
		return err
	}
	if err := f.fs.injected(OpSync, f.path); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("sync", f.name, err)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	n := f.node
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.mu.data
	n.mu.synced = d[:len(d):len(d)]
	n.mu.shared = true
	return nil
}

// Truncate sets the file's size, shrinking it or extending it with zeros. The
// handle's offset is unchanged.
func (f *memFile) Truncate(size int64) error {
	if err := f.check("truncate", f.writable, syscall.EINVAL); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, syscall.EINVAL)
	}
	if err := f.fs.injected(OpTruncate, f.path); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("truncate", f.name, err)
	}
	f.node.truncate(size)
	return nil
}

// Size returns the current size, including unsynced writes.
func (f *memFile) Size() (int64, error) {
	if f.closed.Load() {
		return 0, pathErr("stat", f.name, os.ErrClosed)
	}
	f.node.mu.RLock()
	defer f.node.mu.RUnlock()
	return int64(len(f.node.mu.data)), nil
}

// Name returns the name the file was opened with.
func (f *memFile) Name() string { return f.name }

// Close closes the handle; a second Close fails with os.ErrClosed.
func (f *memFile) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, os.ErrClosed)
	}
	return nil
}

// readAt copies the current contents at off into p and returns the count.
func (n *memNode) readAt(p []byte, off int64) int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if off >= int64(len(n.mu.data)) {
		return 0
	}
	return copy(p, n.mu.data[off:])
}

// write stores p at off (at end of file if atEnd) and returns the offset just
// past it.
func (n *memNode) write(p []byte, off int64, atEnd bool) int64 {
	if len(p) == 0 {
		return off // Linux moves no offset for an empty write, even O_APPEND
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if atEnd {
		off = int64(len(n.mu.data))
	}
	end := off + int64(len(p))
	copy(n.writableLocked(off, end), p)
	n.mu.modTime = time.Now()
	return end
}

// truncate sets the current size to size.
func (n *memNode) truncate(size int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if size <= int64(len(n.mu.data)) {
		// Reslicing mutates nothing; a later write below len(synced) copies.
		n.mu.data = n.mu.data[:size]
	} else {
		n.writableLocked(size, size)
	}
	n.mu.modTime = time.Now()
}

// writableLocked grows data to at least end bytes, zero-filling from the old
// end, and returns data[off:end] ready to be overwritten. If synced aliases
// data and any byte below len(synced) would change, it copies data first: that
// is what keeps Sync a constant-time snapshot.
func (n *memNode) writableLocked(off, end int64) []byte {
	d := n.mu.data
	first := min(off, int64(len(d))) // first byte that changes
	if n.mu.shared && first < int64(len(n.mu.synced)) {
		d = bytes.Clone(d)
		n.mu.shared = false
	}
	if end > int64(len(d)) {
		if end > int64(cap(d)) {
			grown := make([]byte, end, max(end, 2*int64(cap(d))))
			copy(grown, d)
			d = grown
			n.mu.shared = false
		} else {
			old := len(d)
			d = d[:end]
			clear(d[old:])
		}
	}
	n.mu.data = d
	return d[off:end]
}
