package kafka

import (
	"math/bits"
	"sync"
)

// Request frames are pooled by power-of-two size class, server-wide: a
// producer's multi-megabyte requests then land in memory that is already
// mapped and warm instead of a fresh allocation the kernel must fault in and
// Go must zero, and a buffer that no connection needs is freed by the GC
// (sync.Pool empties over two collections) rather than held per connection.
const (
	minFrameClass = 12 // 4 KiB
	maxFrameClass = 27 // 128 MiB, above the default socket.request.max.bytes
)

type framePool struct {
	classes [maxFrameClass - minFrameClass + 1]sync.Pool // of *[]byte
}

// frameClass is the class index of a buffer able to hold n bytes, or -1
// when n is too large to pool.
func frameClass(n int) int {
	c := max(bits.Len(uint(n-1)), minFrameClass)
	if c > maxFrameClass {
		return -1
	}
	return c - minFrameClass
}

// tryGet returns a pooled buffer of length n, or nil when none is free.
func (p *framePool) tryGet(n int) []byte {
	c := frameClass(n)
	if c < 0 {
		return nil
	}
	if bp, _ := p.classes[c].Get().(*[]byte); bp != nil {
		return (*bp)[:n]
	}
	return nil
}

// get returns a buffer of length n, pooled or new.
func (p *framePool) get(n int) []byte {
	if b := p.tryGet(n); b != nil {
		return b
	}
	c := frameClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	return make([]byte, n, 1<<(c+minFrameClass))
}

// put returns b to the pool; b must not be used afterwards. Buffers whose
// capacity is not exactly a class size (not from get) are left to the GC.
func (p *framePool) put(b []byte) {
	c := frameClass(cap(b))
	if c < 0 || cap(b) != 1<<(c+minFrameClass) {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}
