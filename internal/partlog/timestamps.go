package partlog

import (
	"fmt"
	"io"

	"github.com/strandmq/strand/internal/record"
)

// OffsetForTimestamp finds the first visible record (at or after the log start
// offset, below the high watermark) whose timestamp is >= ts, as ListOffsets
// by timestamp does. It returns that record's offset and timestamp, or
// (NoOffset, -1) when there is none.
func (l *Log) OffsetForTimestamp(ts int64) (record.Offset, int64, error) {
	if l.closed.Load() {
		return record.NoOffset, -1, ErrClosed
	}
	l.segs.RLock()
	defer l.segs.RUnlock()
	start, limit := record.Offset(l.start.Load()), record.Offset(l.hwm.Load())
	for _, s := range l.segs.list {
		if s.maxTS.Load() < ts || record.Offset(s.next.Load()) <= start {
			continue
		}
		o, t, err := l.offsetForTimestampIn(s, ts, start, limit)
		if err != nil || o != record.NoOffset {
			return o, t, err
		}
	}
	return record.NoOffset, -1, nil
}

// firstAtOrAfter finds, within one batch, the first record in [start, limit)
// with a timestamp >= ts.
func firstAtOrAfter(batch []byte, ts int64, start, limit record.Offset) (record.Offset, int64, bool, error) {
	b, err := record.Decode(batch)
	if err != nil {
		return record.NoOffset, -1, false, fmt.Errorf("partlog: decode batch for timestamp lookup: %w", err)
	}
	logAppend := b.Attributes&record.AttrTimestampType != 0
	for _, r := range b.Records {
		t := r.Timestamp
		if logAppend {
			t = b.MaxTimestamp
		}
		if r.Offset >= start && r.Offset < limit && t >= ts {
			return r.Offset, t, true, nil
		}
	}
	return record.NoOffset, -1, false, nil
}

// MaxTimestamp returns the largest timestamp among visible records and the
// offset of the first record holding it (ListOffsets' MAX_TIMESTAMP, KIP-734),
// or (-1, NoOffset) when the log holds no visible record.
func (l *Log) MaxTimestamp() (int64, record.Offset, error) {
	if l.closed.Load() {
		return -1, record.NoOffset, ErrClosed
	}
	l.segs.RLock()
	defer l.segs.RUnlock()
	var best *segment
	for _, s := range l.segs.list {
		if s.size.Load() > 0 && (best == nil || s.maxTS.Load() > best.maxTS.Load()) {
			best = s
		}
	}
	if best == nil {
		return -1, record.NoOffset, nil
	}
	ts := best.maxTS.Load()
	start, limit := record.Offset(l.start.Load()), record.Offset(l.hwm.Load())
	o, t, err := l.offsetForTimestampIn(best, ts, start, limit)
	if err != nil || o == record.NoOffset {
		return -1, record.NoOffset, err
	}
	return t, o, nil
}

func (l *Log) offsetForTimestampIn(s *segment, ts int64, start, limit record.Offset) (record.Offset, int64, error) {
	pos := uint32(0)
	if rel, ok := s.times.lookup(ts); ok {
		_, pos = s.index.lookup(rel)
	}
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load(), pos: int64(pos), verify: true}
	for {
		err := sc.next()
		if err == io.EOF {
			return record.NoOffset, -1, nil
		}
		if err != nil {
			return record.NoOffset, -1, err
		}
		if sc.hdr.BaseOffset >= limit {
			return record.NoOffset, -1, nil
		}
		if sc.hdr.MaxTimestamp >= ts {
			if o, t, ok, err := firstAtOrAfter(sc.batch, ts, start, limit); err != nil || ok {
				return o, t, err
			}
		}
		sc.advance()
	}
}

// recomputeMaxTimestamp rescans a segment's headers after a truncation.
func (l *Log) recomputeMaxTimestamp(s *segment) {
	s.maxTS.Store(-1)
	s.maxTSOffset.Store(-1)
	sc := scanner{f: s.log, name: s.logName(), limit: s.size.Load()}
	for sc.next() == nil {
		s.noteTimestamp(&sc.hdr)
		sc.advance()
	}
}
