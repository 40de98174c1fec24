package compact

import (
	"fmt"

	"github.com/strandmq/strand/internal/partlog"
	"github.com/strandmq/strand/internal/record"
)

// rewriter holds one Clean's offset map and does its reading and writing.
type rewriter struct {
	now     int64 // ms
	horizon int64 // the delete horizon given to newly kept tombstones

	// keys maps a key to its index in latest: looking a []byte key up in
	// a map[string] does not allocate, so only a new key costs a string.
	keys   map[string]int
	latest []record.Offset
	// last maps a producer id to the base offset of its last batch in the
	// cleaned range.
	last map[int64]record.Offset

	mapBytes int64 // estimated memory of keys and latest

	aborted []AbortedTxn // the log's aborted transactions
	// inTxn holds the producers whose current transaction has a batch the
	// rewrite kept: its marker must stay (see filterMarker).
	inTxn map[int64]bool

	pending int64 // earliest delete horizon of a kept tombstone or marker; 0: none
	buf     []byte
	stats   *Stats
}

// keyOverhead approximates what one key costs the offset map beyond its
// bytes: the map entry, the string header and its slot in latest.
const keyOverhead = 64

// buildMap reads the range: producers' last batches everywhere, and the latest
// offset of every key in the dirty segments (step 2). When the map would
// outgrow mapBytes, it stops at the last dirty segment that fit (always
// keeping the first, so every Clean makes progress) and returns the plan cut
// there: the segments after it stay dirty for the next Clean.
func (w *rewriter) buildMap(l Log, pl plan, mapBytes int64) (plan, error) {
	for i, s := range pl.segs {
		dirty := i >= pl.firstDirty
		var u undo
		err := l.ScanSegment(s.Base, func(b []byte) error {
			h, err := record.ParseHeader(b)
			if err != nil {
				return err
			}
			if h.ProducerID >= 0 {
				u.producer(w, h.ProducerID)
				w.last[h.ProducerID] = h.BaseOffset
			}
			if !dirty || h.IsControl() || w.isAborted(h) {
				return nil
			}
			batch, err := record.Decode(b)
			if err != nil {
				return err
			}
			for j := range batch.Records {
				if r := &batch.Records[j]; r.Key != nil {
					w.mapKey(&u, r)
				}
			}
			return nil
		})
		if err != nil {
			return pl, fmt.Errorf("compact: %s: map segment %d: %w", l.Dir(), s.Base, err)
		}
		if dirty && i > pl.firstDirty && w.mapBytes > mapBytes {
			u.revert(w)
			w.stats.MapFull = true
			pl.segs, pl.end = pl.segs[:i], pl.segs[i-1].Next
			return pl, nil
		}
	}
	return pl, nil
}

// mapKey records r as its key's latest offset, noting in u how to undo it.
func (w *rewriter) mapKey(u *undo, r *record.Record) {
	if k, ok := w.keys[string(r.Key)]; ok {
		if _, seen := u.prev[k]; !seen {
			if u.prev == nil {
				u.prev = make(map[int]record.Offset)
			}
			u.prev[k] = w.latest[k]
		}
		w.latest[k] = r.Offset
		return
	}
	key := string(r.Key)
	w.keys[key] = len(w.latest)
	w.latest = append(w.latest, r.Offset)
	w.mapBytes += int64(len(key)) + keyOverhead
	u.added = append(u.added, key)
}

// undo is how to take one segment back out of the offset map.
type undo struct {
	added   []string                // keys the segment added
	prev    map[int]record.Offset   // latest offsets it overwrote
	lastWas map[int64]record.Offset // producers' last batches it overwrote; -1: none
}

func (u *undo) producer(w *rewriter, id int64) {
	if _, seen := u.lastWas[id]; seen {
		return
	}
	if u.lastWas == nil {
		u.lastWas = make(map[int64]record.Offset)
	}
	prev, ok := w.last[id]
	if !ok {
		prev = -1
	}
	u.lastWas[id] = prev
}

func (u *undo) revert(w *rewriter) {
	for k, o := range u.prev {
		w.latest[k] = o
	}
	for _, key := range u.added {
		delete(w.keys, key)
		w.mapBytes -= int64(len(key)) + keyOverhead
	}
	w.latest = w.latest[:len(w.latest)-len(u.added)] // added last, in order
	for id, o := range u.lastWas {
		if o < 0 {
			delete(w.last, id)
		} else {
			w.last[id] = o
		}
	}
}

// rewrite replaces one group of segments by their cleaned batches (step 3).
func (w *rewriter) rewrite(l Log, group []partlog.SegmentInfo) error {
	bases := make([]record.Offset, len(group))
	for i, s := range group {
		bases[i] = s.Base
	}
	err := l.ReplaceSegments(bases, func(emit func([]byte) error) error {
		for _, s := range group {
			w.stats.Segments++
			w.stats.BytesRead += s.Size
			err := l.ScanSegment(s.Base, func(b []byte) error {
				out, keep, err := w.filter(b)
				if err != nil || !keep {
					return err
				}
				w.stats.BytesWritten += int64(len(out))
				return emit(out)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("compact: %s: clean segments %v: %w", l.Dir(), bases, err)
	}
	return nil
}

// filter returns the cleaned form of batch b: b itself when nothing changes,
// a re-encoded batch, or keep=false when the batch disappears.
func (w *rewriter) filter(b []byte) (out []byte, keep bool, err error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return nil, false, err
	}
	if h.IsControl() {
		return w.filterMarker(b, h)
	}
	batch, err := record.Decode(b)
	if err != nil {
		return nil, false, err
	}
	horizon := h.DeleteHorizon()
	kept := batch.Records[:0]
	tombstones := false
	aborted := w.isAborted(h)
	for i := range batch.Records {
		r := batch.Records[i]
		w.stats.RecordsRead++
		switch {
		case aborted:
			w.stats.AbortedDropped++
			continue
		case r.Key == nil:
			w.stats.KeylessDropped++
			continue
		case w.superseded(&r):
			w.stats.Superseded++
			continue
		case r.Value == nil && horizon > 0 && w.now >= horizon:
			w.stats.TombstonesDropped++
			continue
		}
		tombstones = tombstones || r.Value == nil
		kept = append(kept, r)
	}
	w.stats.RecordsKept += int64(len(kept))
	if tombstones {
		if horizon == 0 {
			horizon = w.horizon
		}
		w.notePending(horizon)
	}
	if len(kept) == 0 && (h.ProducerID < 0 || w.last[h.ProducerID] != h.BaseOffset) {
		return nil, false, nil // a gap, unless the producer's state needs the batch
	}
	if h.IsTransactional() {
		w.inTxn[h.ProducerID] = true
	}
	if len(kept) == len(batch.Records) && horizon == h.DeleteHorizon() {
		return b, true, nil // unchanged: copy the bytes as they are
	}
	opts := h.Options()
	opts.DeleteHorizon = 0
	if tombstones {
		opts.DeleteHorizon = horizon
	}
	w.buf, err = record.AppendBatch(w.buf[:0], h.BaseOffset, kept, opts)
	if err != nil {
		return nil, false, fmt.Errorf("re-encode batch at offset %d: %w", h.BaseOffset, err)
	}
	return w.buf, true, nil
}

// superseded reports whether a later record of r's key is in the offset map.
func (w *rewriter) superseded(r *record.Record) bool {
	k, ok := w.keys[string(r.Key)]
	return ok && w.latest[k] > r.Offset
}

// isAborted reports whether h is a batch of an aborted transaction.
func (w *rewriter) isAborted(h record.Header) bool {
	if !h.IsTransactional() || h.IsControl() {
		return false
	}
	for _, a := range w.aborted {
		if a.ProducerID == h.ProducerID && a.First <= h.BaseOffset && h.BaseOffset <= a.Last {
			return true
		}
	}
	return false
}

// notePending makes horizon the checkpoint's pending delete horizon if it
// is the earliest: the cleaner comes back then.
func (w *rewriter) notePending(horizon int64) {
	if w.pending == 0 || horizon < w.pending {
		w.pending = horizon
	}
}

// filterMarker decides a transaction marker's fate. A marker stays while
// any batch of its transaction does, and while it is its producer's last
// batch (for the producer's sequence state). A marker whose transaction the
// cleaner emptied gets a delete horizon, as a tombstone does, and goes in a
// clean after it (Kafka's cleaner does the same): a read_committed reader
// that saw the transaction's last records has delete.retention.ms to see
// its end. (The partition names an aborted transaction to a reader only
// with data of it in the reply, so its index may outlive the marker.)
func (w *rewriter) filterMarker(b []byte, h record.Header) ([]byte, bool, error) {
	held := w.inTxn[h.ProducerID]
	delete(w.inTxn, h.ProducerID)
	if held || w.last[h.ProducerID] == h.BaseOffset {
		return b, true, nil
	}
	if horizon := h.DeleteHorizon(); horizon > 0 {
		if w.now >= horizon {
			w.stats.MarkersDropped++
			return nil, false, nil
		}
		w.notePending(horizon)
		return b, true, nil
	}
	batch, err := record.Decode(b)
	if err != nil {
		return nil, false, fmt.Errorf("marker at offset %d: %w", h.BaseOffset, err)
	}
	opts := h.Options()
	opts.DeleteHorizon = w.horizon
	w.notePending(w.horizon)
	if w.buf, err = record.AppendBatch(w.buf[:0], h.BaseOffset, batch.Records, opts); err != nil {
		return nil, false, fmt.Errorf("re-encode marker at offset %d: %w", h.BaseOffset, err)
	}
	return w.buf, true, nil
}
