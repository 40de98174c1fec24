package vfs

// The page-cache hints below let a writer that appends a file front to back
// keep only the newest part of it in memory: Writeback starts the disk
// write of bytes it will not touch again, DropCache releases them once they
// are on the disk. Neither changes what is durable (only Sync does) nor
// what a read returns (a dropped range is read from the disk again); they
// change which pages the kernel holds. A File with no descriptor behind it
// (MemFS, a wrapper) ignores them. Preallocate is a hint of the same kind
// to the file system: where the next bytes will go.

// hint is one of the hints a hinter passes on.
type hint int

const (
	hintWriteback hint = iota
	hintDrop
	hintAllocate
)

// hinter is a File that can pass page-cache hints to the kernel.
type hinter interface {
	cacheHint(h hint, off, n int64)
}

// Writeback asks the kernel to start writing f's dirty bytes in
// [off, off+n) to the disk, without waiting for them (Linux
// sync_file_range with SYNC_FILE_RANGE_WRITE). It is a hint: it does not
// make them durable, and an error is not reported here but, as for the
// kernel's own write-back, by the file's next Sync (the kernel keeps it
// for every descriptor open on the file).
func Writeback(f File, off, n int64) {
	if h, ok := f.(hinter); ok && n > 0 {
		h.cacheHint(hintWriteback, off, n)
	}
}

// DropCache asks the kernel to drop f's cached pages in [off, off+n)
// that are already on the disk (posix_fadvise POSIX_FADV_DONTNEED); dirty
// pages and pages still being written stay. Later reads of the range go
// to the disk.
func DropCache(f File, off, n int64) {
	if h, ok := f.(hinter); ok && n > 0 {
		h.cacheHint(hintDrop, off, n)
	}
}

// Preallocate asks the file system to reserve f's blocks in [off, off+n)
// without changing its size (Linux fallocate with FALLOC_FL_KEEP_SIZE),
// so that appends into the range find their blocks allocated instead of
// allocating them a page at a time. It is a hint: neither what a read
// returns nor the file's size changes, and a failure (no space, a file
// system without fallocate) shows, if it matters, as the write's own
// error. The blocks stay reserved past the end until the file is
// truncated or removed.
func Preallocate(f File, off, n int64) {
	if h, ok := f.(hinter); ok && n > 0 {
		h.cacheHint(hintAllocate, off, n)
	}
}

func (f *osFile) cacheHint(h hint, off, n int64) { osCacheHint(f.f, h, off, n) }

// cacheHint passes the hint to the open descriptor; a file the cache has
// closed has nothing to hint (its descriptor was fsynced and closed, and
// reopening it for a hint would cost more than the hint saves).
func (h *cachedFile) cacheHint(kind hint, off, n int64) {
	h.mu.Lock()
	f := h.mu.f
	if f == nil || h.mu.closed {
		h.mu.Unlock()
		return
	}
	h.mu.users++
	h.mu.Unlock()
	defer h.release()
	if hf, ok := f.(hinter); ok {
		hf.cacheHint(kind, off, n)
	}
}
