package share

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// model is the share-partition as a plain map with no window: the obvious
// reading of KIP-932's rules, against which Partition is checked.
type model struct {
	cfg   Config
	floor Offset // MoveStart's: offsets below are forgotten
	hi    Offset // the next offset never acquired
	recs  map[Offset]*mrec
	skip  map[Offset]bool // undeliverable offsets: archived, never acquired
}

type mrec struct {
	state    State
	count    int16
	member   string
	deadline time.Time
}

func (m *model) get(o Offset) *mrec {
	if r, ok := m.recs[o]; ok {
		return r
	}
	return &mrec{}
}

func (m *model) start() Offset {
	o := m.floor
	for o < m.hi && m.get(o).state.done() {
		o++
	}
	return o
}

// acquire is the model's acquisition; with end set (batch-optimized mode)
// it goes on past max to the end of the batch of the last offset taken.
func (m *model) acquire(member string, limit Offset, max int, now time.Time, end func(Offset) Offset) []Range {
	var out []Range
	last := Offset(-1)
	skip := func(o Offset) bool {
		if !m.skip[o] {
			return false
		}
		m.recs[o] = &mrec{state: Archived, count: m.get(o).count}
		return true
	}
	take := func(o Offset) {
		r := m.get(o)
		r.state, r.member, r.deadline = Acquired, member, now.Add(m.cfg.LockDuration)
		r.count++
		m.recs[o] = r
		if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].Count == r.count {
			out[n-1].Last = o
		} else {
			out = append(out, Range{o, o, r.count})
		}
		max--
		last = o
	}
	more := func(o Offset) bool {
		return max > 0 || (end != nil && last >= 0 && o <= end(last))
	}
	start := m.start()
	for o := start; o < m.hi && o < limit && more(o); o++ {
		if m.get(o).state == Available && !skip(o) {
			take(o)
		}
	}
	for more(m.hi) && m.hi < limit && int(m.hi-start) < m.cfg.MaxRecordLocks {
		m.hi++
		if !skip(m.hi - 1) {
			take(m.hi - 1)
		}
	}
	return out
}

func (m *model) giveBack(o Offset, expired bool) []Dead {
	r := m.get(o)
	if r.count >= m.cfg.DeliveryLimit {
		d := Dead{Offset: o, Count: r.count, Reason: ReasonDeliveryLimit, Member: r.member, Expired: expired}
		m.recs[o] = &mrec{state: Archived, count: r.count}
		return []Dead{d}
	}
	m.recs[o] = &mrec{state: Available, count: r.count}
	return nil
}

func (m *model) ack(member string, first, last Offset, kind AckType, now time.Time) ([]Dead, error) {
	start := m.start()
	if first > last || kind > AckRenew || kind < AckGap {
		return nil, ErrInvalidRequest
	}
	for o := first; o <= last; o++ {
		if r := m.get(o); o < start || o >= m.hi || r.state != Acquired || r.member != member {
			return nil, ErrInvalidRecordState
		}
	}
	var dead []Dead
	for o := first; o <= last; o++ {
		r := m.get(o)
		switch kind {
		case AckAccept, AckGap:
			m.recs[o] = &mrec{state: Acknowledged, count: r.count}
		case AckReject:
			dead = append(dead, Dead{Offset: o, Count: r.count, Reason: ReasonRejected, Member: member})
			m.recs[o] = &mrec{state: Archived, count: r.count}
		case AckRelease:
			dead = append(dead, m.giveBack(o, false)...)
		case AckRenew:
			r.deadline = now.Add(m.cfg.LockDuration)
		}
	}
	return dead, nil
}

func (m *model) release(match func(*mrec) bool, expired bool) []Dead {
	var dead []Dead
	for o := m.start(); o < m.hi; o++ {
		if r := m.get(o); r.state == Acquired && match(r) {
			dead = append(dead, m.giveBack(o, expired)...)
		}
	}
	return dead
}

// check compares every observable of p with the model and checks the
// package invariants.
func check(t *rapid.T, p *Partition, m *model) {
	if got, want := p.Start(), m.start(); got != want {
		t.Fatalf("start: got %d, want %d", got, want)
	}
	if got, want := p.End(), max(m.hi, m.start()); got != want {
		t.Fatalf("end: got %d, want %d", got, want)
	}
	if len(p.slots) > 0 && p.slots[0].state.done() {
		t.Fatalf("the window starts with a done offset")
	}
	for o := p.Start(); o < p.End(); o++ {
		st, n := p.StateOf(o)
		r := m.get(o)
		if st != r.state || n != r.count || p.Owner(o) != r.member {
			t.Fatalf("offset %d: got %s×%d by %q, want %s×%d by %q", o, st, n, p.Owner(o), r.state, r.count, r.member)
		}
		if st == Available && n >= p.cfg.DeliveryLimit {
			t.Fatalf("offset %d available after %d deliveries, limit %d", o, n, p.cfg.DeliveryLimit)
		}
		if (st == Acquired) != (p.Owner(o) != "") {
			t.Fatalf("offset %d: %s with owner %q", o, st, p.Owner(o))
		}
	}
	// The persisted form reloads to the same window, locks dropped.
	snap := p.Snapshot()
	key := Key{Type: KeySnapshot, Group: "g", Partition: 3}
	dk, err := DecodeKey(EncodeKey(key))
	if err != nil || dk != key {
		t.Fatalf("key round trip: %v %+v", err, dk)
	}
	got, epoch, err := DecodeSnapshot(EncodeSnapshot(snap, 7))
	if err != nil || epoch != 7 || !reflect.DeepEqual(normal(got), normal(snap)) {
		t.Fatalf("snapshot round trip: %v epoch %d\n got %+v\nwant %+v", err, epoch, got, snap)
	}
	q := Restore(p.cfg, got)
	if q.Start() != p.Start() {
		t.Fatalf("restored start %d, want %d", q.Start(), p.Start())
	}
	for o := p.Start(); o < p.End(); o++ {
		st, n := p.StateOf(o)
		if st == Acquired {
			st = Available
		}
		if qs, qn := q.StateOf(o); qs != st || qn != n {
			t.Fatalf("restored offset %d: %s×%d, want %s×%d", o, qs, qn, st, n)
		}
	}
}

func normal(s Snapshot) Snapshot {
	if len(s.Batches) == 0 {
		s.Batches = nil
	}
	return s
}

func TestPartitionModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			LockDuration:   time.Duration(rapid.IntRange(1, 5).Draw(t, "lock")) * time.Second,
			DeliveryLimit:  int16(rapid.IntRange(1, 4).Draw(t, "limit")),
			MaxRecordLocks: rapid.IntRange(1, 12).Draw(t, "locks"),
		}
		now := time.Unix(1_700_000_000, 0)
		p := NewPartition(cfg, 0)
		// Offsets no member may be handed (markers, aborted
		// transactions: isolation.go), fixed for the log.
		undeliverable := rapid.SliceOfN(rapid.IntRange(0, 44), 0, 10).Draw(t, "undeliverable")
		m := &model{cfg: cfg, recs: map[Offset]*mrec{}, skip: map[Offset]bool{}}
		var skip []Span
		for _, o := range undeliverable {
			m.skip[Offset(o)] = true
		}
		for o := Offset(0); o < 45; o++ {
			if !m.skip[o] {
				continue
			}
			if n := len(skip); n > 0 && skip[n-1].Last == o-1 {
				skip[n-1].Last = o
			} else {
				skip = append(skip, Span{o, o})
			}
		}
		// The log's batches, for the batch-optimized acquisitions: each
		// holds batch offsets.
		batch := Offset(rapid.IntRange(1, 5).Draw(t, "batch"))
		batchEnd := func(o Offset) Offset { return (o/batch+1)*batch - 1 }
		members := []string{"a", "b", "c"}
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				who := rapid.SampledFrom(members).Draw(t, "member")
				limit := Offset(rapid.IntRange(0, 40).Draw(t, "limitOffset"))
				n := rapid.IntRange(1, 8).Draw(t, "max")
				got, want := p.AcquireSkipping(who, limit, n, now, skip), m.acquire(who, limit, n, now, nil)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("acquire: got %v, want %v", got, want)
				}
			},
			"acquireBatches": func(t *rapid.T) {
				who := rapid.SampledFrom(members).Draw(t, "member")
				limit := Offset(rapid.IntRange(0, 40).Draw(t, "limitOffset"))
				n := rapid.IntRange(1, 8).Draw(t, "max")
				got, want := p.AcquireBatches(who, limit, n, now, skip, batchEnd), m.acquire(who, limit, n, now, batchEnd)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("acquire whole batches of %d: got %v, want %v", batch, got, want)
				}
			},
			"ack": func(t *rapid.T) {
				who := rapid.SampledFrom(members).Draw(t, "member")
				first := p.Start() + Offset(rapid.IntRange(-2, 10).Draw(t, "first"))
				last := first + Offset(rapid.IntRange(-1, 4).Draw(t, "len"))
				kind := AckType(rapid.IntRange(0, 5).Draw(t, "kind"))
				got, gerr := p.Acknowledge(who, first, last, kind, now)
				want, werr := m.ack(who, first, last, kind, now)
				if !errors.Is(gerr, werr) || (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("ack %s [%d,%d] %d: got %v %v, want %v %v", who, first, last, kind, got, gerr, want, werr)
				}
			},
			"tick": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(1, 3).Draw(t, "secs")) * time.Second)
				got := p.Expire(now)
				want := m.release(func(r *mrec) bool { return !r.deadline.After(now) }, true)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("expire: got %v, want %v", got, want)
				}
			},
			"leave": func(t *rapid.T) {
				who := rapid.SampledFrom(members).Draw(t, "member")
				got := p.ReleaseMember(who)
				want := m.release(func(r *mrec) bool { return r.member == who }, false)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("leave %s: got %v, want %v", who, got, want)
				}
			},
			"moveStart": func(t *rapid.T) {
				o := Offset(rapid.IntRange(0, 45).Draw(t, "to"))
				p.MoveStart(o)
				if o > m.floor {
					m.floor = o
					if m.hi < o {
						m.hi = o
					}
				}
			},
			"changeLimit": func(t *rapid.T) {
				cfg.DeliveryLimit = int16(rapid.IntRange(1, 4).Draw(t, "newLimit"))
				p.SetConfig(cfg)
				m.cfg = cfg
				got := p.ArchiveOverLimit()
				var want []Dead
				for o := m.start(); o < m.hi; o++ {
					if r := m.get(o); r.state == Available && r.count >= cfg.DeliveryLimit {
						want = append(want, Dead{Offset: o, Count: r.count, Reason: ReasonDeliveryLimit})
						m.recs[o] = &mrec{state: Archived, count: r.count}
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("archive over limit %d: got %v, want %v", cfg.DeliveryLimit, got, want)
				}
			},
			"": func(t *rapid.T) { check(t, p, m) },
		})
	})
}

// TestUpdateApply: an update record after a snapshot merges the way the
// share coordinator replays them, and survives its own encoding.
func TestUpdateApply(t *testing.T) {
	base := Snapshot{StateEpoch: 2, Start: 10, Batches: []StateBatch{
		{10, 12, Available, 1}, {13, 13, Acknowledged, 1}, {14, 15, Available, 2},
	}}
	upd := Snapshot{LeaderEpoch: 4, Start: -1, Batches: []StateBatch{{10, 11, Acknowledged, 1}, {14, 14, Archived, 2}}}
	dec, _, err := DecodeUpdate(EncodeUpdate(upd, 1))
	if err != nil || !reflect.DeepEqual(dec, upd) {
		t.Fatalf("update round trip: %v %+v", err, dec)
	}
	got := base.Apply(dec)
	want := Snapshot{StateEpoch: 2, LeaderEpoch: 4, Start: 12, Batches: []StateBatch{
		{12, 12, Available, 1}, {13, 13, Acknowledged, 1}, {14, 14, Archived, 2}, {15, 15, Available, 2},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("apply:\n got %+v\nwant %+v", got, want)
	}
}

// TestDecodeCorrupt: truncated records fail with ErrCorrupt, never panic.
func TestDecodeCorrupt(t *testing.T) {
	snap := EncodeSnapshot(Snapshot{Start: 5, Batches: []StateBatch{{5, 9, Acknowledged, 2}}}, 0)
	key := EncodeKey(Key{Type: KeyUpdate, Group: "orders", Partition: 1})
	for i := range len(snap) {
		if _, _, err := DecodeSnapshot(snap[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("snapshot cut at %d: %v", i, err)
		}
	}
	for i := range len(key) {
		if _, err := DecodeKey(key[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("key cut at %d: %v", i, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(EncodeSnapshot(Snapshot{Start: 5, Batches: []StateBatch{{5, 9, Acknowledged, 2}}}, 3))
	f.Add(EncodeUpdate(Snapshot{Start: -1}, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, e, err := DecodeSnapshot(b); err == nil {
			if again, e2, err := DecodeSnapshot(EncodeSnapshot(s, e)); err != nil || e2 != e || fmt.Sprint(again) != fmt.Sprint(s) {
				t.Fatalf("re-encode: %v", err)
			}
		}
		_, _, _ = DecodeUpdate(b)
		_, _ = DecodeKey(b)
	})
}
