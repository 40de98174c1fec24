package vfs

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory file system that models durability precisely enough to
// test crash recovery, and can fail any operation on demand.
//
// Durability model. Every file (inode) holds two byte slices:
//
//	current  what reads see: every Write and Truncate so far
//	synced   what survives a crash: current as of the last successful File.Sync
//
// Every directory holds two entry maps, name → node:
//
//	current  what OpenFile, Stat, ReadDir see: every create, rename and remove
//	durable  what survives a crash: current as of the last successful SyncDir
//
// A crash (CrashClone, Crash) rebuilds the tree from the root by following only
// durable entries, and gives each file reached its synced bytes. So a file
// created but whose directory was never synced disappears; a rename not followed
// by SyncDir reverts (SyncDir both directories for a cross-directory rename); a
// removed file comes back, with its synced contents; an unsynced Truncate is
// undone. With CrashOptions.TearRand, a file whose unsynced change is a pure
// append also keeps a random prefix of the appended bytes: a torn last write.
//
// Simplifications, chosen to keep the model small and predictable:
//   - Directories made by MkdirAll are durable at once (as if MkdirAll synced
//     each parent); only entries changed by OpenFile, Rename, Remove and
//     RemoveAll wait for SyncDir.
//   - Nothing is ever lost or reordered before a crash, and a crash loses
//     everything unsynced at once: there is no partial writeback of dirty data
//     other than the torn tail above.
//   - A failed Sync or SyncDir (see InjectError) leaves the state unsynced; it
//     does not model Linux's dropping of dirty pages after an fsync error.
//   - File metadata (mode, modification time) is not versioned.
//
// Paths. Names are converted with filepath.ToSlash and cleaned against a single
// root, so "a/b", "/a/b" and "/a/./b" are the same file; the root "/" always
// exists. OpenFile refuses directories (EISDIR) and SyncDir refuses files
// (ENOTDIR), both stricter than the OS, to catch misuse early. Permissions are
// recorded but never enforced. Errors are *os.PathError (or *os.LinkError for
// Rename) around a syscall.Errno, as package os returns them.
//
// Concurrency. A MemFS and its Files are safe for concurrent use: the directory
// tree is guarded by one mutex, each file's bytes by a read-write mutex, so
// ReadAt calls proceed in parallel with each other and serialise only briefly
// with a Write. Sync is a copy-on-write snapshot, not a copy, so frequent syncs
// of a growing file stay cheap.
type MemFS struct {
	inject atomic.Pointer[Injector]

	// mu guards the tree: root and every directory node's entry maps. It is
	// taken before any node's mu, never after.
	mu   sync.Mutex
	root *memNode

	locks memLocks // Lock's table (memlock.go)
}

var _ FS = (*MemFS)(nil)

// NewMem returns an empty MemFS holding only the root directory.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(0o755)}
}

// memNode is a file or a directory. Directory fields are guarded by MemFS.mu;
// file fields by the node's own lock.
type memNode struct {
	dir  bool
	mode os.FileMode // permission bits only; dir says the kind

	// Directory state (dir == true), guarded by MemFS.mu.
	children map[string]*memNode // current entries
	durable  map[string]*memNode // entries as of the last SyncDir

	// File state (dir == false), guarded by mu. Directories use only
	// mu.modTime.
	mu struct {
		sync.RWMutex
		data   []byte // current contents
		synced []byte // contents as of the last Sync; never mutated in place
		// shared reports that synced aliases data's backing array, so bytes of
		// data below len(synced) must not be written without copying first.
		shared  bool
		modTime time.Time
	}
}

func newDirNode(perm os.FileMode) *memNode {
	n := &memNode{dir: true, mode: perm.Perm()}
	n.children = make(map[string]*memNode)
	n.durable = make(map[string]*memNode)
	n.mu.modTime = time.Now()
	return n
}

func newFileNode(perm os.FileMode, data []byte) *memNode {
	n := &memNode{mode: perm.Perm()}
	n.mu.data = data
	n.mu.synced = data[:len(data):len(data)]
	n.mu.shared = true
	n.mu.modTime = time.Now()
	return n
}

// InjectError installs inj to decide the fate of every later operation on m and
// on files opened from it; nil removes it. A clone made by CrashClone starts
// with no injector.
func (m *MemFS) InjectError(inj Injector) {
	if inj == nil {
		m.inject.Store(nil)
		return
	}
	m.inject.Store(&inj)
}

// injected asks the installed injector about op on p.
func (m *MemFS) injected(op Op, p string) error {
	inj := m.inject.Load()
	if inj == nil {
		return nil
	}
	return (*inj)(op, p)
}

// cleanPath maps any name onto MemFS's single rooted namespace.
func cleanPath(name string) string {
	return path.Clean("/" + filepath.ToSlash(name))
}

// lookupLocked returns the node at p, which must be clean.
func (m *MemFS) lookupLocked(p string) (*memNode, syscall.Errno) {
	n := m.root
	if p == "/" {
		return n, 0
	}
	for _, part := range strings.Split(p[1:], "/") {
		if !n.dir {
			return nil, syscall.ENOTDIR
		}
		if n = n.children[part]; n == nil {
			return nil, syscall.ENOENT
		}
	}
	return n, 0
}

// parentLocked returns the directory that holds p's last element, and that
// element; base is "" for the root itself.
func (m *MemFS) parentLocked(p string) (dir *memNode, base string, errno syscall.Errno) {
	if p == "/" {
		return nil, "", 0
	}
	parent, base := path.Split(p)
	dir, errno = m.lookupLocked(path.Clean(parent))
	if errno != 0 {
		return nil, "", errno
	}
	if !dir.dir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, base, 0
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// OpenFile opens name. O_RDONLY, O_WRONLY, O_RDWR, O_CREATE, O_EXCL, O_TRUNC
// and O_APPEND behave as on POSIX; other flags are ignored. A file it creates
// is durable only after SyncDir of its directory.
func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	p := cleanPath(name)
	op := OpOpen
	if flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err := m.injected(op, p); err != nil {
		_, err = splitInjected(err, 0)
		return nil, pathErr("open", name, err)
	}
	access := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	f := &memFile{
		name:     name,
		path:     p,
		fs:       m,
		readable: access == os.O_RDONLY || access == os.O_RDWR,
		writable: access == os.O_WRONLY || access == os.O_RDWR,
		append:   flag&os.O_APPEND != 0,
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, errno := m.parentLocked(p)
	if errno != 0 {
		return nil, pathErr("open", name, errno)
	}
	if base == "" {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	n := dir.children[base]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, syscall.ENOENT)
	case n == nil:
		n = newFileNode(perm, nil)
		dir.children[base] = n
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, pathErr("open", name, syscall.EEXIST)
	case n.dir:
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	if flag&os.O_TRUNC != 0 {
		n.truncate(0) // even when read-only, as Linux does
	}
	f.node = n
	return f, nil
}

// Remove deletes a file or an empty directory entry. An open handle to a
// removed file stays usable, as after POSIX unlink. The removal is durable only
// after SyncDir of the directory; until then a crash brings the file back.
func (m *MemFS) Remove(name string) error {
	p := cleanPath(name)
	if err := m.injected(OpRemove, p); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("remove", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, errno := m.parentLocked(p)
	if errno != 0 {
		return pathErr("remove", name, errno)
	}
	if base == "" {
		return pathErr("remove", name, syscall.EBUSY)
	}
	n := dir.children[base]
	switch {
	case n == nil:
		return pathErr("remove", name, syscall.ENOENT)
	case n.dir && len(n.children) > 0:
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	return nil
}

// RemoveAll removes path and everything below it; a missing path is not an
// error. Like Remove, it is durable only after SyncDir of path's parent.
func (m *MemFS) RemoveAll(name string) error {
	p := cleanPath(name)
	if err := m.injected(OpRemove, p); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("removeall", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dir, base, errno := m.parentLocked(p)
	switch {
	case errno == syscall.ENOENT:
		return nil
	case errno != 0:
		return pathErr("removeall", name, errno)
	case base == "":
		return pathErr("removeall", name, syscall.EINVAL)
	}
	delete(dir.children, base)
	return nil
}

// Rename moves oldname to newname, replacing a file already there. As package
// os does on Unix, it refuses to replace a directory (EEXIST). It is durable
// only after SyncDir of both parents; until then a crash reverts it.
func (m *MemFS) Rename(oldname, newname string) error {
	op, np := cleanPath(oldname), cleanPath(newname)
	fail := func(err error) error {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	if err := m.injected(OpRename, op); err != nil {
		_, err = splitInjected(err, 0)
		return fail(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Like package os on Unix, refuse any existing directory as the target
	// (even oldname itself), reporting a bad oldname first.
	if target, errno := m.lookupLocked(np); errno == 0 && target.dir {
		if _, errno := m.lookupLocked(op); errno != 0 {
			return fail(errno)
		}
		return fail(syscall.EEXIST)
	}
	// Then as rename(2): both parents must resolve before oldname is looked up.
	odir, obase, errno := m.parentLocked(op)
	if errno != 0 {
		return fail(errno)
	}
	ndir, nbase, errno := m.parentLocked(np)
	if errno != 0 {
		return fail(errno)
	}
	if obase == "" {
		return fail(syscall.EBUSY)
	}
	n := odir.children[obase]
	if n == nil {
		return fail(syscall.ENOENT)
	}
	if op == np {
		return nil
	}
	if n.dir && strings.HasPrefix(np, op+"/") {
		return fail(syscall.EINVAL)
	}
	if old := ndir.children[nbase]; old != nil && n.dir {
		return fail(syscall.ENOTDIR) // old is a file: directories were refused above
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// MkdirAll creates dir and any missing parents. Unlike other entry changes,
// the directories it creates are durable at once.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	p := cleanPath(dir)
	if err := m.injected(OpMkdirAll, p); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("mkdir", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == "/" {
		return nil
	}
	n := m.root
	for i, part := range strings.Split(p[1:], "/") {
		child := n.children[part]
		if child == nil {
			child = newDirNode(perm)
			n.children[part] = child
			n.durable[part] = child
		} else if !child.dir {
			prefix := "/" + strings.Join(strings.Split(p[1:], "/")[:i+1], "/")
			return pathErr("mkdir", prefix, syscall.ENOTDIR)
		}
		n = child
	}
	return nil
}

// ReadDir returns the names of dir's current entries, sorted.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	p := cleanPath(dir)
	if err := m.injected(OpReadDir, p); err != nil {
		_, err = splitInjected(err, 0)
		return nil, pathErr("open", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookupLocked(p)
	if errno != 0 {
		return nil, pathErr("open", dir, errno)
	}
	if !n.dir {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes name as it currently is (not as it would be after a crash).
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	p := cleanPath(name)
	if err := m.injected(OpStat, p); err != nil {
		_, err = splitInjected(err, 0)
		return nil, pathErr("stat", name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookupLocked(p)
	if errno != 0 {
		return nil, pathErr("stat", name, errno)
	}
	return n.stat(path.Base(p)), nil
}

// SyncDir makes dir's current entries durable: its creations, renames and
// removals now survive a crash.
func (m *MemFS) SyncDir(dir string) error {
	p := cleanPath(dir)
	if err := m.injected(OpSyncDir, p); err != nil {
		_, err = splitInjected(err, 0)
		return pathErr("sync", dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, errno := m.lookupLocked(p)
	if errno != 0 {
		return pathErr("open", dir, errno)
	}
	if !n.dir {
		return pathErr("sync", dir, syscall.ENOTDIR)
	}
	n.durable = maps.Clone(n.children)
	return nil
}

// stat builds a FileInfo for n under the name base.
func (n *memNode) stat(base string) os.FileInfo {
	fi := memFileInfo{name: base, mode: n.mode}
	if n.dir {
		fi.mode |= fs.ModeDir
	}
	n.mu.RLock()
	if !n.dir {
		fi.size = int64(len(n.mu.data))
	}
	fi.modTime = n.mu.modTime
	n.mu.RUnlock()
	return fi
}

// memFileInfo is MemFS's os.FileInfo.
type memFileInfo struct {
	name    string
	size    int64
	mode    os.FileMode
	modTime time.Time
}

func (fi memFileInfo) Name() string       { return fi.name }
func (fi memFileInfo) Size() int64        { return fi.size }
func (fi memFileInfo) Mode() os.FileMode  { return fi.mode }
func (fi memFileInfo) ModTime() time.Time { return fi.modTime }
func (fi memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memFileInfo) Sys() any           { return nil }
