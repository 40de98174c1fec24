package tiered

import (
	"container/list"
	"context"
	"sync"
)

// chunkCache holds fixed-size chunks of remote objects, least recently used
// out first, within a byte budget, and the chunks being fetched: a reader
// that needs a chunk already in flight (fetched ahead, or by another
// reader) waits for that GET instead of sending its own, so read-ahead
// never doubles the store's traffic.
type chunkCache struct {
	stats *Stats
	mu    struct {
		sync.Mutex
		max, size int64
		lru       *list.List // of *chunk fetched, most recent first
		byKey     map[chunkKey]*chunk
	}
}

type chunkKey struct {
	key   string
	chunk int64 // -1: the whole object
}

// chunk is one cached or in-flight range of an object. data and err are
// set once, before done is closed; readers read them only after done.
type chunk struct {
	k    chunkKey
	id   string
	data []byte
	err  error
	done chan struct{}
	elem *list.Element // in the LRU once fetched; nil while in flight
}

func newChunkCache(maxBytes int64, stats *Stats) *chunkCache {
	c := &chunkCache{stats: stats}
	c.mu.max, c.mu.lru, c.mu.byKey = maxBytes, list.New(), map[chunkKey]*chunk{}
	return c
}

// get returns k's data: from the cache, from the GET in flight for it, or
// from fetch, which it runs itself (a miss) while later readers of k wait
// for it.
func (c *chunkCache) get(ctx context.Context, id string, k chunkKey, fetch func() ([]byte, error)) ([]byte, error) {
	ch, mine := c.claim(id, k, true)
	if mine {
		data, err := fetch()
		c.finish(ch, data, err)
		return data, err
	}
	select {
	case <-ch.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ch.err == nil {
		return ch.data, nil
	}
	// The GET ahead failed (it is tried once) or was cancelled: this
	// reader's own GET is retried.
	data, err := fetch()
	if err == nil {
		c.add(id, k, data)
	}
	return data, err
}

// claim returns k's entry; mine is true when there was none and the caller
// is to fetch it (then finish). count says whether to count a hit or miss.
func (c *chunkCache) claim(id string, k chunkKey, count bool) (ch *chunk, mine bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.mu.byKey[k]; ch != nil {
		if count {
			c.stats.CacheHits.Add(1)
		}
		if ch.elem != nil {
			c.mu.lru.MoveToFront(ch.elem)
		}
		return ch, false
	}
	if count {
		c.stats.CacheMisses.Add(1)
	}
	ch = &chunk{k: k, id: id, done: make(chan struct{})}
	c.mu.byKey[k] = ch
	return ch, true
}

// finish settles a claimed entry: cached on success (unless forgotten
// meanwhile or larger than the whole budget), dropped on failure.
func (c *chunkCache) finish(ch *chunk, data []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch.data, ch.err = data, err
	close(ch.done)
	if c.mu.byKey[ch.k] != ch {
		return // forgotten while in flight
	}
	if err != nil || int64(len(data)) > c.mu.max {
		delete(c.mu.byKey, ch.k)
		return
	}
	c.pushLocked(ch)
}

// add caches data as k's chunk unless k has an entry already.
func (c *chunkCache) add(id string, k chunkKey, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.mu.byKey[k]; (old != nil && old.elem != nil) || int64(len(data)) > c.mu.max {
		return
	}
	ch := &chunk{k: k, id: id, data: data, done: make(chan struct{})}
	close(ch.done)
	c.mu.byKey[k] = ch
	c.pushLocked(ch)
}

func (c *chunkCache) pushLocked(ch *chunk) {
	ch.elem = c.mu.lru.PushFront(ch)
	c.mu.size += int64(len(ch.data))
	for c.mu.size > c.mu.max {
		c.removeLocked(c.mu.lru.Back().Value.(*chunk))
	}
}

func (c *chunkCache) removeLocked(ch *chunk) {
	if ch.elem != nil {
		c.mu.lru.Remove(ch.elem)
		c.mu.size -= int64(len(ch.data))
		ch.elem = nil
	}
	if c.mu.byKey[ch.k] == ch {
		delete(c.mu.byKey, ch.k)
	}
}

// has reports whether k is cached (fetched, not in flight), without
// counting a hit or a miss.
func (c *chunkCache) has(k chunkKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.mu.byKey[k]
	return ch != nil && ch.elem != nil
}

// forget drops every chunk of the upload id (its objects were deleted),
// and the ones in flight: they will not be cached when they arrive.
func (c *chunkCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.mu.byKey {
		if ch.id == id {
			c.removeLocked(ch)
		}
	}
}

// bytes returns the cache's size.
func (c *chunkCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.size
}
