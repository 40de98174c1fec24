package vfs

import (
	"io"
	"sync"
)

// memLocks is MemFS's lock table: one machine's view of flock(2). A crash
// (Crash) empties it, as the kernel releases a dead process's locks.
type memLocks struct {
	mu    sync.Mutex
	gen   int               // bumped by every crash
	owner map[string]string // cleaned path → owner
}

// Lock takes the in-memory lock on name.
func (m *MemFS) Lock(name, owner string) (io.Closer, error) {
	p := cleanPath(name)
	m.locks.mu.Lock()
	defer m.locks.mu.Unlock()
	if h, held := m.locks.owner[p]; held {
		return nil, &LockedError{Path: name, Holder: h}
	}
	if m.locks.owner == nil {
		m.locks.owner = make(map[string]string)
	}
	m.locks.owner[p] = owner
	return &memUnlock{m: m, p: p, gen: m.locks.gen}, nil
}

type memUnlock struct {
	m    *MemFS
	p    string
	gen  int // the crash generation the lock was taken in
	once sync.Once
}

func (u *memUnlock) Close() error {
	u.once.Do(func() {
		u.m.locks.mu.Lock()
		defer u.m.locks.mu.Unlock()
		if u.gen == u.m.locks.gen { // a crash already released it
			delete(u.m.locks.owner, u.p)
		}
	})
	return nil
}

// dropLocks forgets every lock (a crash: the holders are dead).
func (m *MemFS) dropLocks() {
	m.locks.mu.Lock()
	m.locks.gen++
	m.locks.owner = nil
	m.locks.mu.Unlock()
}
