package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// A consumer group's rebalance history (kip848.go) is kept in
// __consumer_offsets under a key type of Strand's own, so that a restart or
// a coordinator move keeps it: one compacted record per group holding the
// last historyLen entries, rewritten each time an entry is added (an
// entry's handover figures, which grow after it is added, are stored as
// they are when the next entry comes). A group's record is deleted with
// its consumer records. Kafka has no such record; a Kafka or an older
// Strand skips the key as unreadable.

// historyKeyType is the key type of a history record: outside the range
// Kafka uses for its group records (0–8 and the share and streams groups'
// above), so no Kafka schema is ever read as one.
const historyKeyType int16 = 1000

// historyValueVersion is the value schema's version.
const historyValueVersion int16 = 0

var errBadHistory = errors.New("group: corrupt rebalance history record")

// historyKey is key type | group (int16 length and bytes).
func historyKey(group string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(historyKeyType))
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

// isHistoryKey reports whether key is a history record's, and its group.
func isHistoryKey(key []byte) (string, bool) {
	if len(key) < 4 || int16(binary.BigEndian.Uint16(key)) != historyKeyType {
		return "", false
	}
	n := int(binary.BigEndian.Uint16(key[2:]))
	if len(key) != 4+n {
		return "", false
	}
	return string(key[4:]), true
}

// encodeHistory is the value: version | count | entries, each time (Unix
// ms) | reason | epoch | members | moved | moved-to count, (member, n)... |
// handed over | longest unowned (ms). Strings are an int32 length and bytes.
func encodeHistory(h []Rebalance) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(historyValueVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	str := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	i32 := func(v int) { b = binary.BigEndian.AppendUint32(b, uint32(int32(v))) }
	for _, r := range h {
		b = binary.BigEndian.AppendUint64(b, uint64(r.Time.UnixMilli()))
		str(r.Reason)
		i32(int(r.Epoch))
		i32(r.Members)
		i32(r.Moved)
		i32(len(r.MovedTo))
		for _, m := range slices.Sorted(maps.Keys(r.MovedTo)) {
			str(m)
			i32(r.MovedTo[m])
		}
		i32(r.HandedOver)
		b = binary.BigEndian.AppendUint64(b, uint64(r.MaxUnowned.Milliseconds()))
	}
	return b
}

// decodeHistory parses what encodeHistory wrote.
func decodeHistory(b []byte) ([]Rebalance, error) {
	var err error
	need := func(n int) []byte {
		if err != nil || n < 0 || n > len(b) {
			err = errBadHistory
			return nil
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	u32 := func() int {
		if x := need(4); x != nil {
			return int(int32(binary.BigEndian.Uint32(x)))
		}
		return 0
	}
	u64 := func() int64 {
		if x := need(8); x != nil {
			return int64(binary.BigEndian.Uint64(x))
		}
		return 0
	}
	str := func() string { return string(need(u32())) }
	if v := need(2); v != nil && int16(binary.BigEndian.Uint16(v)) != historyValueVersion {
		return nil, fmt.Errorf("%w: version %d", errBadHistory, int16(binary.BigEndian.Uint16(v)))
	}
	n := u32()
	if n < 0 || n > historyLen {
		return nil, fmt.Errorf("%w: %d entries", errBadHistory, n)
	}
	var h []Rebalance
	for range n {
		ms := u64()
		r := Rebalance{Time: time.UnixMilli(ms)}
		if r.Time.UnixMilli() != ms {
			return nil, fmt.Errorf("%w: time %d out of range", errBadHistory, ms)
		}
		r.Reason = str()
		r.Epoch, r.Members, r.Moved = int32(u32()), u32(), u32()
		k := u32()
		if k < 0 || k > len(b) {
			return nil, errBadHistory
		}
		r.MovedTo = make(map[string]int, k)
		prev := ""
		for i := range k {
			m := str()
			if i > 0 && m <= prev {
				return nil, fmt.Errorf("%w: members not in ascending order", errBadHistory) // encodeHistory sorts them
			}
			prev = m
			r.MovedTo[m] = u32()
		}
		r.HandedOver = u32()
		unowned := u64()
		if r.MaxUnowned = time.Duration(unowned) * time.Millisecond; r.MaxUnowned.Milliseconds() != unowned {
			return nil, fmt.Errorf("%w: duration %d ms out of range", errBadHistory, unowned)
		}
		h = append(h, r)
	}
	if err == nil && len(b) != 0 {
		err = fmt.Errorf("%w: %d trailing bytes", errBadHistory, len(b))
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}

// storeHistory writes g's history; a failure is logged and leaves the
// stored history a step behind (it is a record of what happened, not state
// the group runs on).
func (g *group) storeHistory() {
	rec := StoreRecord{Key: historyKey(g.id), Value: encodeHistory(g.history)}
	if err := g.c.cfg.Store.Append(g.c.ctx, []StoreRecord{rec}); err != nil {
		g.log.Warn("storing the rebalance history failed", "err", err)
	}
}
