package vfs

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// FDCache bounds how many descriptors the files opened through it hold.
// A broker with 10,000 partitions has at least 30,000 segment files (a log
// and two indexes each); holding them all open needs a descriptor limit
// most hosts do not grant, and most of them are cold. Files opened through
// Wrap's FS stay usable as Files for their whole life, but the cache may
// close the descriptor behind one that is idle — the least recently used
// first — whenever more than its cap are open, and the next use opens the
// file again (without O_CREATE, O_EXCL or O_TRUNC: it exists and its
// contents are kept).
//
// Only files whose position does not matter are closed behind their
// owner's back: those opened with O_APPEND on which Read (the sequential
// one) was never called; ReadAt, Write at the end, Sync, Truncate and Size
// do not depend on a descriptor's offset. Other files count towards the cap
// but stay open until their owner closes them.
//
// A file with writes not yet fsynced is closed only when no clean one can
// be, and is fsynced first, so a write-back error cannot be lost with its
// descriptor; if that fsync fails, the file's next Sync (or Close) returns
// the error. The fsync is not done on the evicting caller's path — that is
// an append to some other file, which would wait on the disk for a file it
// never wrote: the descriptor goes to background closers (a few goroutines,
// so the fsyncs overlap on the disk, started on demand and gone when idle),
// and the file's next Sync or Close waits for it. At most a sixteenth of
// the cap more may wait for a background close; past that the evicting
// caller fsyncs inline, so memory and descriptors stay bounded however far
// the disk falls behind. (Keeping that sixteenth inside the cap instead
// would make a working set that fits the cap exactly — 10,000 partitions'
// active segments under a cap of 10,000 — miss on every use.)
//
// The cap is soft: a file in use (inside ReadAt, Write, …) is never closed,
// so at most cap, plus the descriptors waiting for a background close, plus
// the number of concurrent operations are open.
type FDCache struct {
	max     int
	open    atomic.Int64 // descriptors held by cached files, pending closes included
	pending atomic.Int64 // descriptors queued for or in a background close
	mu      sync.Mutex
	lru     list.List // of *cachedFile with a descriptor, most recently used at the front

	closer struct {
		sync.Mutex
		queue   []*pendingClose
		workers int
	}

	clock   atomic.Int64 // counts moves to the front of lru
	reopens atomic.Int64
	closes  atomic.Int64
}

// NewFDCache returns a cache that keeps at most max descriptors open
// (max < 1 means no cap: files are never closed behind their owner).
func NewFDCache(max int) *FDCache { return &FDCache{max: max} }

// closeWorkers bounds the background closers: concurrent fsyncs overlap
// their writes and cache flushes on the disk (on the benchmark machine's
// virtio disk four of them sync about four times as many files a second
// as one; sixteen, little more).
const closeWorkers = 4

// maxPending is how many descriptors may wait for a background close, over
// the cap. Below a cap of 16 there is none: eviction fsyncs inline.
func (c *FDCache) maxPending() int64 { return int64(c.max / 16) }

// pendingClose is a dirty file's descriptor on its way to fsync and close.
type pendingClose struct {
	h    *cachedFile
	f    File
	done chan struct{} // closed once h.mu.err holds the fsync's failure, if any
}

// Open is the number of descriptors the cache's files hold now.
func (c *FDCache) Open() int { return int(c.open.Load()) }

// Max is the cap (< 1: none).
func (c *FDCache) Max() int { return c.max }

// Stats reports how many times a file was opened again after the cache had
// closed it, and how many descriptors the cache closed.
func (c *FDCache) Stats() (reopens, closes int64) { return c.reopens.Load(), c.closes.Load() }

// Wrap returns fs with its OpenFile going through the cache; every other
// method is fs's own.
func (c *FDCache) Wrap(fs FS) FS { return &cachedFS{FS: fs, c: c} }

type cachedFS struct {
	FS
	c *FDCache
}

func (cfs *cachedFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := cfs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	h := &cachedFile{c: cfs.c, fs: cfs.FS, name: name,
		reopen:    flag &^ (os.O_CREATE | os.O_EXCL | os.O_TRUNC),
		evictable: flag&os.O_APPEND != 0,
	}
	h.mu.f = f
	cfs.c.added(h)
	return h, nil
}

// Lock keeps the wrapped FS's directory lock (Locker) reachable.
func (cfs *cachedFS) Lock(name, owner string) (io.Closer, error) { return Lock(cfs.FS, name, owner) }

// cachedFile is a File whose descriptor the cache may close while idle.
type cachedFile struct {
	c      *FDCache
	fs     FS
	name   string
	reopen int // flags to open it again with

	mu struct {
		sync.Mutex
		f      File  // nil while closed by the cache
		users  int   // operations in progress
		closed bool  // closed by its owner
		dirty  bool  // written since the last Sync
		err    error // a failed fsync at eviction, for the next Sync
		// closing is the descriptor evicted dirty, until its background
		// fsync is done; Sync and Close wait for it.
		closing *pendingClose
	}
	evictable bool
	sequenced atomic.Bool   // Read was called: the offset matters
	elem      *list.Element // in c.lru while open; guarded by c.mu
	stamp     atomic.Int64  // c.clock when last moved to the front
}

var errFileClosed = errors.New("vfs: file already closed")

// acquire returns the open descriptor, opening the file again if the cache
// closed it, and counts a user until release.
func (h *cachedFile) acquire() (File, error) {
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return nil, errFileClosed
	}
	if h.mu.f == nil {
		f, err := h.fs.OpenFile(h.name, h.reopen, 0)
		if err != nil {
			h.mu.Unlock()
			return nil, fmt.Errorf("vfs: reopen %s: %w", h.name, err)
		}
		h.mu.f = f
		h.c.reopens.Add(1)
		h.mu.users++
		h.mu.Unlock()
		h.c.added(h)
		return f, nil
	}
	h.mu.users++
	f := h.mu.f
	h.mu.Unlock()
	h.c.touch(h)
	return f, nil
}

func (h *cachedFile) release() {
	h.mu.Lock()
	h.mu.users--
	h.mu.Unlock()
}

// added counts a newly opened descriptor and closes idle ones past the cap.
func (c *FDCache) added(h *cachedFile) {
	c.open.Add(1)
	h.stamp.Store(c.clock.Add(1))
	c.mu.Lock()
	h.elem = c.lru.PushFront(h)
	c.mu.Unlock()
	c.shrink()
}

// touch moves h to the front of the list, unless it moved there recently:
// then it is far from the cold end anyway, and a hot file's every read and
// write does not take the cache's lock.
func (c *FDCache) touch(h *cachedFile) {
	if c.clock.Load()-h.stamp.Load() < int64(c.max/4) {
		return
	}
	h.stamp.Store(c.clock.Add(1))
	c.mu.Lock()
	if h.elem != nil {
		c.lru.MoveToFront(h.elem)
	}
	c.mu.Unlock()
}

func (c *FDCache) removed(h *cachedFile) {
	c.mu.Lock()
	if h.elem != nil {
		c.lru.Remove(h.elem)
		h.elem = nil
	}
	c.mu.Unlock()
}

// victimScan bounds how far from the cold end shrink looks for a clean
// file once it has found a dirty one it could settle for.
const victimScan = 64

// shrink closes idle evictable files, coldest first, until those not
// waiting for a background close fit the cap or none is left to close.
func (c *FDCache) shrink() {
	if c.max < 1 {
		return
	}
	for c.open.Load()-c.pending.Load() > int64(c.max) {
		h := c.victim()
		if h == nil {
			return // everything open is in use or not evictable
		}
		h.evict()
	}
}

// victim picks the coldest idle evictable file, preferring a clean one,
// and takes it out of the list (so two shrinks do not pick the same).
func (c *FDCache) victim() *cachedFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	var dirty *cachedFile
	scanned := 0
	// The front is the file just opened or used: never its own victim.
	for e := c.lru.Back(); e != nil && e != c.lru.Front(); e = e.Prev() {
		if scanned++; scanned > victimScan && dirty != nil {
			break
		}
		h := e.Value.(*cachedFile)
		if !h.evictable || h.sequenced.Load() || !h.mu.TryLock() {
			continue
		}
		idle, isDirty := h.mu.users == 0 && h.mu.f != nil, h.mu.dirty
		h.mu.Unlock()
		if !idle {
			continue
		}
		if !isDirty {
			c.lru.Remove(e)
			h.elem = nil
			return h
		}
		if dirty == nil {
			dirty = h
		}
	}
	if dirty != nil && dirty.elem != nil {
		c.lru.Remove(dirty.elem)
		dirty.elem = nil
	}
	return dirty
}

// evict closes h's descriptor if it is still idle; otherwise it goes back
// into the list.
func (h *cachedFile) evict() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.f == nil || h.mu.users > 0 {
		if h.mu.f != nil {
			h.c.mu.Lock()
			if h.elem == nil {
				h.elem = h.c.lru.PushFront(h)
			}
			h.c.mu.Unlock()
		}
		return
	}
	if h.mu.dirty && h.mu.closing == nil && h.c.closeLater(h) {
		h.mu.f = nil
		h.mu.dirty = false
		return
	}
	if h.mu.dirty {
		if err := h.mu.f.Sync(); err != nil && h.mu.err == nil {
			h.mu.err = err
		}
		h.mu.dirty = false
	}
	_ = h.mu.f.Close()
	h.mu.f = nil
	h.c.open.Add(-1)
	h.c.closes.Add(1)
}

// closeLater queues h's descriptor for a background fsync and close, unless
// too many are queued already. Called with h.mu held.
func (c *FDCache) closeLater(h *cachedFile) bool {
	c.closer.Lock()
	defer c.closer.Unlock()
	if c.pending.Load() >= c.maxPending() {
		return false
	}
	p := &pendingClose{h: h, f: h.mu.f, done: make(chan struct{})}
	h.mu.closing = p
	c.pending.Add(1)
	c.closer.queue = append(c.closer.queue, p)
	if c.closer.workers < min(closeWorkers, len(c.closer.queue)) {
		c.closer.workers++
		go c.runCloser()
	}
	return true
}

// runCloser fsyncs and closes queued descriptors until the queue is empty.
func (c *FDCache) runCloser() {
	for {
		c.closer.Lock()
		if len(c.closer.queue) == 0 {
			c.closer.workers--
			c.closer.Unlock()
			return
		}
		p := c.closer.queue[0]
		c.closer.queue[0] = nil
		c.closer.queue = c.closer.queue[1:]
		c.closer.Unlock()

		err := p.f.Sync()
		_ = p.f.Close()
		c.open.Add(-1)
		c.pending.Add(-1)
		c.closes.Add(1)
		h := p.h
		h.mu.Lock()
		if err != nil && h.mu.err == nil {
			h.mu.err = err
		}
		h.mu.closing = nil
		h.mu.Unlock()
		close(p.done)
	}
}

// waitClosing waits for h's background close, if one is under way.
func (h *cachedFile) waitClosing() {
	h.mu.Lock()
	p := h.mu.closing
	h.mu.Unlock()
	if p != nil {
		<-p.done
	}
}

func (h *cachedFile) Name() string { return h.name }

func (h *cachedFile) Read(p []byte) (int, error) {
	h.sequenced.Store(true) // from now on the descriptor's offset matters
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.Read(p)
}

func (h *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.ReadAt(p, off)
}

func (h *cachedFile) Write(p []byte) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	h.markDirty()
	return f.Write(p)
}

func (h *cachedFile) Truncate(size int64) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	h.markDirty()
	return f.Truncate(size)
}

func (h *cachedFile) markDirty() {
	h.mu.Lock()
	h.mu.dirty = true
	h.mu.Unlock()
}

func (h *cachedFile) Size() (int64, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.Size()
}

// Sync fsyncs the file. An fsync that failed when the cache closed the
// descriptor is reported here, once: the writes it covered may be lost.
func (h *cachedFile) Sync() error {
	// A file the cache closed with nothing left unsynced needs no fsync:
	// do not open it again only for that.
	h.waitClosing()
	h.mu.Lock()
	settled := h.mu.f == nil && !h.mu.closed && !h.mu.dirty && h.mu.closing == nil && h.mu.err == nil
	h.mu.Unlock()
	if settled {
		return nil
	}
	// Hold the descriptor first, so the cache cannot close it (skipping
	// its fsync, the file being clean) between here and the fsync.
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	h.waitClosing() // one that began before acquire; none can begin now
	h.mu.Lock()
	failed := h.mu.err
	h.mu.err = nil
	// A write racing this fsync sets dirty again after it.
	h.mu.dirty = false
	h.mu.Unlock()
	if failed != nil {
		h.markDirty()
		return h.evictionErr(failed)
	}
	if err := f.Sync(); err != nil {
		h.markDirty()
		return err
	}
	return nil
}

// Close closes the descriptor if the cache has not, waits for a background
// close of an earlier one, and forgets the file.
func (h *cachedFile) Close() error {
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return errFileClosed
	}
	h.mu.closed = true
	f := h.mu.f
	h.mu.f = nil
	h.mu.Unlock()
	h.c.removed(h)
	var err error
	if f != nil {
		h.c.open.Add(-1)
		err = f.Close()
	}
	h.waitClosing()
	h.mu.Lock()
	failed := h.mu.err
	h.mu.err = nil
	h.mu.Unlock()
	if failed != nil {
		err = errors.Join(err, h.evictionErr(failed))
	}
	return err
}

func (h *cachedFile) evictionErr(err error) error {
	return fmt.Errorf("vfs: fsync of %s when its descriptor was closed: %w", h.name, err)
}
