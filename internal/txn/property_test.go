package txn

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/strandmq/strand/internal/producer"
)

// machine drives a Coordinator with random requests, sweeps, append
// results (some failing), marker completions and reloads, in any
// interleaving. Appends are reported later and out of order across ids, so
// requests meet pending transitions.
type machine struct {
	w       *world
	now     int64
	appends []*Transit // prepared, not yet reported
	marks   []*Markers // markers being written
	last    map[string]State
}

var txnIDs = []string{"a", "b", "c"}

func (m *machine) id(t *rapid.T) string { return rapid.SampledFrom(txnIDs).Draw(t, "id") }

func (m *machine) tick(t *rapid.T) {
	m.now += int64(rapid.IntRange(0, 400).Draw(t, "dt"))
}

// pidEpoch is what a client sends: mostly the id's current pair, sometimes a
// stale or a future epoch, or the previous producer id.
func (m *machine) pidEpoch(t *rapid.T, id string) (producer.ID, producer.Epoch) {
	md, ok := m.w.c.Get(id)
	if !ok {
		return producer.ID(rapid.IntRange(1000, 1003).Draw(t, "pid")), producer.Epoch(rapid.IntRange(0, 3).Draw(t, "epoch"))
	}
	pid := md.ProducerID
	if rapid.IntRange(0, 9).Draw(t, "otherPid") == 0 {
		pid = md.PreviousProducerID
	}
	return pid, md.Epoch + producer.Epoch(rapid.IntRange(-1, 1).Draw(t, "dEpoch"))
}

func (m *machine) handle(out Output) {
	if out.Append != nil {
		m.appends = append(m.appends, out.Append)
	}
	if out.Markers != nil {
		m.marks = append(m.marks, out.Markers)
	}
}

func (m *machine) version(t *rapid.T) Version {
	return rapid.SampledFrom([]Version{TV0, TV2}).Draw(t, "client")
}

func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"init": func(t *rapid.T) {
			id := m.id(t)
			req := InitRequest{TransactionalID: id, TimeoutMs: int32(rapid.IntRange(0, 1500).Draw(t, "timeout")), ProducerID: producer.NoID, Epoch: NoEpoch}
			if rapid.Bool().Draw(t, "pair") {
				req.ProducerID, req.Epoch = m.pidEpoch(t, id)
			}
			m.handle(m.w.c.InitProducerID(req, m.now))
		},
		"add": func(t *rapid.T) {
			id := m.id(t)
			pid, epoch := m.pidEpoch(t, id)
			p := Partition{Topic: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "topic"), Partition: int32(rapid.IntRange(0, 2).Draw(t, "p"))}
			m.handle(m.w.c.AddPartitions(AddRequest{TransactionalID: id, ProducerID: pid, Epoch: epoch, Partitions: []Partition{p}, Client: m.version(t)}, m.now))
		},
		"addOffsets": func(t *rapid.T) {
			id := m.id(t)
			pid, epoch := m.pidEpoch(t, id)
			m.handle(m.w.c.AddOffsets(id, pid, epoch, "g", m.version(t), m.now))
		},
		"end": func(t *rapid.T) {
			id := m.id(t)
			pid, epoch := m.pidEpoch(t, id)
			m.handle(m.w.c.EndTxn(EndRequest{TransactionalID: id, ProducerID: pid, Epoch: epoch, Commit: rapid.Bool().Draw(t, "commit"), Client: m.version(t)}, m.now))
		},
		"timeouts": func(t *rapid.T) {
			m.tick(t)
			for _, out := range m.w.c.Timeouts(m.now) {
				m.handle(out)
			}
		},
		"expire": func(t *rapid.T) {
			m.now += int64(rapid.IntRange(0, 120_000).Draw(t, "dtExpire"))
			for _, out := range m.w.c.Expire(m.now) {
				m.handle(out)
			}
		},
		"appended": func(t *rapid.T) {
			if len(m.appends) == 0 {
				return // nothing pending
			}
			i := rapid.IntRange(0, len(m.appends)-1).Draw(t, "which")
			tr := m.appends[i]
			m.appends = append(m.appends[:i], m.appends[i+1:]...)
			result := CodeNone
			if rapid.IntRange(0, 4).Draw(t, "fail") == 0 {
				result = CodeCoordinatorNotAvailable
			}
			stale := !m.w.c.Pending(tr.Target.TransactionalID)
			if result == CodeNone && !stale {
				m.record(t, tr)
			}
			m.handle(m.w.c.Appended(tr, result, m.now))
		},
		"markersWritten": func(t *rapid.T) {
			if len(m.marks) == 0 {
				return // no markers
			}
			i := rapid.IntRange(0, len(m.marks)-1).Draw(t, "whichMarkers")
			mk := m.marks[i]
			m.marks = append(m.marks[:i], m.marks[i+1:]...)
			m.appends = append(m.appends, mk.Complete)
		},
		"resume": func(t *rapid.T) {
			if mk := m.w.c.Resume(m.id(t), m.now); mk != nil {
				m.marks = append(m.marks, mk)
			}
		},
		"highEpoch": func(t *rapid.T) {
			// move a resting id close to exhaustion, as if many txns ran
			id := m.id(t)
			md, ok := m.w.c.Get(id)
			if !ok || m.w.c.Pending(id) || md.State == Ongoing || md.State.prepared() || m.w.c.txns[id].failedFence {
				return // not resting
			}
			md.Epoch = maxEpoch - producer.Epoch(rapid.IntRange(1, 3).Draw(t, "below"))
			m.w.seed(md)
		},
		"reload": func(t *rapid.T) {
			ms, err := m.w.c.Load(m.w.log, 1, m.now)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			// outstanding work of the old coordinator is answered NOT_COORDINATOR
			for _, tr := range m.appends {
				if out := m.w.c.Appended(tr, CodeNone, m.now); out.Append != nil || out.Markers != nil {
					t.Fatalf("stale transit produced work: %+v", out)
				}
			}
			m.appends, m.marks = nil, ms
		},
		"": m.check,
	}
}

// record appends tr to the log, checking it is a legal transition.
func (m *machine) record(t *rapid.T, tr *Transit) {
	id := tr.Target.TransactionalID
	prev, known := m.last[id]
	if tr.Value == nil {
		if !known || !prev.expirable() {
			t.Fatalf("tombstone for %q from %v (known %v)", id, prev, known)
		}
		delete(m.last, id)
	} else {
		if known && !CanTransition(prev, tr.Target.State) {
			t.Fatalf("%q logged %s → %s", id, prev, tr.Target.State)
		}
		if !known && tr.Target.State != Empty {
			t.Fatalf("%q first logged as %s", id, tr.Target.State)
		}
		m.last[id] = tr.Target.State
	}
	m.w.log = append(m.w.log, tr.Record())
}

func (m *machine) check(t *rapid.T) {
	for _, md := range m.w.c.All() {
		switch {
		case md.State == Dead || md.State == PrepareEpochFence || !md.State.Valid():
			t.Fatalf("%v rests in %s", md, md.State)
		case md.Epoch < 0 && !m.w.c.Pending(md.TransactionalID):
			t.Fatalf("%v: negative epoch", md)
		case md.State == Empty && (len(md.Partitions) != 0 || md.StartMs != -1):
			t.Fatalf("%v: Empty with a transaction", md)
		case md.State == Ongoing && len(md.Partitions) == 0:
			t.Fatalf("%v: Ongoing with no partition", md)
		case (md.State == CompleteCommit || md.State == CompleteAbort) && len(md.Partitions) != 0:
			t.Fatalf("%v: complete with partitions", md)
		}
	}
	checkReplay(t, m.w)
}

// TestRandomHistories: random request sequences never reach an invalid
// state, every logged record is a legal transition, and replaying the log
// gives the live state (Kafka's load).
func TestRandomHistories(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		v := rapid.SampledFrom([]Version{TV0, TV1, TV2}).Draw(rt, "cluster")
		m := &machine{w: newWorld(t, v), now: 1, last: map[string]State{}}
		m.w.t = nil // failures go through rt
		// rapid's Repeat runs 30 steps by default; a commit needs about 8
		// (init, append, add, append, end, append, markers, append), so
		// histories are drawn longer here.
		actions := m.actions()
		check := actions[""]
		delete(actions, "")
		names := slices.Sorted(maps.Keys(actions))
		for range rapid.IntRange(50, 400).Draw(rt, "steps") {
			actions[rapid.SampledFrom(names).Draw(rt, "action")](rt)
			check(rt)
		}
	})
}
