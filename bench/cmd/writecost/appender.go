package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/strandmq/strand/internal/vfs"
)

// appender is one partition's log file as the probe writes it: Append
// stores p after everything appended before, and returns once the bytes
// are where the mode puts them (the page cache for the buffered modes,
// the device for O_DIRECT), which is what an acks=all produce waits for
// when no fsync is asked. Stage and Flush split Append for the coalescing
// writer (mode d): Stage copies without writing, Flush writes what is
// staged.
type appender interface {
	Append(p []byte) error
	Stage(p []byte)
	Flush() error
	Close() error
}

// bufferedAppender is Strand's write path today (and kfake's): one
// write(2) per batch to an O_APPEND file, the kernel copying it into the
// page cache. With window > 0 it also gives the page-cache hints of
// partlog's Config.CacheWindow: each quarter of the window that fills is
// handed to the disk (sync_file_range WRITE) and the quarter a window
// further back is dropped (fadvise DONTNEED), as in
// partlog.(*Log).cacheWindowLocked.
type bufferedAppender struct {
	f       vfs.File
	end     int64
	window  int64
	cached  int64 // end of the last chunk handed to the disk
	staged  []byte
	falloc  int64 // allocate this far ahead of the end (0: never)
	alloced int64
}

func openBuffered(name string, window, falloc int64) (*bufferedAppender, error) {
	f, err := vfs.OS{}.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &bufferedAppender{f: f, window: window, falloc: falloc}, nil
}

func (b *bufferedAppender) Append(p []byte) error {
	if b.falloc > 0 && b.end+int64(len(p)) > b.alloced {
		// Allocated ahead but not part of the file (KEEP_SIZE), so
		// O_APPEND still appends at the end: a buffered write into an
		// allocated (unwritten) extent skips ext4's delayed-allocation
		// reservation per page. Kafka's log.preallocate does the same.
		n := (b.end + int64(len(p)) - b.alloced + b.falloc - 1) / b.falloc * b.falloc
		of, _ := vfs.AsOSFile(b.f)
		if err := syscall.Fallocate(int(of.Fd()), unix.FALLOC_FL_KEEP_SIZE, b.alloced, n); err != nil {
			return fmt.Errorf("fallocate: %w", err)
		}
		b.alloced += n
	}
	if _, err := b.f.Write(p); err != nil {
		return err
	}
	b.end += int64(len(p))
	if b.window > 0 {
		b.hint()
	}
	return nil
}

// hint is partlog's cacheWindowLocked with the same chunking.
func (b *bufferedAppender) hint() {
	w := b.window
	chunk := w / 4
	done := b.end / chunk * chunk
	if done <= b.cached {
		return
	}
	from := b.cached
	b.cached = done
	vfs.Writeback(b.f, from, done-from)
	if dropEnd := done - w; dropEnd > 0 {
		dropFrom := max(from-w, 0)
		vfs.DropCache(b.f, dropFrom, dropEnd-dropFrom)
	}
}

// Stage and Flush give the buffered modes the coalescing writer's shape
// too (one write of everything queued), though the probe uses them only
// for O_DIRECT.
func (b *bufferedAppender) Stage(p []byte) { b.staged = append(b.staged, p...) }

func (b *bufferedAppender) Flush() error {
	if len(b.staged) == 0 {
		return nil
	}
	err := b.Append(b.staged)
	b.staged = b.staged[:0]
	return err
}

func (b *bufferedAppender) Close() error { return b.f.Close() }

// directAppender appends to a file opened with O_DIRECT, so no byte passes
// through the page cache. O_DIRECT takes only whole blocks at
// block-aligned file offsets from block-aligned memory, so each batch is
// copied into an aligned staging buffer behind the bytes of the file's
// last, partial block (kept in memory), the staged bytes are zero-padded
// to a whole block and written with one pwrite at the partial block's
// offset; the next flush writes that block again with the new bytes after
// the old. This is what a real O_DIRECT log would pay: the staging copy,
// the re-written tail block, and a wait for the device on every write. On
// the disk the file's last block carries zeros past the logical end until
// Close truncates it (a real log would find the end on recovery by
// validating batches, as it does for a torn tail today).
type directAppender struct {
	f       *os.File
	block   int
	buf     []byte // aligned staging; buf[0] is the file's byte base
	base    int64  // file offset of buf[0], a multiple of block
	n       int    // bytes staged in buf
	flushed int    // of buf[:n], how many are on the device
	falloc  int64  // allocate this far ahead of the end (0: never)
	alloced int64  // the file's allocated (and apparent) size
}

func openDirect(name string, block int, falloc int64) (*directAppender, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_DIRECT, 0o644)
	if err != nil {
		return nil, err
	}
	d := newDirect(f, block)
	d.falloc = falloc
	return d, nil
}

func newDirect(f *os.File, block int) *directAppender {
	return &directAppender{f: f, block: block, buf: alignedBuf(1<<20+block, block)}
}

// alignedBuf returns n bytes of memory starting on an align boundary, as
// O_DIRECT requires of the buffer it writes from.
func alignedBuf(n, align int) []byte {
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptrOfSlice(b) % uintptr(align)); r != 0 {
		off = align - r
	}
	return b[off : off+n : off+n]
}

func (d *directAppender) Append(p []byte) error {
	d.Stage(p)
	return d.Flush()
}

// Stage copies p into the staging buffer, growing it (aligned) if needed.
func (d *directAppender) Stage(p []byte) {
	if need := d.n + len(p) + d.block; need > len(d.buf) {
		nb := alignedBuf(max(need, 2*len(d.buf)), d.block)
		copy(nb, d.buf[:d.n])
		d.buf = nb
	}
	d.n += copy(d.buf[d.n:], p)
}

// Flush writes the staged bytes, rounded up to whole blocks, then keeps
// only the partial last block staged (at the start of the buffer), to be
// written again with the next bytes.
func (d *directAppender) Flush() error {
	if d.n == d.flushed {
		return nil
	}
	end := (d.n + d.block - 1) / d.block * d.block
	clear(d.buf[d.n:end])
	// Only blocks holding unwritten bytes go to the device: from the block
	// of the first unwritten byte on.
	from := d.flushed / d.block * d.block
	if d.falloc > 0 && d.base+int64(end) > d.alloced {
		// Allocate ahead (and set the file's size past its end), so that
		// the writes are overwrites inside the file: ext4 then neither
		// allocates blocks per write nor takes the extending-write path.
		// The blocks are unwritten extents, read as zeros, so the file
		// past the logical end reads as the padding does.
		n := (d.base + int64(end) - d.alloced + d.falloc - 1) / d.falloc * d.falloc
		if err := syscall.Fallocate(int(d.f.Fd()), 0, d.alloced, n); err != nil {
			return fmt.Errorf("fallocate: %w", err)
		}
		d.alloced += n
	}
	if _, err := d.f.WriteAt(d.buf[from:end], d.base+int64(from)); err != nil {
		return err
	}
	d.flushed = d.n
	if full := d.n / d.block * d.block; full > 0 {
		tail := copy(d.buf, d.buf[full:d.n])
		d.base += int64(full)
		d.n, d.flushed = tail, tail
	}
	return nil
}

// Size is the file's logical length: every byte appended.
func (d *directAppender) Size() int64 { return d.base + int64(d.n) }

// Close flushes and cuts the zero padding of the last block off.
func (d *directAppender) Close() error {
	err := d.Flush()
	if terr := d.f.Truncate(d.Size()); err == nil && terr != nil {
		err = fmt.Errorf("truncate: %w", terr)
	}
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// uintptrOfSlice is the address of b's first byte (Go's heap does not move
// objects, so it stays valid while b is live).
func uintptrOfSlice(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
