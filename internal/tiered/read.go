package tiered

import (
	"context"
	"fmt"
	"time"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// Read returns whole batches from the store starting with the one holding
// from, at most maxBytes unless the first batch alone is larger. It fails
// with ErrOutOfRange when from is not remote.
func (p *Partition) Read(ctx context.Context, from record.Offset, maxBytes int) ([]byte, error) {
	return p.ReadInto(ctx, nil, from, maxBytes)
}

// ReadInto is Read appending to buf[:0] (a fetch's pooled buffer), so a
// remote read costs one copy of its bytes, from the cached chunks into
// buf. While maxBytes has room it reads on into the next segment, so a
// consumer's fetch is not cut short at every segment's end — but only
// from below the local log start: what the remote tier alone holds, which
// the next fetch would read here too (at or past the local start the
// local log serves, bounded by the high watermark and the last stable
// offset).
func (p *Partition) ReadInto(ctx context.Context, buf []byte, from record.Offset, maxBytes int) ([]byte, error) {
	man := p.Manifest()
	if len(man.Segments) == 0 || from < max(man.LogStart, man.Segments[0].Start) || from >= man.Segments[len(man.Segments)-1].Next {
		return nil, fmt.Errorf("%w: %d", ErrOutOfRange, from)
	}
	p.t.stats.RemoteReads.Add(1)
	out := buf[:0]
	for i := man.find(from); i < len(man.Segments); i++ {
		// from may fall in a gap at a segment's end (compaction or
		// quarantine can leave one): the next segment holds what follows.
		var full bool
		var err error
		out, from, full, err = p.readSegment(ctx, man, i, max(from, man.Segments[i].Start), maxBytes, out)
		if err != nil {
			p.t.stats.RemoteReadErrors.Add(1)
			return nil, err
		}
		if full || !p.belowLocal(from) {
			break
		}
	}
	p.t.stats.RemoteReadBytes.Add(int64(len(out)))
	return out, nil
}

// belowLocal reports whether o is below the local log's start.
func (p *Partition) belowLocal(o record.Offset) bool {
	return p.log != nil && o < p.log.LogStartOffset()
}

// readSegment appends to out the batches of man.Segments[i] from the one
// holding from, while out stays within maxBytes (the first batch of a read
// excepted). It returns the offset after the last batch appended (from when
// none) and whether out is full.
func (p *Partition) readSegment(ctx context.Context, man *Manifest, i int, from record.Offset, maxBytes int, out []byte) ([]byte, record.Offset, bool, error) {
	seg := man.Segments[i]
	c := p.t.cache
	index, err := c.whole(ctx, p.t, seg.ID, segmentKey(p.prefix, seg, ".index"))
	if err != nil {
		return nil, from, false, err
	}
	pos := partlog.IndexLookup(index, uint32(from-seg.Base))
	obj := object{key: segmentKey(p.prefix, seg, ".log"), id: seg.ID, size: seg.Size}
	cs := p.t.cfg.ChunkBytes
	ahead := int64(-1) // the chunk whose read-ahead was last started
	next := from
	for pos < seg.Size {
		if idx := pos / cs; idx != ahead {
			// Keep the window after the read position in flight: the
			// rest of this read and the next sequential one.
			ahead = idx
			p.readAhead(man, i, pos, min(int64(maxBytes-len(out))+max(int64(maxBytes), p.t.cfg.ReadAheadBytes), p.t.cfg.CacheBytes/2))
		}
		var hdr [record.HeaderSize]byte
		if _, err := c.appendAt(ctx, p.t, obj, pos, record.HeaderSize, hdr[:0]); err != nil {
			return nil, from, false, err
		}
		h, err := record.ParseHeader(hdr[:])
		if err != nil {
			return nil, from, false, fmt.Errorf("tiered: %s at %d: %w", obj.key, pos, err)
		}
		size := int64(h.Size())
		if h.NextOffset() <= from {
			pos += size
			continue
		}
		if len(out) > 0 && int64(len(out))+size > int64(maxBytes) {
			return out, next, true, nil
		}
		if out, err = c.appendAt(ctx, p.t, obj, pos, size, out); err != nil {
			return nil, from, false, err
		}
		pos += size
		next = h.NextOffset()
	}
	return out, next, len(out) >= maxBytes, nil
}

// object is one remote object read in chunks.
type object struct {
	key, id string
	size    int64
}

// readAhead starts background GETs of the chunks (and of the indexes of
// the segments) in the n bytes from pos in man.Segments[i] on, across
// segment ends, that are neither cached nor in flight, while fewer than
// readAhead such GETs run over the whole tier. A sequential reader then
// finds its next chunks cached, or their GETs already under way, and the
// chunks of one read are fetched concurrently, not one after another.
func (p *Partition) readAhead(man *Manifest, i int, pos, n int64) {
	t := p.t
	cs := t.cfg.ChunkBytes
	for ; i < len(man.Segments) && n > 0; i, pos = i+1, 0 {
		seg := man.Segments[i]
		if pos == 0 && !t.fetchAhead(seg.ID, segmentKey(p.prefix, seg, ".index"), -1, 0, -1) {
			return
		}
		key := segmentKey(p.prefix, seg, ".log")
		for idx := pos / cs; idx*cs < seg.Size && n > 0; idx++ {
			start := idx * cs
			if !t.fetchAhead(seg.ID, key, idx, start, min(cs, seg.Size-start)) {
				return
			}
			n -= min(cs, seg.Size-start) - (max(pos, start) - start)
		}
	}
}

// fetchAhead starts the GET of one chunk (of size bytes at off; chunk -1:
// the whole object) in the background unless it is cached or in flight.
// It reports false when readAhead GETs run already.
func (t *Tier) fetchAhead(id, key string, idx, off, size int64) bool {
	k := chunkKey{key: key, chunk: idx}
	select {
	case t.ahead <- struct{}{}:
	default:
		return false
	}
	ch, mine := t.cache.claim(id, k, false)
	if !mine {
		<-t.ahead
		return true
	}
	t.aheadWG.Add(1)
	go func() {
		defer t.aheadWG.Done()
		defer func() { <-t.ahead }()
		ctx, cancel := context.WithTimeout(t.aheadCtx, 30*time.Second)
		defer cancel()
		data, err := t.cfg.Store.Get(ctx, key, off, size)
		t.cache.finish(ch, data, err)
	}()
	return true
}

// whole returns a whole (small) object.
func (c *chunkCache) whole(ctx context.Context, t *Tier, id, key string) ([]byte, error) {
	return c.get(ctx, id, chunkKey{key: key, chunk: -1}, func() ([]byte, error) {
		var b []byte
		err := t.retry(ctx, "get "+key, func() error {
			var err error
			b, err = t.cfg.Store.Get(ctx, key, 0, -1)
			return err
		})
		return b, err
	})
}

// appendAt appends n bytes of obj at off to out, copied from its chunks
// (cached, in flight, or fetched now).
func (c *chunkCache) appendAt(ctx context.Context, t *Tier, obj object, off, n int64, out []byte) ([]byte, error) {
	if off < 0 || n < 0 || off+n > obj.size {
		return nil, fmt.Errorf("tiered: %s: read %d bytes at %d of %d", obj.key, n, off, obj.size)
	}
	cs := t.cfg.ChunkBytes
	for at := off; at < off+n; {
		idx := at / cs
		start := idx * cs
		size := min(cs, obj.size-start)
		data, err := c.get(ctx, obj.id, chunkKey{key: obj.key, chunk: idx}, func() ([]byte, error) {
			var b []byte
			err := t.retry(ctx, "get "+obj.key, func() error {
				var err error
				b, err = t.cfg.Store.Get(ctx, obj.key, start, size)
				return err
			})
			return b, err
		})
		if err != nil {
			return nil, err
		}
		if int64(len(data)) != size {
			return nil, fmt.Errorf("tiered: %s: chunk %d of %d bytes, want %d", obj.key, idx, len(data), size)
		}
		hi := min(size, off+n-start)
		out = append(out, data[at-start:hi]...)
		at = start + hi
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
	obj := object{key: key, id: seg.ID, size: seg.Size}
	for pos := int64(0); pos < seg.Size; {
		var hdr [record.HeaderSize]byte
		hb, err := c.appendAt(ctx, p.t, obj, pos, record.HeaderSize, hdr[:0])
		if err != nil {
			return record.NoOffset, -1, false, err
		}
		h, err := record.ParseHeader(hb)
		if err != nil {
			return record.NoOffset, -1, false, fmt.Errorf("tiered: %s at %d: %w", key, pos, err)
		}
		size := int64(h.Size())
		if h.MaxTimestamp >= ts && h.NextOffset() > start {
			raw, err := c.appendAt(ctx, p.t, obj, pos, size, nil)
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
