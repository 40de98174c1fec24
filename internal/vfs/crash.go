package vfs

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashOptions shapes what a crash keeps.
type CrashOptions struct {
	// TearRand, when non-nil, tears last writes: every file whose unsynced
	// change is a pure append (its current contents start with its synced
	// contents and are longer) keeps its synced bytes plus a prefix, of
	// uniformly random length from none to all, of the appended bytes. When nil
	// every file keeps exactly its synced bytes. Files and directories are
	// visited in sorted order, so a seeded source gives a reproducible crash.
	TearRand *rand.Rand
}

// CrashClone returns the disk as a machine crashing now would find it on
// reboot: only durable directory entries (see MemFS), each file with only its
// synced bytes (plus a torn tail with opts.TearRand). m is unchanged and stays
// usable; the clone shares no state with it, so files still open on m, and any
// later operation on m, cannot affect the clone. The clone has no injector.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &MemFS{root: crashCopy(m.root, opts, make(map[*memNode]*memNode))}
}

// Crash replaces m's contents with what CrashClone would return, in place.
// Files opened before the crash keep working but refer to the lost pre-crash
// files, as a dead process's descriptors would if it could still run: nothing
// they do is visible through m afterwards. The injector stays installed.
func (m *MemFS) Crash(opts CrashOptions) {
	m.dropLocks()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.root = crashCopy(m.root, opts, make(map[*memNode]*memNode))
}

// crashCopy copies the durable state reachable from n. seen maps old nodes to
// their copies, so a node reachable by two durable names (a cross-directory
// rename with both directories synced at different times) stays one node.
// Called with MemFS.mu held.
func crashCopy(n *memNode, opts CrashOptions, seen map[*memNode]*memNode) *memNode {
	if c, ok := seen[n]; ok {
		return c
	}
	if n.dir {
		c := newDirNode(n.mode)
		n.mu.RLock()
		c.mu.modTime = n.mu.modTime
		n.mu.RUnlock()
		seen[n] = c
		for _, name := range slices.Sorted(maps.Keys(n.durable)) {
			c.children[name] = crashCopy(n.durable[name], opts, seen)
		}
		c.durable = maps.Clone(c.children)
		return c
	}
	n.mu.RLock()
	synced, data, modTime := n.mu.synced, n.mu.data, n.mu.modTime
	kept := len(synced)
	if opts.TearRand != nil && len(data) > len(synced) && bytes.Equal(data[:len(synced)], synced) {
		kept += opts.TearRand.IntN(len(data) - len(synced) + 1)
	}
	var survived []byte
	if kept > len(synced) {
		survived = bytes.Clone(data[:kept])
	} else {
		survived = bytes.Clone(synced)
	}
	n.mu.RUnlock()
	c := newFileNode(n.mode, survived)
	c.mu.modTime = modTime
	seen[n] = c
	return c
}
