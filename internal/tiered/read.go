package tiered

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// Read returns whole batches from the store starting with the one holding
// from, at most maxBytes unless the first batch alone is larger, and never
// past the end of the segment holding from (the caller fetches again for
// more). It fails with ErrOutOfRange when from is not remote.
func (p *Partition) Read(ctx context.Context, from record.Offset, maxBytes int) ([]byte, error) {
	man := p.Manifest()
	if len(man.Segments) == 0 || from < max(man.LogStart, man.Segments[0].Start) || from >= man.Segments[len(man.Segments)-1].Next {
		return nil, fmt.Errorf("%w: %d", ErrOutOfRange, from)
	}
	p.t.stats.RemoteReads.Add(1)
	for i := man.find(from); i < len(man.Segments); i++ {
		seg := man.Segments[i]
		out, err := p.readSegment(ctx, seg, max(from, seg.Start), maxBytes)
		if err != nil {
			p.t.stats.RemoteReadErrors.Add(1)
			return nil, err
		}
		if len(out) > 0 {
			return out, nil
		}
		// from fell in a gap at the segment's end (compaction or
		// quarantine can leave one): the next segment holds what follows.
	}
	return nil, nil
}

func (p *Partition) readSegment(ctx context.Context, seg Segment, from record.Offset, maxBytes int) ([]byte, error) {
	c := p.t.cache
	idxKey := segmentKey(p.prefix, seg, ".index")
	index, err := c.whole(ctx, p.t, seg.ID, idxKey)
	if err != nil {
		return nil, err
	}
	pos := partlog.IndexLookup(index, uint32(from-seg.Base))
	key := segmentKey(p.prefix, seg, ".log")
	var out []byte
	for pos < seg.Size {
		hb, err := c.readAt(ctx, p.t, seg.ID, key, seg.Size, pos, record.HeaderSize)
		if err != nil {
			return nil, err
		}
		h, err := record.ParseHeader(hb)
		if err != nil {
			return nil, fmt.Errorf("tiered: %s at %d: %w", key, pos, err)
		}
		size := int64(h.Size())
		if h.NextOffset() <= from {
			pos += size
			continue
		}
		if len(out) > 0 && len(out)+int(size) > maxBytes {
			break
		}
		b, err := c.readAt(ctx, p.t, seg.ID, key, seg.Size, pos, size)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		pos += size
	}
	p.t.stats.RemoteReadBytes.Add(int64(len(out)))
	if pos < seg.Size {
		c.prefetch(p.t, seg.ID, key, seg.Size, pos, int64(maxBytes))
	}
	return out, nil
}

// prefetch fetches, in the background, the chunks a sequential reader's
// next read of about want bytes from off will need (two at least), so it
// finds them cached. It gives up when readAhead fetches already run.
func (c *chunkCache) prefetch(t *Tier, id, key string, objSize, off, want int64) {
	cs := t.cfg.ChunkBytes
	last := max(off/cs+1, (off+want-1)/cs)
	for idx := off / cs; idx <= last && idx*cs < objSize; idx++ {
		k := chunkKey{key: key, chunk: idx}
		if c.has(k) {
			continue
		}
		select {
		case t.ahead <- struct{}{}:
		default:
			return
		}
		t.aheadWG.Add(1)
		go func() {
			defer t.aheadWG.Done()
			defer func() { <-t.ahead }()
			ctx, cancel := context.WithTimeout(t.aheadCtx, 30*time.Second)
			defer cancel()
			start := idx * cs
			if data, err := t.cfg.Store.Get(ctx, key, start, min(cs, objSize-start)); err == nil {
				c.add(id, k, data)
			}
		}()
	}
}

// has reports whether k is cached, without counting a hit or a miss.
func (c *chunkCache) has(k chunkKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.byKey[k]
	return ok
}

// chunkCache holds fixed-size chunks of remote objects, least recently used
// out first, within a byte budget.
type chunkCache struct {
	stats *Stats
	mu    struct {
		sync.Mutex
		max, size int64
		lru       *list.List // of *chunk, most recent first
		byKey     map[chunkKey]*list.Element
	}
}

type chunkKey struct {
	key   string
	chunk int64 // -1: the whole object
}

type chunk struct {
	k    chunkKey
	id   string
	data []byte
}

func newChunkCache(maxBytes int64, stats *Stats) *chunkCache {
	c := &chunkCache{stats: stats}
	c.mu.max, c.mu.lru, c.mu.byKey = maxBytes, list.New(), map[chunkKey]*list.Element{}
	return c
}

func (c *chunkCache) lookup(k chunkKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.byKey[k]
	if !ok {
		c.stats.CacheMisses.Add(1)
		return nil, false
	}
	c.stats.CacheHits.Add(1)
	c.mu.lru.MoveToFront(e)
	return e.Value.(*chunk).data, true
}

func (c *chunkCache) add(id string, k chunkKey, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.byKey[k]; ok || int64(len(data)) > c.mu.max {
		return
	}
	c.mu.byKey[k] = c.mu.lru.PushFront(&chunk{k: k, id: id, data: data})
	c.mu.size += int64(len(data))
	for c.mu.size > c.mu.max {
		c.removeLocked(c.mu.lru.Back())
	}
}

func (c *chunkCache) removeLocked(e *list.Element) {
	ch := c.mu.lru.Remove(e).(*chunk)
	delete(c.mu.byKey, ch.k)
	c.mu.size -= int64(len(ch.data))
}

// forget drops every chunk of the upload id (its objects were deleted).
func (c *chunkCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.mu.lru.Front(); e != nil; {
		next := e.Next()
		if e.Value.(*chunk).id == id {
			c.removeLocked(e)
		}
		e = next
	}
}

// bytes returns the cache's size.
func (c *chunkCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.size
}

// whole returns a whole (small) object.
func (c *chunkCache) whole(ctx context.Context, t *Tier, id, key string) ([]byte, error) {
	k := chunkKey{key: key, chunk: -1}
	if b, ok := c.lookup(k); ok {
		return b, nil
	}
	var b []byte
	err := t.retry(ctx, "get "+key, func() error {
		var err error
		b, err = t.cfg.Store.Get(ctx, key, 0, -1)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.add(id, k, b)
	return b, nil
}

// readAt returns n bytes of the object key (of size objSize) at off,
// assembled from cached chunks.
func (c *chunkCache) readAt(ctx context.Context, t *Tier, id, key string, objSize, off, n int64) ([]byte, error) {
	if off < 0 || off+n > objSize {
		return nil, fmt.Errorf("tiered: %s: read %d bytes at %d of %d", key, n, off, objSize)
	}
	cs := t.cfg.ChunkBytes
	out := make([]byte, 0, n)
	for at := off; at < off+n; {
		idx := at / cs
		k := chunkKey{key: key, chunk: idx}
		data, ok := c.lookup(k)
		if !ok {
			start := idx * cs
			size := min(cs, objSize-start)
			err := t.retry(ctx, "get "+key, func() error {
				var err error
				data, err = t.cfg.Store.Get(ctx, key, start, size)
				return err
			})
			if err != nil {
				return nil, err
			}
			c.add(id, k, data)
		}
		lo := at - idx*cs
		hi := min(int64(len(data)), off+n-idx*cs)
		out = append(out, data[lo:hi]...)
		at = idx*cs + hi
	}
	return out, nil
}

// OffsetForTimestamp finds, in the remote tier, the first record at or
// after the log start whose timestamp is at least ts (ListOffsets by
// time). found is false when no remote record is that new: the local log
// is to be searched next.
func (p *Partition) OffsetForTimestamp(ctx context.Context, ts int64) (off record.Offset, recTS int64, found bool, err error) {
	man := p.Manifest()
	for _, seg := range man.Segments {
		if seg.MaxTimestamp < ts || seg.Next <= man.LogStart {
			continue
		}
		off, recTS, found, err = p.searchSegment(ctx, seg, ts, max(man.LogStart, seg.Start))
		if err != nil || found {
			return off, recTS, found, err
		}
	}
	return record.NoOffset, -1, false, nil
}

// searchSegment scans one remote segment's batch headers for the first
// batch holding a record at least ts new, and decodes only that batch.
func (p *Partition) searchSegment(ctx context.Context, seg Segment, ts int64, start record.Offset) (record.Offset, int64, bool, error) {
	c := p.t.cache
	key := segmentKey(p.prefix, seg, ".log")
	for pos := int64(0); pos < seg.Size; {
		hb, err := c.readAt(ctx, p.t, seg.ID, key, seg.Size, pos, record.HeaderSize)
		if err != nil {
			return record.NoOffset, -1, false, err
		}
		h, err := record.ParseHeader(hb)
		if err != nil {
			return record.NoOffset, -1, false, fmt.Errorf("tiered: %s at %d: %w", key, pos, err)
		}
		size := int64(h.Size())
		if h.MaxTimestamp >= ts && h.NextOffset() > start {
			raw, err := c.readAt(ctx, p.t, seg.ID, key, seg.Size, pos, size)
			if err != nil {
				return record.NoOffset, -1, false, err
			}
			b, err := record.Decode(raw)
			if err != nil {
				return record.NoOffset, -1, false, fmt.Errorf("tiered: %s at %d: %w", key, pos, err)
			}
			for _, r := range b.Records {
				if r.Offset >= start && r.Timestamp >= ts {
					return r.Offset, r.Timestamp, true, nil
				}
			}
		}
		pos += size
	}
	return record.NoOffset, -1, false, nil
}
