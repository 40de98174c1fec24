package share

// StateBatch is a run of offsets with one state and delivery count, as
// __share_group_state stores them.
type StateBatch struct {
	First, Last Offset
	State       State // Available, Acknowledged or Archived: never Acquired
	Count       int16
}

// Snapshot is a share-partition's persisted state: what a restart, or a
// new leader, loads. Acquired offsets are saved as Available with their
// delivery count: a lock does not survive a restart, the delivery does.
type Snapshot struct {
	StateEpoch  int32
	LeaderEpoch int32
	Start       Offset
	Batches     []StateBatch
}

// Snapshot returns the partition's persisted form.
func (p *Partition) Snapshot() Snapshot {
	snap := Snapshot{StateEpoch: p.stateEpoch, Start: p.start}
	for i, s := range p.slots {
		st := s.state
		if st == Acquired {
			st = Available
		}
		o := p.start + Offset(i)
		if n := len(snap.Batches); n > 0 {
			if b := &snap.Batches[n-1]; b.Last == o-1 && b.State == st && b.Count == s.count {
				b.Last = o
				continue
			}
		}
		snap.Batches = append(snap.Batches, StateBatch{First: o, Last: o, State: st, Count: s.count})
	}
	return snap
}

// Restore returns a partition loaded from its persisted state. Offsets in
// the window no batch covers are Available, never delivered; batches below
// the start are ignored; an Acquired batch (which Strand never writes) is
// loaded Available.
func Restore(cfg Config, snap Snapshot) *Partition {
	p := NewPartition(cfg, snap.Start)
	p.stateEpoch = snap.StateEpoch
	for _, b := range snap.Batches {
		if b.Last < p.start || b.First > b.Last {
			continue
		}
		first := max(b.First, p.start)
		for p.End() <= b.Last {
			p.slots = append(p.slots, slot{})
		}
		st := b.State
		if st != Acknowledged && st != Archived {
			st = Available // Acquired (never written by Strand) or unknown
		}
		for o := first; o <= b.Last; o++ {
			p.slots[o-p.start] = slot{state: st, count: b.Count}
		}
	}
	p.advance()
	return p
}

// Apply merges an update (a ShareUpdate record written after the last
// snapshot) into a snapshot, as replaying __share_group_state does: a new
// start offset (-1: unchanged) drops the batches below it, and the
// update's batches overwrite the offsets they cover.
func (s Snapshot) Apply(u Snapshot) Snapshot {
	out := Snapshot{StateEpoch: s.StateEpoch, LeaderEpoch: u.LeaderEpoch, Start: s.Start}
	if u.Start >= 0 && u.Start > s.Start {
		out.Start = u.Start
	}
	p := Restore(Config{MaxRecordLocks: 1 << 30}, Snapshot{StateEpoch: s.StateEpoch, Start: out.Start, Batches: s.Batches})
	for _, b := range u.Batches {
		if b.Last < p.start {
			continue
		}
		first := max(b.First, p.start)
		for p.End() <= b.Last {
			p.slots = append(p.slots, slot{})
		}
		for o := first; o <= b.Last; o++ {
			p.slots[o-p.start] = slot{state: b.State, count: b.Count}
		}
	}
	p.advance()
	merged := p.Snapshot()
	out.Start, out.Batches = merged.Start, merged.Batches
	return out
}
